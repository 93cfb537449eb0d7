"""Shared test set-up: the library on sys.path, and paths of the repository."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
