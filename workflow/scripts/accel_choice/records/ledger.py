"""What a job wrote, kept where a hand edit of the record does not reach: the job's own log.

When a job writes a record file (io.atomic.write_record inside io.runtime.job), it writes the
path of its log into the record's header (`log`, relative to the record's folder, so the pair
travels with a copied or archived results folder) and a line into that log:

    record written: ../timing/cpu/t1.rep0.json sha256 <the SHA-256 of the file's bytes>

Every reader (records.read) finds that line and compares the digest with the bytes it read: a
record changed after its job wrote it (a number edited by hand, a file copied over it) is
refused, naming the file and the log. Inside a job every record must carry the header; outside
one (tests, a record built by hand) a record without it is read as before.

What this protects against: accidental and casual edits — a value changed in an editor, a file
restored from another run, a record whose `log` key was deleted. Not against a determined forger
who edits the log as well, or recomputes the digest with this code: the manifest and the digest of
the manifest noted in a lab notebook (docs/lab-report.md) are the checks for an archive.

This module imports nothing from accel_choice: records/__init__.py uses it.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

KEY = "log"  # the header key naming the writing job's log
_LINE = re.compile(r"record written: (?P<name>.+) sha256 (?P<digest>[0-9a-f]{64})\s*$")


def line(record_path: str | os.PathLike[str], log_path: str | os.PathLike[str], data: bytes) -> str:
    """Return the log line that vouches for `data`, written to `record_path` by the job logging to `log_path`."""
    return f"record written: {_name(record_path, log_path)} sha256 {hashlib.sha256(data).hexdigest()}"


def _relative(path: str | os.PathLike[str], beside: str | os.PathLike[str]) -> str:
    """`path` relative to the folder of the file `beside`."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(Path(beside).parent))).as_posix()


def header(record_path: str | os.PathLike[str], log_path: str | os.PathLike[str]) -> str:
    """Return the `log` header of a record: its job's log relative to the record's folder."""
    return _relative(log_path, record_path)


def _name(record_path: str | os.PathLike[str], log_path: str | os.PathLike[str]) -> str:
    """How the log names a record: relative to the log's folder."""
    return _relative(record_path, log_path)


def problem(record_path: str | os.PathLike[str], data: bytes, log_header: str) -> str | None:
    """Why the log named by `log_header` does not vouch for `data` as read from `record_path`; None when it does."""
    log_path = Path(os.path.normpath(Path(record_path).parent / log_header))
    try:
        text = log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"its job's log {log_path} (the record's 'log') cannot be read, so nothing vouches for it"
    name, recorded = _name(record_path, log_path), None
    for found in map(_LINE.search, text.splitlines()):
        if found and found["name"] == name:
            recorded = found["digest"]  # the last line wins: a job may write a record twice
    if recorded is None:
        return f"its job's log {log_path} has no line for it, so nothing vouches for it"
    actual = hashlib.sha256(data).hexdigest()
    if actual != recorded:
        return (
            f"its bytes (sha256 {actual[:16]}…) are not what its job wrote (sha256 {recorded[:16]}… in {log_path}): "
            "it was changed after the job, by hand or by a copy"
        )
    return None
