"""The tests' `snakemake` calls (tests/snakemake_cli.py) answer as `python -m snakemake` does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import snakemake_cli

pytestmark = pytest.mark.workflow

# A workflow that says, when it is parsed, the environment variable and the working directory it was run with.
SNAKEFILE = """\
import os

print("seen:", os.environ.get("ACCEL_CHOICE_CLI_TEST"), os.getcwd())


rule all:
    output:
        "made.txt",
    shell:
        "echo made > {output}"
"""


def _process(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(snakemake_cli.command(argv), capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with SNAKEFILE, made the working directory, and an environment variable set, both after the
    server has started: a call must take them from its caller, not from the server."""
    import snakemake

    started = snakemake_cli.run(["--version"])
    assert (started.returncode, started.stdout.strip()) == (0, snakemake.__version__)
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ACCEL_CHOICE_CLI_TEST", "from-the-caller")
    return tmp_path


def test_a_call_sees_the_callers_directory_and_environment_and_runs_jobs(project: Path) -> None:
    dry = snakemake_cli.run(["-n", "--cores", "1"])
    assert dry.returncode == 0, dry.stderr
    assert f"seen: from-the-caller {project}" in dry.stdout
    assert dry.args == [sys.executable, "-m", "snakemake", "-n", "--cores", "1"]
    assert not (project / "made.txt").exists()
    run = snakemake_cli.run(["--cores", "1"])
    assert run.returncode == 0, run.stderr
    assert (project / "made.txt").read_text() == "made\n"


def test_a_failing_call_exits_and_says_what_the_snakemake_process_says(project: Path) -> None:
    argv = ["-n", "--cores", "1", "--configfile", str(project / "missing.yaml")]
    forked, process = snakemake_cli.run(argv), _process(argv)
    assert forked.returncode == process.returncode == 1
    assert (forked.stdout, forked.stderr) == (process.stdout, process.stderr)
    assert "missing.yaml" in forked.stderr + forked.stdout


def test_a_call_past_its_timeout_is_killed_and_the_next_call_runs(project: Path) -> None:
    (project / "Snakefile").write_text("import time\ntime.sleep(30)\n" + SNAKEFILE)
    with pytest.raises(subprocess.TimeoutExpired):
        snakemake_cli.run(["-n", "--cores", "1"], timeout=2)
    (project / "Snakefile").write_text(SNAKEFILE)
    assert snakemake_cli.run(["-n", "--cores", "1"]).returncode == 0
