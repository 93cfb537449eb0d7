"""Shared test set-up: the library on sys.path, paths of the repository, and the shared tiny run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the workflow tests for two processes and the shared run made beside them: after the unit
    tests (about a minute), first those that need no finished run (refused configs, dry runs of a fresh
    checkout) while the shared run is still being made, then the tests that make whole runs of their
    own from it (they take `pristine`, not `finished`), longest first, and the many short dry runs on
    a finished run last, filling in around the long ones instead of one long run ending the session alone."""

    def order(item: pytest.Item) -> int:
        names = getattr(item, "fixturenames", ())
        if "shared_run" not in names:
            return 0
        return 1 if "pristine" in names and "finished" not in names else 2

    workflow = [item for item in items if item.get_closest_marker("workflow")]
    if workflow:
        rest = [item for item in items if not item.get_closest_marker("workflow")]
        items[:] = rest + sorted(workflow, key=order)
