"""Atomic file writes: a reader never sees a half-written result."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from accel_choice import records
from accel_choice.io import failures
from accel_choice.records import ledger


class DiskFull(OSError):
    """A write that found no space left: it names the file (`filename`), and its folder's free bytes after
    the partial file was removed (`free`)."""

    def __init__(self, target: Path, free: int | None) -> None:
        super().__init__(
            errno.ENOSPC,
            f"No space left on device: {failures.size_words(free)} free in {target.parent} once the partial file "
            "was removed",
            str(target),
        )
        self.free = free


@contextlib.contextmanager
def atomic_path(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `target`; rename it onto `target` on success.

    The temporary file lives in the same directory so that the final `os.replace`
    is a rename on one file system, which POSIX makes atomic. On any exception the
    temporary file is removed and `target` is left as it was; a full disk raises DiskFull, naming `target`.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    # mkstemp creates 0600; results are meant to be shared and archived like any other file.
    os.chmod(tmp, 0o666 & ~_current_umask())
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as error:
        if not failures.no_space(error) or isinstance(error, DiskFull):
            raise
        tmp.unlink(missing_ok=True)
        raise DiskFull(target, failures.free_space(target.parent)[1]) from error
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def staged_folder(folder: str | os.PathLike[str], names: Sequence[str]) -> Iterator[Path]:
    """Yield an empty temporary folder beside `folder`; on success move the files `names` from it into `folder`.

    All or nothing: when the block raises or leaves one of `names` unwritten, `folder` is left as it was (it is
    created only when the files move). The temporary folder shares the parent, so each move is a rename on one
    file system; should one fail part-way, the files already moved are put back. Files in `folder` other than
    `names` are never touched, and a name there that is not a plain file (a folder, a symlink) is refused
    rather than replaced. The temporary folder is removed in every case.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        yield staging
        unwritten = [name for name in names if not (staging / name).is_file()]
        if unwritten:
            raise FileNotFoundError(f"{staging}: {', '.join(unwritten)} not written; nothing moved into {folder}")
        _move_set(staging, folder, names)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _move_set(staging: Path, folder: Path, names: Sequence[str]) -> None:
    for name in names:
        target = folder / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise FileExistsError(f"{target} exists and is not a plain file; not replaced")
    created = not folder.exists()
    folder.mkdir(exist_ok=True)
    earlier = Path(tempfile.mkdtemp(prefix=".earlier.", dir=staging))  # the files replaced, until all are in
    moved: list[str] = []
    try:
        for name in names:
            if (folder / name).exists():
                os.replace(folder / name, earlier / name)
            moved.append(name)
            os.replace(staging / name, folder / name)
    except BaseException:
        for name in reversed(moved):
            if (earlier / name).exists():
                os.replace(earlier / name, folder / name)
            else:
                (folder / name).unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(target: str | os.PathLike[str], data: bytes) -> None:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)


def write_text(target: str | os.PathLike[str], text: str) -> None:
    write_bytes(target, text.encode("utf-8"))


def json_text(obj: Any) -> str:
    """`obj` as the JSON text every result file is written in; records inside it as their JSON objects."""
    return json.dumps(obj, indent=2, sort_keys=False, allow_nan=False, default=_record_json) + "\n"


def write_json(target: str | os.PathLike[str], obj: Any) -> None:
    """`obj` as JSON; records (accel_choice.records) inside it are written as their JSON objects."""
    write_text(target, json_text(obj))


# The log of the job running in this process (io.runtime.job sets it): it vouches for every record
# the job writes (records.ledger).
JOB_LOG: list[Path] = []


def write_record(target: str | os.PathLike[str], obj: Any) -> None:
    """Write a record file: its schema and version first, then its fields.

    A record file: its schema and version first, then its fields (records.read reads it back).

    Inside a job, the header also names the job's log, and the log gets the line that vouches for the
    bytes written (records.ledger)."""
    data = records.to_json(obj)
    if not (JOB_LOG and "schema" in data):
        write_json(target, data)
        return
    log_path = JOB_LOG[-1]
    header = {key: data.pop(key) for key in ("schema", "schema_version")}
    data = {**header, ledger.KEY: ledger.header(target, log_path), **data}
    text = json_text(data)
    write_text(target, text)
    logging.getLogger("accel_choice").info(ledger.line(target, log_path, text.encode("utf-8")))


def _record_json(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return records.to_json(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file, naming the file if it is empty or damaged."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err}); delete it and re-run the workflow") from err


def sha256_bytes(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()
