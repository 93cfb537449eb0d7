"""Shared test set-up: the library on sys.path, paths of the repository, and the shared tiny run."""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker's torch gets its share of the cores (one thread each with `-n 2` on 2
    cores). torch's default, a thread per core in every worker, oversubscribes the machine beside the other
    worker and the shared run, and its OpenMP threads spin waiting for each other: the CPU twin of the GPU
    jobs took 7.6 s beside two busy processes at 2 threads, 1.8 s at 1 (2026-12-04)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


# Set in os.environ by the code under test for the jobs it starts; a test that sets one would change every later
# test of its process: a checked configuration skips the parse-time checks (measure.parse_time), a library
# folder makes every job() stop that did not import from it (io.library.expose).
JOB_VARIABLES = ("ACCEL_CHOICE_CHECKED", "ACCEL_CHOICE_LIBRARY", "PYTHONPATH")


@pytest.fixture(autouse=True)
def no_leaked_job_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's changes to JOB_VARIABLES undone after it (monkeypatch records each one's value first)."""
    for name in JOB_VARIABLES:
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.setenv(name, "")
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture
def restore_logging_and_threads():
    """runtime.job reconfigures the root logger and torch's thread count for the whole process."""
    import logging

    import torch

    root = logging.getLogger()
    handlers, level, threads = list(root.handlers), root.level, torch.get_num_threads()
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
    torch.set_num_threads(threads)


def _shared_folder(factory: pytest.TempPathFactory) -> Path:
    """One folder for the whole session: under pytest-xdist, the folder every worker's own lies in."""
    base = factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-tiny-run"


