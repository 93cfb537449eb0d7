"""The lab report as an archive: the checksum manifest, what it vouches for, and its verification.

The manifest lists the files this configuration's jobs made, in the format of coreutils
`sha256sum` (`<hex>  <path>`, paths relative to the results folder), so a reader holding only
the archive checks it with `sha256sum --check MANIFEST.sha256`. Whatever else the folder holds
(an earlier configuration's records, a link someone added) is not vouched for: provenance.json
lists it, with hashes. `verify` gives sha256sum's verdict and more: it never follows a symbolic
link, refuses repeated or malformed lines, and names every entry added since. `parse_manifest`
also reads what `sha256sum -b` and `find . -exec sha256sum` write (`<hex> *./<path>`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from accel_choice.records import UserInputError
from accel_choice.io import atomic, paths
from accel_choice.io.provenance import provenance
from accel_choice.io.report_check import report_problems

# Snakemake's HTML report, made from the listed files once the run has finished.
SNAKEMAKE_REPORTS = (paths.SNAKEMAKE_REPORT_HTML, paths.SNAKEMAKE_REPORT_ZIP)
# Written after the manifest, so never listed in it: the archive job's own log, and the reports (unless the
# run made the HTML report itself: rule lab_report, config lab_report).
AFTER_THE_MANIFEST = (paths.ARCHIVE_LOG, *SNAKEMAKE_REPORTS)
# ---------------------------------------------------------------- what is in the folder


@dataclass(frozen=True)
class Entry:
    """Something in the results folder: a regular file, a symbolic link (never followed) or another kind."""

    path: str  # relative to the folder, '/'-separated
    kind: str  # "file", "symlink" or "other" (a FIFO, a socket, a device)


def walk(results_dir: str | os.PathLike[str]) -> list[Entry]:
    """List every entry under `results_dir`, sorted, without following a symbolic link.

    Every entry under `results_dir`, sorted, without following a symbolic link anywhere below it.

    Directories are not entries (their contents are); a symbolic link to a directory is one entry,
    and nothing behind it is read. The folder itself may be a symbolic link (results kept elsewhere).
    """
    root = Path(results_dir)
    entries = []

    def fail(error: OSError) -> None:
        raise error

    for folder, directories, files in os.walk(root, followlinks=False, onerror=fail):
        for name in [*directories, *files]:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue  # walked into
            kind = "file" if stat.S_ISREG(mode) else "symlink" if stat.S_ISLNK(mode) else "other"
            entries.append(Entry(path.relative_to(root).as_posix(), kind))
    return sorted(entries, key=lambda entry: entry.path)


@dataclass(frozen=True)
class Inventory:
    """The folder sorted into what the manifest vouches for and what it does not."""

    made: tuple[str, ...]  # regular files this configuration's jobs made: the manifest lists these
    foreign: tuple[Entry, ...]  # everything else: an earlier configuration's files, links, leftovers
    late: tuple[str, ...]  # files written after the manifest (AFTER_THE_MANIFEST)


def inventory(results_dir: str | os.PathLike[str], made: Iterable[str]) -> Inventory:
    """Sort the folder's entries by whether this configuration made them.

    `made` names files and directories (relative to the folder) that the jobs of this
    configuration write; a file inside a made directory (a TensorBoard folder) counts as made.
    Only regular files can be made: a symbolic link is never vouched for, whatever its name.
    """
    made_names = {PurePosixPath(name).as_posix() for name in made}
    vouched, foreign, late = [], [], []
    for entry in walk(results_dir):
        if entry.path == paths.MANIFEST:
            continue
        if entry.kind == "file" and (
            entry.path in made_names or any(str(parent) in made_names for parent in PurePosixPath(entry.path).parents)
        ):
            vouched.append(entry.path)  # the HTML report too, where a job of the run made it (config lab_report)
        elif entry.kind == "file" and entry.path in AFTER_THE_MANIFEST:
            late.append(entry.path)
        else:
            foreign.append(entry)
    return Inventory(tuple(vouched), tuple(foreign), tuple(late))


def describe(results_dir: str | os.PathLike[str], entry: Entry) -> dict[str, Any]:
    """Describe what provenance.json records of an entry this configuration did not make."""
    path = Path(results_dir) / entry.path
    if entry.kind == "file":
        return {"path": entry.path, "kind": "file", "bytes": path.lstat().st_size, "sha256": atomic.sha256_file(path)}
    if entry.kind == "symlink":
        return {"path": entry.path, "kind": "symlink", "target": os.readlink(path)}
    return {"path": entry.path, "kind": "other"}


def files_record(results_dir: str | os.PathLike[str], found: Inventory) -> dict[str, Any]:
    """Build the `files` part of provenance.json: how many files the manifest lists, and what it leaves out."""
    return {
        "made_by_this_configuration": len(found.made),
        "not_made_by_this_configuration": [describe(results_dir, entry) for entry in found.foreign],
        "written_after_the_manifest": [name for name in AFTER_THE_MANIFEST if name not in found.made],
    }


def seal(
    results_dir: str | os.PathLike[str], made: Iterable[str], workflow: dict[str, Any]
) -> tuple[dict[str, Any], Inventory]:
    """Write provenance.json, then MANIFEST.sha256 over the files this configuration made.

    provenance.json lists, with their hashes, the entries the manifest leaves out (a removed
    batch size's records, a link someone added), so the manifest vouches for this run's files
    alone and the reader still learns what else the folder holds.
    """
    root = Path(results_dir)
    made = [*made, paths.PROVENANCE]
    record = provenance(root, workflow, made)
    found = inventory(root, made)
    record["files"] = files_record(root, found)
    atomic.write_json(root / paths.PROVENANCE, record)
    listed = sorted({*found.made, paths.PROVENANCE})
    atomic.write_text(root / paths.MANIFEST, manifest_text(root, listed))
    return record, Inventory(tuple(listed), found.foreign, found.late)


def manifest_text(results_dir: str | os.PathLike[str], files: Iterable[str]) -> str:
    root = Path(results_dir)
    for name in files:
        if any(character in name for character in "\n\r\\"):  # sha256sum would escape these
            raise ValueError(f"file name {name!r} cannot be written in sha256sum format")
    return "".join(f"{atomic.sha256_file(root / name)}  {name}\n" for name in files)


def remove_stale_reports(results_dir: str | os.PathLike[str], made: Iterable[str] = ()) -> list[str]:
    """Delete Snakemake reports of an earlier run: this run changed the files they embed.

    They are not in the manifest, so `sha256sum --check` could not show they are out of date. A report
    among `made` is this run's own (rule lab_report, config lab_report), listed like any other file: kept.
    """
    removed, kept = [], set(made)
    for name in SNAKEMAKE_REPORTS:
        path = Path(results_dir) / name
        if name not in kept and path.is_file():
            path.unlink()
            removed.append(name)
    return removed


# ---------------------------------------------------------------- checking a folder against its manifest


# sha256sum's line: the digest, a space, then a space (text mode) or '*' (binary mode), the path.
_MANIFEST_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *](.+)")


class ManifestError(UserInputError):
    """The manifest cannot be read, or a line of it is not a sha256sum line or repeats a path."""


def parse_manifest(text: str) -> tuple[dict[str, str], list[tuple[int, str]]]:
    """Path → lower-case digest of every sha256sum line, and (line number, problem) for the lines that are not.

    Lines are split on newlines only, not on every line break `str.splitlines` knows (a file
    name may hold a form feed or U+2028); a carriage return ending a line is dropped, as
    sha256sum does; blank lines are skipped. A path is normalised (`./a//b` → `a/b`); an
    absolute one or one with `..` is a problem: checking it would hash a file outside the folder.
    A path listed twice is a problem too, whatever the digests: sha256sum would check both lines,
    a reader of the manifest cannot tell which is meant.
    """
    listed: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        match = _MANIFEST_LINE.fullmatch(line)
        name = match.group(2) if match else ""
        if not match or name.startswith("/") or ".." in PurePosixPath(name).parts:
            problems.append((number, f"not a sha256sum line of a path inside the folder: {line!r}"))
            continue
        name = PurePosixPath(name).as_posix()
        if name in listed:
            problems.append((number, f"lists {name} again (first on line {first_line[name]})"))
            continue
        listed[name], first_line[name] = match.group(1).lower(), number
    if not listed and not problems:
        problems.append((1, "no sha256sum line at all"))
    return listed, problems


def read_manifest(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read the entries of a manifest file.

    The entries of a manifest file; ManifestError naming the first line that is not a sha256sum
    line or repeats a path, or saying why the file cannot be read."""
    try:
        text = Path(path).read_bytes().decode("utf-8")  # no newline translation: parse_manifest splits on '\n'
    except (OSError, UnicodeDecodeError) as error:
        raise ManifestError(f"{path}: cannot be read ({error})") from error
    listed, problems = parse_manifest(text)
    if problems:
        number, problem = problems[0]
        more = f" (and {len(problems) - 1} more line(s))" if len(problems) > 1 else ""
        raise ManifestError(f"{path}, line {number}: {problem}{more}")
    return listed


def through_symlink(results_dir: str | os.PathLike[str], name: str) -> str | None:
    """Return the first part of `name` (itself included) that is a symbolic link, or None."""
    path = Path(results_dir)
    for part in PurePosixPath(name).parts:
        path = path / part
        try:
            if stat.S_ISLNK(path.lstat().st_mode):
                return path.relative_to(results_dir).as_posix()
        except FileNotFoundError:
            return None
    return None


def _regular_file_sha256(path: Path) -> str | None:
    """The digest of a regular file; None for anything else or what cannot be read (a FIFO would block)."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        return atomic.sha256_file(path)
    except OSError:
        return None


@dataclass(frozen=True)
class Verification:
    """A results folder against its MANIFEST.sha256 and the leftovers provenance.json lists."""

    listed: int
    changed: tuple[str, ...] = ()  # listed, and its bytes differ (or it cannot be read)
    missing: tuple[str, ...] = ()  # listed, and no longer a regular file there
    symlinked: tuple[str, ...] = ()  # listed, and it is or passes through a symbolic link: never followed
    added: tuple[str, ...] = ()  # not listed anywhere: a file, dot-file, link or other entry added since
    foreign: int = 0  # entries provenance.json lists as not made by this configuration
    foreign_changed: tuple[str, ...] = ()  # one of those, changed, replaced or gone since
    # Present but written after the manifest (AFTER_THE_MANIFEST: the archive's log, Snakemake's .zip report):
    # nothing vouches for their bytes, so a reader is told they were not checked.
    unchecked: tuple[str, ...] = ()
    # Snakemake's HTML report, written after the manifest: vouched for when every result it embeds is
    # byte-identical to the listed file (io.report_check), with how many it embeds; else what does not match.
    report_vouched: tuple[tuple[str, int], ...] = ()
    report_mismatch: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        return not (
            self.changed or self.missing or self.symlinked or self.added or self.foreign_changed or self.report_mismatch
        )

    def problems(self) -> list[tuple[str, str]]:
        """(what, path) for every difference, in a fixed order."""
        kinds = (
            ("changed", self.changed),
            ("missing", self.missing),
            ("symbolic link (not followed)", self.symlinked),
            ("added", self.added),
            ("changed or gone, not made by this configuration", self.foreign_changed),
            ("HTML report not of this run", self.report_mismatch),
        )
        return [(what, name) for what, names in kinds for name in names]


def _foreign_listed(results_dir: Path, listed: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Entries provenance.json lists as not made by this configuration, when provenance.json is
    itself listed and unchanged (otherwise its list is not trusted and such entries count as added)."""
    path = results_dir / paths.PROVENANCE
    if paths.PROVENANCE not in listed or through_symlink(results_dir, paths.PROVENANCE):
        return {}
    if _regular_file_sha256(path) != listed[paths.PROVENANCE]:
        return {}
    try:
        entries = atomic.read_json(path).get("files", {}).get("not_made_by_this_configuration", [])
    except (ValueError, OSError, AttributeError):
        return {}
    return {entry["path"]: entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("path"), str)}


