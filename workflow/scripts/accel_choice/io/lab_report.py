"""Snakemake's HTML report made inside the run (rule lab_report, config lab_report), so that the manifest
lists it like every other file: `snakemake --report` on this workflow, its working directory and the run's
own config, for the files of every other job. It reads what the run wrote and runs nothing (`--nolock`: the
run that started this job holds the lock); the report is written whole into place or not at all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from accel_choice.io import atomic, paths


def command(snakefile: Path, workdir: Path, configfile: Path, html: Path, targets: Sequence[str]) -> list[str]:
    """Build the `snakemake --report` line: this Python's Snakemake, one core, no lock, the files as targets."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(snakefile),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile),
        "--cores",
        "1",
        "--nolock",
        "--report",
        str(html),
        *targets,
    ]


def make_report(
    snakefile: Path, workdir: Path, config: dict[str, Any], targets: Sequence[str], html: str | os.PathLike[str]
) -> str:
    """Write Snakemake's report of `targets` to `html`.

    Write Snakemake's report of `targets` to `html`; what Snakemake printed. RuntimeError, naming its last
    lines, when it fails (then `html` is left as it was)."""
    with tempfile.TemporaryDirectory(prefix="accel-choice-report.") as folder:
        configfile = Path(folder) / "run.yaml"  # a temporary file, not a results/ one
        # The run's config as its jobs saw it (checked and completed): the report's jobs are the run's.
        configfile.write_text(yaml.safe_dump(json.loads(json.dumps(config)), sort_keys=False))
        made = Path(folder) / paths.SNAKEMAKE_REPORT_HTML  # --report takes a name ending in .html
        done = subprocess.run(
            command(snakefile, workdir, configfile, made, targets), capture_output=True, text=True, cwd=workdir
        )
        said = done.stdout + done.stderr
        if done.returncode != 0 or not made.is_file():
            raise RuntimeError(f"snakemake --report failed (exit {done.returncode}):\n{said[-3000:]}")
        with atomic.atomic_path(html) as partial:
            shutil.copyfile(made, partial)
    return said
