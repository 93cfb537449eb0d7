"""Why a job failed, in one line: a full disk, no memory, the user's model, a measurement invariant, or else.

io.runtime.job prints this line instead of a traceback; the traceback goes to the job's log. Standard
library only: a job that failed for want of memory or disk must not need more of either to say why.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sysconfig
import traceback
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # the library
SCRIPTS = PACKAGE.parent  # the entry scripts beside it
_JOB = PACKAGE / "io" / "runtime.py"
# Where Python's own modules and installed packages live: never the user's code.
_INSTALLED = tuple(
    {
        Path(path).resolve()
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_path(key))
    }
)
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_ALLOCATION = re.compile(r"[Tt]ried to allocate ([\d.]+ ?[KMGT]?i?B|\d+ bytes)")
_FREE = re.compile(r"of which ([\d.]+ ?[KMGT]?i?B) is free")
_LONGEST = 400  # characters of an exception's message kept on the line; the log holds all of it


def describe(error: BaseException, *, near: str | os.PathLike[str] | None = None) -> str:
    """Say in one line why `error` stopped a job, from its type, its causes and its traceback.

    `near` is a path on the disk the job writes to (its log): the folder whose free space a full disk
    reports when the error names no file."""
    try:
        kind = _disk_full(error, near) or _out_of_memory(error) or _users_model(error) or _invariant(error)
    except Exception:  # a job's failure is described, never hidden by a second one
        kind = None
    return kind or f"{_name(error)}: {_message(error)}"


def no_space(error: BaseException) -> bool:
    """Tell whether `error` is a write that found the disk (or the user's quota) full."""
    return isinstance(error, OSError) and (
        error.errno in _NO_SPACE or "No space left on device" in str(error) or "Disk quota exceeded" in str(error)
    )


def free_space(path: str | os.PathLike[str]) -> tuple[Path, int | None]:
    """Find the nearest existing folder at or above `path`, and its free bytes (None where unreadable)."""
    folder = Path(path)
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        return folder, shutil.disk_usage(folder).free
    except OSError:
        return folder, None


def size_words(size: int | None) -> str:
    """Write a number of bytes as people read it: 512 bytes, 12.0 KiB, 3.4 GiB (None: an unknown amount)."""
    if size is None:
        return "an unknown amount"
    if size < 1024:
        return f"{size} bytes"
    scaled, unit = float(size), "bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        scaled /= 1024
        if scaled < 1024:
            break
    return f"{scaled:.1f} {unit}"


def shown(path: str | os.PathLike[str]) -> str:
    """Show `path` relative to the working directory where it lies below it (results/logs/x.log)."""
    try:
        return Path(path).resolve().relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _chain(error: BaseException) -> list[BaseException]:
    """List `error` and the exceptions it was raised from or while handling, outermost first."""
    seen: list[BaseException] = []
    while error is not None and all(error is not earlier for earlier in seen):
        seen.append(error)
        error = error.__cause__ or error.__context__
    return seen


def _disk_full(error: BaseException, near: str | os.PathLike[str] | None) -> str | None:
    full = next((e for e in _chain(error) if no_space(e)), None)
    if full is None:
        return None
    written = full.filename
    if written is not None:
        folder, free = free_space(Path(os.fsdecode(written)).parent)
        what = f"writing {shown(os.fsdecode(written))}"
    elif near is not None:
        folder, free = free_space(Path(near).parent)
        what = "writing a file the error does not name"
    else:
        return f"disk full: no space left on device ({_name(full)}); free some space and re-run"
    return f"disk full: no space left {what}; {shown(folder)} has {size_words(free)} free now; free some and re-run"


def _out_of_memory(error: BaseException) -> str | None:
    for cause in _chain(error):
        names = {kind.__name__ for kind in type(cause).__mro__}
        text = str(cause)
        if isinstance(cause, MemoryError):
            where = "the host"
        elif "OutOfMemoryError" in names or (
            isinstance(cause, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)
        ):
            where = "the host" if "CPUAllocator" in text else "the device"
        else:
            continue
        allocation = _ALLOCATION.search(text)
        free = _FREE.search(text)
        size = allocation.group(1) if allocation else None
        if size and size.endswith(" bytes"):
            size = size_words(int(size.split()[0]))
        line = f"out of memory on {where} ({_name(cause)})"
        line += f" while allocating {size}" if size else (f": {_message(cause)}" if text else "")
        line += f", {free.group(1)} free" if free else ""
        return line + "; smaller batch sizes or data, or a machine with more memory"
    return None


def _users_model(error: BaseException) -> str | None:
    """Name the user's code where it raised: the innermost frame below the library's first that is neither
    ours, Python's nor an installed package's (the entry script, and whoever runs the job, lie above)."""
    # io.runtime.job's own frame comes first: the exception was thrown into it at its `yield`.
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not _in(frame.filename, _JOB)]
    first_ours = next((i for i, frame in enumerate(frames) if _in(frame.filename, PACKAGE)), None)
    if first_ours is None:
        return None
    theirs = [frame for frame in frames[first_ours:] if not _ours_or_installed(frame.filename)]
    if not theirs:
        return None
    frame = theirs[-1]
    return (
        f"your model raised {_name(error)}: {_message(error)} (at {shown(frame.filename)} line {frame.lineno}, "
        f"in {frame.name}: the code of config key model.factory, imported from model.path)"
    )


def _invariant(error: BaseException) -> str | None:
    """Name a failed check of the timing's own invariants: a ValueError or AssertionError raised in measure/."""
    frames = traceback.extract_tb(error.__traceback__)
    if not (
        frames and isinstance(error, ValueError | AssertionError) and _in(frames[-1].filename, PACKAGE / "measure")
    ):
        return None
    where = Path(frames[-1].filename).resolve().relative_to(PACKAGE.parent).as_posix()
    return (
        f"a measurement invariant does not hold ({_name(error)} at {where} line {frames[-1].lineno}): "
        f"{_message(error)}; the timing cannot be trusted, so nothing was recorded"
    )


def _ours_or_installed(filename: str) -> bool:
    if filename.startswith("<") or f"{os.sep}.snakemake{os.sep}scripts{os.sep}" in filename:
        return True  # frozen modules, code given as text, Snakemake's copies of the entry scripts
    if not os.path.isabs(filename):
        return True  # compiled extensions name their sources relatively (pyarrow/error.pxi): never the user's
    parts = Path(filename).parts
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    return _in(filename, SCRIPTS) or any(_in(filename, folder) for folder in _INSTALLED)


def _in(filename: str, folder: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def _name(error: BaseException) -> str:
    kind = type(error)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__name__}"


def _message(error: BaseException) -> str:
    """Put the exception's message on one line, cut at _LONGEST characters."""
    text = " ".join(str(error).split()) or "(no message)"
    return text if len(text) <= _LONGEST else text[: _LONGEST - 1] + "…"
