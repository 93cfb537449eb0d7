"""The lab report as an archive: provenance record, checksum manifest, and its verification.

The manifest is in the format of coreutils `sha256sum` (`<hex>  <path>`, paths relative to
the results folder), so a reader holding only the archive checks it with
`sha256sum --check MANIFEST.sha256`; `verify_manifest` does the same in Python and also
names files the manifest does not list. `parse_manifest` also reads what `sha256sum -b` and
`find . -exec sha256sum` write (`<hex> *./<path>`), so another folder's manifest can be checked.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import socket
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
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
    return record_origins(paths)["commits"]


def record_command_lines(paths: Iterable[str | os.PathLike[str]]) -> dict[str, list[str]]:
    """The snakemake command lines that measured the records, each with the records it made."""
    return record_origins(paths)["command_lines"]


def record_origins(paths: Iterable[str | os.PathLike[str]]) -> dict[str, dict[str, list[str]]]:
    """Commits and command lines embedded in the JSON records, each file read once."""
    labels: dict[str, Callable[[dict[str, Any]], str]] = {
        "commits": lambda w: f"{w.get('commit') or 'unknown'}{' (dirty)' if w.get('dirty') else ''}",
        "command_lines": lambda w: w.get("command_line") or "not recorded",
    }
    seen: dict[str, dict[str, list[str]]] = {kind: {} for kind in labels}
    for path in paths:
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


def provenance(results_dir: str | os.PathLike[str], workflow: dict[str, Any]) -> dict[str, Any]:
    root = Path(results_dir)
    origins = record_origins(sorted(root.rglob("*.json")))
    commits = origins["commits"]
    invocation = current_invocation()
    return {
        "workflow": workflow,
        "snakemake_version": invocation.get("snakemake_version"),
        "command_line": invocation.get("command_line"),
        "invocation": invocation,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "record_commits": {label: len(paths) for label, paths in commits.items()},
        "mixed_commits": len(commits) > 1,
        "record_command_lines": {line: len(paths) for line, paths in origins["command_lines"].items()},
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
        if any(character in name for character in "\n\r\\"):  # sha256sum would escape these
            raise ValueError(f"file name {name!r} cannot be written in sha256sum format")
    return "".join(f"{atomic.sha256_file(root / name)}  {name}\n" for name in files)


def remove_stale_reports(results_dir: str | os.PathLike[str]) -> list[str]:
    """Delete Snakemake reports of an earlier run: this run changed the files they embed.

    They are not in the manifest, so `sha256sum --check` could not show they are out of date.
    """
    removed = []
    for name in AFTER_THE_MANIFEST:
        path = Path(results_dir) / name
        if name.startswith("snakemake-report") and path.is_file():
            path.unlink()
            removed.append(name)
    return removed


def write_manifest(results_dir: str | os.PathLike[str], exclude: Iterable[str] = ()) -> int:
    files = archive_files(results_dir, exclude)
    atomic.write_text(Path(results_dir) / MANIFEST_NAME, manifest_text(results_dir, files))
    return len(files)


# sha256sum's line: the digest, a space, then a space (text mode) or '*' (binary mode), the path.
_MANIFEST_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")


def parse_manifest(text: str) -> tuple[dict[str, str], list[int]]:
    """Path → lower-case digest of every sha256sum line, and the numbers of the lines that are not.

    Lines are split on newlines only, not on every line break `str.splitlines` knows (a file
    name may hold a form feed or U+2028); a carriage return ending a line is dropped, as
    sha256sum does; blank lines are skipped. A path is normalised (`./a//b` → `a/b`); an
    absolute one or one with `..` is malformed: checking it would hash a file outside the folder.
    """
    listed: dict[str, str] = {}
    malformed = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        match = _MANIFEST_LINE.fullmatch(line)
        name = match.group(2) if match else ""
        if not match or name.startswith("/") or ".." in PurePosixPath(name).parts:
            malformed.append(number)
            continue
        listed[PurePosixPath(name).as_posix()] = match.group(1).lower()
    return listed, malformed


def read_manifest(path: str | os.PathLike[str]) -> dict[str, str]:
    """The entries of a manifest file; ValueError naming the first line that is not a sha256sum line."""
    text = Path(path).read_bytes().decode("utf-8")  # no newline translation: parse_manifest splits on '\n'
    listed, malformed = parse_manifest(text)
    if malformed:
        number = malformed[0]
        raise ValueError(f"{path}, line {number}: not a sha256sum line: {text.split(chr(10))[number - 1]!r}")
    return listed


def check_files(results_dir: str | os.PathLike[str], listed: dict[str, str],
                ignore_unlisted: Iterable[str] = AFTER_THE_MANIFEST) -> dict[str, list[str]]:
    """Listed files that changed or went missing, and archived files `listed` does not name; each sorted.

    A listed file that cannot be read cannot be verified: it counts as changed.
    """
    root = Path(results_dir)
    changed, missing = [], []
    for name, digest in listed.items():
        if not (root / name).is_file():
            missing.append(name)
        elif _sha256_or_none(root / name) != digest:
            changed.append(name)
    unlisted = [name for name in archive_files(root, ignore_unlisted) if name not in listed]
    return {"changed": sorted(changed), "missing": sorted(missing), "unlisted": unlisted}


def _sha256_or_none(path: Path) -> str | None:
    try:
        return atomic.sha256_file(path)
    except OSError:
        return None


def verify_manifest(results_dir: str | os.PathLike[str], ignore_unlisted: Iterable[str] = AFTER_THE_MANIFEST) -> dict[str, list[str]]:
    """Files that changed, went missing, or appeared since the manifest was written."""
    return check_files(results_dir, read_manifest(Path(results_dir) / MANIFEST_NAME), ignore_unlisted)
