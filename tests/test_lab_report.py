"""Snakemake's HTML report made inside the run (io/lab_report.py, rule lab_report): the command it runs,
and a failed report that leaves the target as it was. The whole job runs in tests/test_workflow.py
(the lab-report profile, then the manifest and Chromium)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from accel_choice.io import lab_report


def test_the_report_is_asked_of_this_pythons_snakemake_without_the_lock_for_the_given_files(tmp_path):
    line = lab_report.command(Path("/w/Snakefile"), Path("/w"), Path("/t/config.yaml"), Path("/t/r.html"), ["a", "b"])
    assert line[:3] == [sys.executable, "-m", "snakemake"]
    assert line[line.index("--snakefile") + 1] == "/w/Snakefile" and line[line.index("--directory") + 1] == "/w"
    assert line[line.index("--configfile") + 1] == "/t/config.yaml" and "--nolock" in line
    assert line[line.index("--report") + 1] == "/t/r.html" and line[-2:] == ["a", "b"]


def test_a_report_that_fails_names_why_and_leaves_the_target_as_it_was(tmp_path):
    target = tmp_path / "snakemake-report.html"
    target.write_text("an earlier report\n")
    with pytest.raises(RuntimeError, match=r"snakemake --report failed \(exit 1\):[\s\S]*not found"):
        lab_report.make_report(tmp_path / "no-such-Snakefile", tmp_path, {"seed": 1}, ["x"], target)
    assert target.read_text() == "an earlier report\n"
    assert not list(tmp_path.glob(".snakemake-report.html.*"))  # no partial file beside it (io.atomic's)
