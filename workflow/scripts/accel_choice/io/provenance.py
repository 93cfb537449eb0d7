"""Provenance of a lab report: the command that made it, and the commits and command lines in its records.

The Snakefile stores the command the user typed in the environment (`invocation_record`); every
job's environment record and provenance.json carry it, so a results folder says which command
and which workflow commit made each record, and whether they were mixed.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import socket
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from accel_choice.io import atomic, paths

# Set by the Snakefile in the snakemake process that the user started; jobs inherit it.
INVOCATION_VARIABLE = "ACCEL_CHOICE_INVOCATION"


def invocation_record(argv: list[str], working_directory: str, snakemake_version: str) -> str:
    """Return what the Snakefile stores in the environment: the command exactly as it was typed."""
    return json.dumps(
        {
            "command_line": shlex.join(argv),
            "argv": argv,
            "working_directory": working_directory,
            "snakemake_version": snakemake_version,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
        }
    )


def current_invocation() -> dict[str, Any]:
    """Return the invocation this job belongs to, or an explicit 'unknown' when run outside the workflow."""
    text = os.environ.get(INVOCATION_VARIABLE)
    if not text:
        return {"command_line": None, "note": f"{INVOCATION_VARIABLE} not set: not started through the Snakefile"}
    return json.loads(text)


def record_commits(files: Iterable[str | os.PathLike[str]]) -> dict[str, list[str]]:
    """Workflow commits embedded in the JSON records, each with the records that carry it.

    Results made by two versions of the workflow are a mixed archive; this makes that visible.
    """
    return record_origins(files)["commits"]


def record_command_lines(files: Iterable[str | os.PathLike[str]]) -> dict[str, list[str]]:
    """Return the snakemake command lines that measured the records, each with the records it made."""
    return record_origins(files)["command_lines"]


def record_origins(files: Iterable[str | os.PathLike[str]]) -> dict[str, dict[str, list[str]]]:
    """Commits, command lines and library folders embedded in the JSON records, each file read once."""
    labels: dict[str, Callable[[dict[str, Any]], str]] = {
        "commits": lambda w: f"{w.get('commit') or 'unknown'}{' (dirty)' if w.get('dirty') else ''}",
        "command_lines": lambda w: w.get("command_line") or "not recorded",
        "library_folders": lambda w: (w.get("library") or {}).get("folder") or "not recorded",
    }
    seen: dict[str, dict[str, list[str]]] = {kind: {} for kind in labels}
    for path in files:
        try:
            record = atomic.read_json(path)
        except (ValueError, OSError):
            continue
        entries = list(_workflow_entries(record))
        for kind, label in labels.items():
            for name in dict.fromkeys(label(w) for w in entries):  # once per record, not per row
                seen[kind].setdefault(name, []).append(str(path))
    return seen


def _workflow_entries(record: Any) -> Iterable[dict[str, Any]]:
    if isinstance(record, dict):
        workflow = record.get("workflow")
        if isinstance(workflow, dict) and "commit" in workflow:
            yield workflow
        for value in record.values():
            yield from _workflow_entries(value)
    elif isinstance(record, list):
        for value in record:
            yield from _workflow_entries(value)


def provenance(results_dir: str | os.PathLike[str], workflow: dict[str, Any], made: Iterable[str]) -> dict[str, Any]:
    """Build the provenance record.

    The invocation, the workflow commit, and the commits and command lines found in the records.

    `made`: the files (relative to `results_dir`) this configuration made; only their JSON records
    are read, so records an earlier configuration left in the folder do not count.
    """
    root = Path(results_dir)
    names = sorted(made)
    # An earlier run's provenance.json is no record: it carries that run's commit, not a measurement's.
    origins = record_origins(
        root / name for name in names if name.endswith(".json") and name != paths.PROVENANCE and (root / name).is_file()
    )
    commits = origins["commits"]
    invocation = current_invocation()
    return {
        "workflow": workflow,
        "snakemake_version": invocation.get("snakemake_version"),
        "command_line": invocation.get("command_line"),
        "invocation": invocation,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "record_commits": {label: len(files) for label, files in commits.items()},
        "mixed_commits": len(commits) > 1,
        "record_command_lines": {line: len(files) for line, files in origins["command_lines"].items()},
        # The library folders the jobs imported (io/library.py): two mean two checkouts wrote this folder.
        "record_library_folders": {folder: len(files) for folder, files in origins["library_folders"].items()},
        "config_snapshot": paths.CONFIG,
    }