def _foreign_unchanged(results_dir: Path, entry: Entry, recorded: dict[str, Any]) -> bool:
    if entry.kind != recorded.get("kind"):
        return False
    if entry.kind == "file":
        return _regular_file_sha256(results_dir / entry.path) == recorded.get("sha256")
    if entry.kind == "symlink":
        return os.readlink(results_dir / entry.path) == recorded.get("target")
    return True


def verify(results_dir: str | os.PathLike[str]) -> Verification:
    """Check every listed file and find every entry added since.

    Check every listed file and find every entry added since: the verdict `sha256sum --check`
    gives and more. A symbolic link is never followed: a listed path through one is refused, and a
    link anywhere in the folder that nothing lists counts as added. ManifestError when the manifest
    is missing, unreadable, malformed or repeats a path.
    """
    root = Path(results_dir)
    listed = read_manifest(root / paths.MANIFEST)
    changed, missing, symlinked = [], [], []
    for name, digest in listed.items():
        if through_symlink(root, name):
            symlinked.append(name)
            continue
        path = root / name
        if not (path.exists() and stat.S_ISREG(path.lstat().st_mode)):
            missing.append(name)
        elif _regular_file_sha256(path) != digest:
            changed.append(name)
    foreign = _foreign_listed(root, listed)
    added, foreign_changed, unchecked, seen = [], [], [], set()
    vouched, mismatch = [], []
    for entry in walk(root):
        if entry.path == paths.MANIFEST or entry.path in listed:
            continue  # a listed path that became a link or a FIFO is reported above
        if entry.kind == "file" and entry.path == paths.SNAKEMAKE_REPORT_HTML:
            matched, problems = report_problems(root / entry.path, listed)
            if problems:
                mismatch.extend(problems)
            else:
                vouched.append((entry.path, matched))
            continue
        if entry.kind == "file" and entry.path in AFTER_THE_MANIFEST:
            unchecked.append(entry.path)
            continue
        if entry.path in foreign:
            seen.add(entry.path)
            if not _foreign_unchanged(root, entry, foreign[entry.path]):
                foreign_changed.append(entry.path)
            continue
        added.append(entry.path if entry.kind == "file" else f"{entry.path} ({_KIND_WORDS[entry.kind]})")
    foreign_changed += sorted(set(foreign) - seen)
    return Verification(
        len(listed),
        tuple(sorted(changed)),
        tuple(sorted(missing)),
        tuple(sorted(symlinked)),
        tuple(added),
        len(foreign),
        tuple(sorted(foreign_changed)),
        tuple(sorted(unchecked)),
        tuple(vouched),
        tuple(mismatch),
    )


_KIND_WORDS = {"symlink": "symbolic link", "other": "not a regular file"}
