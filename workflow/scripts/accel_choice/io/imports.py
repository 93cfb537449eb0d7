"""The library files a rule's script really runs: its import closure inside `accel_choice`.

A rule lists these files as its `code` input, so editing a module re-runs exactly the rules
whose scripts import it, directly or through another module, and no other. The closure is
read from the source (`ast`), never by importing anything: the Snakefile computes it when it
is parsed, without torch.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "accel_choice"
# Where the workflow keeps its ImportCache, relative to the working directory (beside measure.device_plan.CACHE).
CACHE = Path(".snakemake") / "accel-choice" / "imports.json"


def _module_file(root: Path, dotted: str) -> Path | None:
    """The file of module `dotted` (a package's `__init__.py`) under `root`, or None."""
    path = root.joinpath(*dotted.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def module_file(root: str | os.PathLike[str], dotted: str) -> Path | None:
    """Return the file that importing `dotted` from `root` runs (module or package `__init__.py`), or None."""
    return _module_file(Path(root).resolve(), dotted)


def _package_of(root: Path, file: Path) -> str:
    """The package a relative import in `file` starts from: a/b for a/b/c.py and for a/b/__init__.py."""
    return ".".join(file.relative_to(root).with_suffix("").parts[:-1])


def imported_modules(
    root: Path, file: Path, packages: tuple[str, ...] | None = (PACKAGE,), cache: ImportCache | None = None
) -> set[str]:
    """Return the dotted names of the modules under `root` that `file` imports.

    Dotted names of the modules under `root` that `file` imports (at any depth of its code), of
    the top-level `packages` only (None: any module found under `root`, for a user's own code).

    Each file is read once per version: the Snakefile asks for every rule's closure (twice, to
    check the rules), and most rules share most modules; with a `cache`, once per version across
    processes (every `snakemake` invocation parses the workflow).
    """
    stat = file.stat()
    return set(_imported_modules(root, file, stat.st_mtime_ns, stat.st_size, packages, cache))


@functools.cache
def _imported_modules(
    root: Path, file: Path, mtime_ns: int, size: int, packages: tuple[str, ...] | None, cache: ImportCache | None
) -> frozenset[str]:
    names = cache.names(root, file, packages) if cache else _imports_in(root, file, file.read_bytes(), packages)
    return frozenset(name for name in names if _module_file(root, name) is not None)


def _imports_in(root: Path, file: Path, source: bytes, packages: tuple[str, ...] | None) -> frozenset[str]:
    """Every module name `source` (the text of `file`) imports from `packages`, found or not under `root`."""
    tree = ast.parse(source, filename=str(file))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing module's package
                package = _package_of(root, file).split(".") if file.is_relative_to(root) else []
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            # `from a.b import c`: c is a module or a name in a.b; both a.b and a.b.c are candidates.
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if packages is None or parts[0] in packages:
                # Importing a.b.c runs a/__init__.py and a/b/__init__.py too.
                found.update(".".join(parts[:depth]) for depth in range(1, len(parts) + 1))
    return frozenset(found)


class ImportCache:
    """What each source file imports, kept in a JSON file between processes and keyed by the file's
    content (SHA-256), its path under the root (relative imports) and the packages looked for: an
    edited file is read again, an unchanged one in a copied or moved checkout is not. A damaged or
    foreign cache file is ignored and written anew; it is only ever a shortcut."""

    VERSION = 1

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.entries: dict[str, list[str]] = {}
        self.changed = False
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
            if document.get("version") == self.VERSION and isinstance(document.get("entries"), dict):
                self.entries = document["entries"]
        except (OSError, ValueError, AttributeError):
            pass

    def names(self, root: Path, file: Path, packages: tuple[str, ...] | None) -> frozenset[str]:
        source = file.read_bytes()
        where = file.relative_to(root).as_posix() if file.is_relative_to(root) else ""
        key = f"{hashlib.sha256(source).hexdigest()} {where} {','.join(packages) if packages else '*'}"
        if key not in self.entries:
            self.entries[key] = sorted(_imports_in(root, file, source, packages))
            self.changed = True
        return frozenset(self.entries[key])

    def save(self) -> None:
        """Write the cache if anything was added (atomically: a concurrent reader sees the old or the new)."""
        if not self.changed:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps({"version": self.VERSION, "entries": self.entries}), encoding="utf-8")
        partial.replace(self.path)
        self.changed = False


def closure(
    script: str | os.PathLike[str],
    root: str | os.PathLike[str],
    packages: tuple[str, ...] | None = (PACKAGE,),
    cache: ImportCache | None = None,
) -> list[Path]:
    """Return every file of `packages` under `root` that running `script` imports.

    Every file of `packages` under `root` that running `script` imports, directly or not, sorted.

    `root` is the folder holding the `accel_choice` package (workflow/scripts); for a user's model,
    the folder it is imported from (`model.path`), with `packages` None: whatever it imports from there.
    A `cache` (ImportCache) keeps what each file imports between processes, saved before this returns.
    """
    root = Path(root).resolve()
    seen: dict[str, Path] = {}
    queue = [Path(script).resolve()]
    while queue:
        for name in imported_modules(root, queue.pop(), packages, cache):
            if name not in seen:
                seen[name] = _module_file(root, name)
                queue.append(seen[name])
    if cache is not None:
        cache.save()
    return sorted(seen.values())


def relative_paths(files: Iterable[Path], start: str | os.PathLike[str]) -> list[str]:
    """Return `files` relative to `start` (the working directory).

    `files` relative to `start` (the working directory): a checkout moved or copied together with
    its results keeps the same paths, so Snakemake sees the same inputs and plans nothing."""
    return [os.path.relpath(file, start) for file in files]
