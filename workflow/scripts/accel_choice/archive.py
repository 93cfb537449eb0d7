"""The lab report as an archive: provenance record, checksum manifest, and its verification.

The manifest is in the format of coreutils `sha256sum` (`<hex>  <path>`, paths relative to
the results folder), so a reader holding only the archive checks it with
`sha256sum --check MANIFEST.sha256`; `verify_manifest` does the same in Python and also
names files the manifest does not list.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import atomic

MANIFEST_NAME = "MANIFEST.sha256"
# Written after the manifest, so never listed in it: the archive job's own log, and
# Snakemake's HTML report (made from the listed files once the run has finished).
AFTER_THE_MANIFEST = ("logs/archive.log", "snakemake-report.html", "snakemake-report.zip")
# Set by the Snakefile in the snakemake process that the user started; jobs inherit it.
INVOCATION_VARIABLE = "ACCEL_CHOICE_INVOCATION"


def invocation_record(argv: list[str], working_directory: str, snakemake_version: str) -> str:
    """What the Snakefile stores in the environment: the command exactly as it was typed."""
    return json.dumps({
        "command_line": shlex.join(argv),
        "argv": argv,
        "working_directory": working_directory,
        "snakemake_version": snakemake_version,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
    })


def current_invocation() -> dict[str, Any]:
    """The invocation this job belongs to, or an explicit 'unknown' when run outside the workflow."""
    text = os.environ.get(INVOCATION_VARIABLE)
    if not text:
        return {"command_line": None, "note": f"{INVOCATION_VARIABLE} not set: not started through the Snakefile"}
    return json.loads(text)


def record_commits(paths: Iterable[str | os.PathLike[str]]) -> dict[str, list[str]]:
    """Workflow commits embedded in the JSON records, each with the records that carry it.

    Results made by two versions of the workflow are a mixed archive; this makes that visible.
    """
    seen: dict[str, list[str]] = {}
    for path in paths:
        try:
            record = atomic.read_json(path)
        except (ValueError, OSError):
            continue
        for workflow in _workflow_entries(record):
            label = f"{workflow.get('commit') or 'unknown'}{' (dirty)' if workflow.get('dirty') else ''}"
            seen.setdefault(label, []).append(str(path))
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


def provenance(results_dir: str | os.PathLike[str], workflow: dict[str, Any]) -> dict[str, Any]:
    root = Path(results_dir)
    commits = record_commits(sorted(root.rglob("*.json")))
    invocation = current_invocation()
    return {
        "workflow": workflow,
        "snakemake_version": invocation.get("snakemake_version"),
        "command_line": invocation.get("command_line"),
        "invocation": invocation,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "record_commits": {label: len(paths) for label, paths in commits.items()},
        "mixed_commits": len(commits) > 1,
        "config_snapshot": "config.yaml",
    }


def archive_files(results_dir: str | os.PathLike[str], exclude: Iterable[str] = ()) -> list[str]:
    """Every regular file under `results_dir`, relative and sorted, minus the manifest and `exclude`.

    Hidden temporary files of an interrupted atomic write are left out: they are not results.
    """
    root = Path(results_dir)
    skip = {MANIFEST_NAME, *exclude}
    files = []
    for path in root.rglob("*"):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and relative not in skip and not path.name.startswith("."):
            files.append(relative)
    return sorted(files)


def manifest_text(results_dir: str | os.PathLike[str], files: Iterable[str]) -> str:
    root = Path(results_dir)
    for name in files:
        if "\n" in name or "\\" in name:
            raise ValueError(f"file name {name!r} cannot be written in sha256sum format")
    return "".join(f"{atomic.sha256_file(root / name)}  {name}\n" for name in files)


def write_manifest(results_dir: str | os.PathLike[str], exclude: Iterable[str] = ()) -> int:
    files = archive_files(results_dir, exclude)
    atomic.write_text(Path(results_dir) / MANIFEST_NAME, manifest_text(results_dir, files))
    return len(files)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, str]:
    entries = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        digest, separator, name = line.partition("  ")
        if not separator or len(digest) != 64:
            raise ValueError(f"{path}, line {number}: not a sha256sum line: {line!r}")
        entries[name] = digest
    return entries


def verify_manifest(results_dir: str | os.PathLike[str], ignore_unlisted: Iterable[str] = AFTER_THE_MANIFEST) -> dict[str, list[str]]:
    """Files that changed, went missing, or appeared since the manifest was written."""
    root = Path(results_dir)
    listed = read_manifest(root / MANIFEST_NAME)
    changed, missing = [], []
    for name, digest in listed.items():
        if not (root / name).is_file():
            missing.append(name)
        elif atomic.sha256_file(root / name) != digest:
            changed.append(name)
    unlisted = [name for name in archive_files(root, ignore_unlisted) if name not in listed]
    return {"changed": changed, "missing": missing, "unlisted": unlisted}
