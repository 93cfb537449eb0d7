"""`python -m pytest -m gpu` collects on a machine with only torch, numpy and pytest (docs/gpu.md): a test
module whose imports need a package the machine lacks is one skip naming it, never a collection error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import conftest

# What a bare GPU machine lacks of the project's pins (its torch brings numpy; pytest is carried).
ABSENT_ON_A_GPU_MACHINE = ("yaml", "matplotlib", "scipy", "jsonschema", "pandas", "pyarrow", "pydantic", "psutil")


def test_a_module_needs_what_it_and_the_local_modules_it_imports_import_at_top_level(tmp_path: Path) -> None:
    module = tmp_path / "test_example.py"
    module.write_text(
        "import json\nimport not_a_package_anywhere.sub\nfrom accel_choice.io import paths\n"
        "def later():\n    import pandas  # runs only when called: not a need at import\n"
        "try:\n    import yaml\nexcept ImportError:\n    pass\n"
    )
    assert conftest.missing_packages(module) == ["not_a_package_anywhere"]
    assert "yaml" in conftest._needs(module) and "pandas" not in conftest._needs(module)
    # The library's records need pydantic, through every module that imports them.
    assert "pydantic" in conftest._needs(conftest.REPO / "tests" / "test_gpu.py")


def test_the_gpu_tests_collect_without_the_packages_a_gpu_machine_lacks(repo: Path) -> None:
    """The packages hidden (sys.modules[name] = None makes `import name` fail) in a fresh process."""
    code = (
        "import sys\n"
        f"for name in {ABSENT_ON_A_GPU_MACHINE!r}:\n"
        "    sys.modules[name] = None\n"
        "import pytest\n"
        "sys.exit(pytest.main(['-m', 'gpu', '-q', '-p', 'no:cacheprovider', '-p', 'no:xdist', "
        "'-rs', 'tests']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=120)
    # Every module that holds a GPU test skips at import, so no test is left to run: pytest's "no tests
    # collected" (5), not "interrupted" (2) by collection errors.
    assert done.returncode == 5, done.stdout[-3000:] + done.stderr[-3000:]
    assert "error" not in done.stdout.lower() and "Interrupted" not in done.stdout, done.stdout[-3000:]
    assert "test_gpu.py needs pydantic, not installed here" in done.stdout  # the measure path: no pandas, pyarrow
