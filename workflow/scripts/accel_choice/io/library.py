"""The library every job imports: the checkout's being run, whatever the venv holds, and its identity.

The README's set-up installs the project editable (`-e .`), so a venv's `accel_choice` is the checkout
it was installed from. A second checkout run with that venv would import the first one's library in
every job: Snakemake's `script:` preamble appends the script's folder to sys.path, behind the venv's.
So the Snakefile calls `expose`: this checkout's folder goes first on the PYTHONPATH that every job
inherits (locally, and through sbatch's `--export=ALL` on a cluster), and VARIABLE names it. Each job
checks it (`check`, from io.runtime.job), and its records say which library files it had loaded
(`identity`, embedded by io.envinfo in every environment record).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from accel_choice.records import UserInputError
from accel_choice.records.environment import Library

# Set by the Snakefile: the folder that holds this workflow's library (workflow/scripts); jobs inherit it.
VARIABLE = "ACCEL_CHOICE_LIBRARY"
PACKAGE = "accel_choice"


def loaded_folder() -> Path:
    """Return the folder the running `accel_choice` was imported from (the one holding the package)."""
    return Path(sys.modules[PACKAGE].__file__).resolve().parents[1]  # type: ignore[arg-type]


def expose(folder: str | os.PathLike[str]) -> None:
    """Put `folder` first on the PYTHONPATH jobs inherit, and name it in VARIABLE as the library they must import.

    Idempotent: a job that parses the Snakefile again (a cluster job) keeps one copy of the folder."""
    first = str(Path(folder).resolve())
    current = os.environ.get("PYTHONPATH", "")
    rest = [entry for entry in current.split(os.pathsep) if entry != first] if current else []
    os.environ["PYTHONPATH"] = os.pathsep.join([first, *rest])
    os.environ[VARIABLE] = first


def check() -> None:
    """Stop a job (one line naming both folders) whose `accel_choice` is not the workflow's own library.

    Outside the workflow (VARIABLE unset: tests, the commands) there is nothing to check."""
    expected = os.environ.get(VARIABLE)
    if not expected:
        return
    found = loaded_folder()
    if found != Path(expected).resolve():
        raise UserInputError(
            f"this job imported {PACKAGE} from {found}, not from the workflow's own library {expected} ({VARIABLE}): "
            f"another checkout's code; put {expected} first on PYTHONPATH, or run the workflow with the venv "
            "installed from its own checkout"
        )


def imported_files(folder: Path) -> list[str]:
    """Return the library's modules loaded in this process, as sorted paths relative to `folder`.

    A job with torch's compiler loaded holds over 2,000 modules. Each module's folder is resolved once;
    only a module whose folder lies in the package resolves its own path. With 2,150 modules loaded
    this took 0.025-0.036 s, against 0.15-0.18 s resolving every path (2-vCPU VM, 2026-12-07).
    A module file linked into the package from a folder outside it is not counted."""
    package = folder / PACKAGE
    inside: dict[str, bool] = {}  # a module's folder: whether it resolves into the package
    found = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not name:
            continue
        parent = os.path.dirname(name)
        if parent not in inside:
            inside[parent] = Path(parent).resolve().is_relative_to(package)
        if not inside[parent]:
            continue
        path = Path(name).resolve()
        if path.is_relative_to(package):
            found.add(path.relative_to(folder).as_posix())
    return sorted(found)


def digest(folder: str | os.PathLike[str], files: list[str] | tuple[str, ...]) -> str:
    """Hash `files` (relative to `folder`) as one sha256: a line per file, sorted, `<path> <sha256 of its bytes>`."""
    lines = "".join(
        f"{name} {hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest()}\n" for name in sorted(files)
    )
    return hashlib.sha256(lines.encode()).hexdigest()


def identity() -> Library:
    """Identify the library this process runs: its folder, its loaded module files and their digest."""
    folder = loaded_folder()
    files = imported_files(folder)
    return Library(folder=str(folder), files=tuple(files), sha256=digest(folder, files))
