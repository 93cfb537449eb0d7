"""The code's form: the pinned formatters leave every file as it is, pyflakes finds nothing, and no
library module grows past a size a newcomer reads in one sitting.

Settings live in pyproject.toml; the versions are pinned in envs/requirements.txt. To apply them:
`.venv/bin/snakefmt Snakefile workflow/rules` and `.venv/bin/ruff format workflow/scripts tests`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LIBRARY = REPO / "workflow" / "scripts" / "accel_choice"
PYTHON = ["workflow/scripts", "tests", "benchmarks"]
SNAKEMAKE = ["Snakefile", "workflow/rules"]
MAX_MODULE_LINES = 400


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}: pip install -r envs/requirements.txt")
    return str(path)


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_snakefmt_leaves_the_snakefile_and_the_rules_as_they_are() -> None:
    result = _run(_tool("snakefmt"), "--check", "--diff", *SNAKEMAKE)
    assert result.returncode == 0, (
        f"run: snakefmt {' '.join(SNAKEMAKE)}\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
    )


def test_ruff_format_leaves_the_python_as_it_is() -> None:
    result = _run(_tool("ruff"), "format", "--check", "--diff", "--no-cache", *PYTHON)
    assert result.returncode == 0, (
        f"run: ruff format {' '.join(PYTHON)}\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
    )


def test_pyflakes_finds_nothing() -> None:
    # Undefined names, unused imports and variables, redefinitions (pyproject.toml selects "F").
    result = _run(_tool("ruff"), "check", "--no-cache", "--output-format", "concise", *PYTHON)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def test_no_library_module_is_longer_than_a_newcomer_reads_in_one_go() -> None:
    long = {
        str(path.relative_to(LIBRARY)): lines
        for path in sorted(LIBRARY.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these modules (at most {MAX_MODULE_LINES} lines each): {long}"


def test_every_relative_link_in_the_docs_resolves():
    """docs/check_links.py: every [text](target) in README.md, config/README.md and docs/*.md names a file and a
    heading that exist (a renamed heading broke docs/slurm.md's link to the Quick start until 2026-12-06)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "docs" / "check_links.py")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and not done.stdout, done.stdout