@pytest.fixture(scope="session", autouse=True)
def _shared_run_started(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Start the finished tiny run (tests/workflow_runs.py) with the session when a test collected
    here reads it: it runs beside the unit tests instead of holding the first workflow test up."""
    if any("shared_run" in item.fixturenames for item in request.session.items):
        import workflow_runs  # here, not at the top: a session without workflow tests needs no yaml

        workflow_runs.start(_shared_folder(tmp_path_factory))


@pytest.fixture(scope="session")
def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's folder of what its test processes share (workflow_runs.shared)."""
    return _shared_folder(tmp_path_factory)


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The events of the finished tiny run (workflow_runs.timeline); its folder is read-only to tests."""
    import workflow_runs

    return workflow_runs.wait(_shared_folder(tmp_path_factory))


@pytest.fixture(scope="session")
def pristine(shared_run: dict) -> Path:
    """The shared finished run, as its last invocation left it: read it, or copy it (copy_of) to change it."""
    resumed = shared_run["resume"]
    assert resumed.returncode == 0, resumed.stdout[-4000:] + resumed.stderr[-4000:]
    return shared_run["workdir"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the workflow tests for two processes and the shared run made beside them: after the unit
    tests (about a minute), first those that need no finished run (refused configs, dry runs of a fresh
    checkout) while the shared run is still being made, then the tests that make a whole run other tests
    read (`workflow_runs.shared`: the user's usual changes, the worked examples), the longest of all,
    then the tests that make whole runs of their own from it (they take `pristine`, not `finished`),
    then the many short dry runs on a finished run, and last the tests that read a run another test made.
    The scheduler below hands each workflow test out alone, and a process holds the test it runs and the
    next: a reader handed out while the other process still makes its run would wait for it, idle (a
    test of the lost record waited 106 s, one of the residual MLP 77 s, 2026-12-04); with every shorter
    test between the makers and the readers, the runs are made by the time a reader asks. The makers are
    GAP tests apart, so that two are not queued in one process (the conv1d example once waited 143 s
    behind the changes' run)."""
    made: set[str] = set()

    def order(item: pytest.Item) -> int:
        names = getattr(item, "fixturenames", ())
        if "shared_run" not in names:
            return 0
        if "pristine" in names and "finished" not in names:
            builds = _shared_builds(item)
            if builds and builds <= made:
                return 4  # read once made by an earlier test
            made.update(builds)
            return 1 if builds else 2
        return 3

    workflow = [item for item in items if item.get_closest_marker("workflow")]
    if workflow:
        rest = [item for item in items if not item.get_closest_marker("workflow")]
        ranks = {item: order(item) for item in workflow}  # in collection order: the first asker makes it
        ranked = sorted(workflow, key=ranks.__getitem__)
        makers = [item for item in ranked if ranks[item] == 1]
        between = [item for item in ranked if ranks[item] in (2, 3)]
        # A process holds the test it runs and the next (Units._reschedule): shorter tests between two makers
        # send the second to the other process while the first makes its run (not queued behind it).
        spaced = []
        for maker in makers:
            spaced += [maker, *between[:GAP]]
            del between[:GAP]
        early = [item for item in ranked if ranks[item] == 0]
        items[:] = rest + early + spaced + between + [item for item in ranked if ranks[item] == 4]


GAP = 3  # tests between two that make a shared run: more than a process holds beside the one it runs


def _shared_builds(item: pytest.Item) -> set[str]:
    """The session fixtures the test uses that make something once a session in the shared folder."""
    info = getattr(item, "_fixtureinfo", None)
    builds = set()
    for name in getattr(item, "fixturenames", ()):
        definitions = info.name2fixturedefs.get(name) if info is not None else None
        if definitions and definitions[-1].scope == "session" and "shared_folder" in definitions[-1].argnames:
            builds.add(name)
    return builds


# The test modules whose tests are each a unit of work of their own under `-n 2`: whole runs and dry
# runs of seconds to a minute each. Every other module goes to one process whole (its module fixtures,
# such as tests/test_gpu.py's CPU training jobs, are then set up once, not once per process).
ONE_UNIT_PER_TEST = ("tests/test_workflow.py", "tests/test_module_import.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`-n 2` (pytest-xdist's `--dist load`) hands tests out in chunks of consecutive ones: several long
    workflow runs could go to one process while the other ran out of work. Here a unit of work is a
    test module, or one test of ONE_UNIT_PER_TEST, handed out one at a time in the collection's order
    (pytest_collection_modifyitems above), to whichever process has the fewest left."""
    if config.getvalue("dist") != "load":
        return None  # a --dist asked for by name is the user's
    from xdist.scheduler import LoadScopeScheduling

    class Units(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in ONE_UNIT_PER_TEST else path

        def _reschedule(self, node) -> None:
            """LoadScopeScheduling's, but a process gets its next unit only when it holds one test or none: the
            test it runs and the one after (a worker runs a test once it knows the next). pytest-xdist tops
            a process up at two, so a process that started a long run could hold two units behind it that
            the other process was free to run."""
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

    config.option.loadscopereorder = False  # keep the collection's order, not the largest unit first
    return Units(config, log)


# --- a module that needs a package this Python lacks is skipped, never an error --------------------
# A GPU machine may have torch, numpy and pytest only (docs/gpu.md): `python -m pytest -m gpu` must
# collect there. What a test module needs when it is imported is read from the source: its top-level
# imports, and those of the library modules and test helpers it imports, transitively (an import
# inside a function runs only when the function does, so it is not a need at import time).

# Where the tests' own modules lie: the library and the entry scripts, the tests and their helpers,
# the Slurm harness, the worked examples.
LOCAL_ROOTS = ("workflow/scripts", "tests", "tests/slurm", "examples")


def _local_file(name: str) -> Path | None:
    """The file of a module of this repository, or None for one from elsewhere."""
    for root in LOCAL_ROOTS:
        path = REPO / root / Path(*name.split("."))
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _top_level_imports(tree: ast.Module, package: str) -> set[str]:
    """Dotted names imported by the statements that run on import (not inside a def or a class)."""
    names: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the file's own package
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # a submodule, where it is one
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    statements.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return {name for name in names if name and name != "__future__"}


@functools.cache
def _needs(file: Path) -> frozenset[str]:
    """The third-party top-level packages importing `file` needs, through the local modules it imports."""
    package = (
        ".".join(file.relative_to(REPO / "workflow" / "scripts").with_suffix("").parts[:-1])
        if (REPO / "workflow" / "scripts") in file.parents
        else ""
    )
    needed: set[str] = set()
    for name in _top_level_imports(ast.parse(file.read_bytes()), package):
        top = name.split(".")[0]
        if _local_file(top) is not None:
            local = _local_file(name)  # None: a name imported from a module, not a module
            if local is not None and local != file:
                needed |= _needs(local)
        elif top not in sys.stdlib_module_names:
            needed.add(top)
    return frozenset(needed)


def _importable(top: str) -> bool:
    if top in sys.modules:  # None there: imported and refused, or hidden on purpose (tests/test_layout.py)
        return sys.modules[top] is not None
    return importlib.util.find_spec(top) is not None


def missing_packages(file: Path) -> list[str]:
    """The packages importing test module `file` needs that this Python cannot import."""
    return sorted(top for top in _needs(file) if not _importable(top))


class _NeedsMissingPackages(pytest.Module):
    """A test module whose imports need packages this Python lacks: one skip naming them."""

    def _getobj(self):
        missing = ", ".join(missing_packages(self.path))
        raise pytest.skip.Exception(f"{self.path.name} needs {missing}, not installed here", allow_module_level=True)


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if module_path.name.startswith("test_") and missing_packages(module_path):
        return _NeedsMissingPackages.from_parent(parent, path=module_path)
    return None
