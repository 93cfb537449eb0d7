"""Every job imports the library of the checkout being run, and its records name the files it loaded (io/library.py)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from accel_choice import records
from accel_choice.io import library, runtime
from accel_choice.records.data import DatasetMeta
from workflow_runs import TINY, checkout, seeded, snakemake

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"


def _library(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_the_digest_is_a_line_per_file_its_path_and_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    folder = _library(tmp_path, {"accel_choice/__init__.py": "", "accel_choice/io/x.py": "X = 1\n"})
    files = ["accel_choice/io/x.py", "accel_choice/__init__.py"]
    lines = "".join(f"{name} {hashlib.sha256((folder / name).read_bytes()).hexdigest()}\n" for name in sorted(files))
    assert library.digest(folder, files) == hashlib.sha256(lines.encode()).hexdigest()
    assert library.digest(folder, files) == library.digest(folder, tuple(reversed(files)))  # the order given: none
    before = library.digest(folder, files)
    assert library.digest(folder, files[:1]) != before  # a file fewer
    (folder / "accel_choice/io/x.py").write_text("X = 2\n")
    assert library.digest(folder, files) != before  # a file's bytes


def test_identity_names_the_loaded_modules_of_this_library_and_their_digest() -> None:
    found = library.identity()
    assert Path(found.folder) == library.loaded_folder() == Path(library.__file__).resolve().parents[2]
    assert {"accel_choice/__init__.py", "accel_choice/io/library.py", "accel_choice/records/__init__.py"} <= set(
        found.files
    )
    assert list(found.files) == sorted(found.files) and all(name.startswith("accel_choice/") for name in found.files)
    assert found.sha256 == library.digest(found.folder, found.files)


def test_expose_puts_the_folder_first_on_the_pythonpath_jobs_inherit_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = str(tmp_path.resolve())
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", mine]))
    library.expose(tmp_path)
    library.expose(tmp_path)  # a cluster job parses the Snakefile again
    assert os.environ["PYTHONPATH"] == os.pathsep.join([mine, "/elsewhere"])
    assert os.environ[library.VARIABLE] == mine
    monkeypatch.delenv("PYTHONPATH")
    library.expose(tmp_path)
    assert os.environ["PYTHONPATH"] == mine


def test_the_check_passes_for_this_library_and_outside_the_workflow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(library.VARIABLE, raising=False)
    library.check()
    monkeypatch.setenv(library.VARIABLE, str(library.loaded_folder()))
    library.check()


def test_a_job_that_imported_another_checkouts_library_stops_with_one_line_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logging_and_threads: None
) -> None:
    expected = str(tmp_path / "second" / "workflow" / "scripts")
    monkeypatch.setenv(library.VARIABLE, expected)
    with pytest.raises(records.UserInputError) as refused:
        library.check()
    message = str(refused.value)
    assert "\n" not in message and expected in message and str(library.loaded_folder()) in message
    log_path = tmp_path / "job.log"
    with pytest.raises(SystemExit) as stopped, runtime.job(log_path, threads=1):
        pytest.fail("the job's body ran")
    assert stopped.value.code == 1
    lines = log_path.read_text().splitlines()
    assert [line for line in lines if "job stopped" in line] == [lines[-1]] and lines[-1].endswith(message)
    assert "Traceback" not in log_path.read_text()


@pytest.mark.workflow
def test_a_second_checkout_run_with_the_first_ones_venv_imports_its_own_library(tmp_path: Path) -> None:
    """The second checkout's library carries a marker line; the interpreter running Snakemake imports this one."""
    second = checkout(tmp_path / "second")
    init = second / "workflow" / "scripts" / "accel_choice" / "__init__.py"
    init.write_text(init.read_text() + "SECOND_CHECKOUT = True  # a marker: this library, not the venv's\n")
    seeded(second)
    meta = "results/data/benchmark.meta.json"
    done = snakemake(second, TINY, meta)
    assert done.returncode == 0, done.stdout + done.stderr
    found = records.read(DatasetMeta, second / meta).environment.workflow.library
    folder = second.resolve() / "workflow" / "scripts"
    assert Path(found.folder) == folder and "accel_choice/__init__.py" in found.files
    assert found.sha256 == library.digest(folder, found.files)  # recomputed from the second checkout's files
    assert found.sha256 != library.digest(SCRIPTS, found.files)  # not this checkout's, the venv's
