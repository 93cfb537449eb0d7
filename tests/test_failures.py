"""A job that fails says why in one line (io.failures.describe); its traceback stays in the job's log."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from accel_choice.io import atomic, failures, runtime
from accel_choice.measure import steps, training
from accel_choice.records.model import ModelSpec

DEV_FULL = Path("/dev/full")  # every write to it fails with ENOSPC: a full disk, without root


def raised(call) -> BaseException:
    try:
        call()
    except BaseException as error:  # noqa: BLE001 - the test inspects what was raised
        return error
    raise AssertionError("nothing raised")


def fill_the_disk() -> None:
    """Write where no space is left: /dev/full, or an OSError as the kernel raises it where there is none."""
    if DEV_FULL.exists():
        with open(DEV_FULL, "wb") as handle:
            handle.write(b"x" * 10)
            handle.flush()
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# ---------------------------------------------------------------- each kind, in one line


def test_a_full_disk_names_the_file_the_folder_and_its_free_space(tmp_path):
    folder = tmp_path / "figures"
    folder.mkdir()
    error = OSError(errno.ENOSPC, "No space left on device", str(folder / "decision.png"))
    line = failures.describe(error)
    assert line.startswith(f"disk full: no space left writing {folder / 'decision.png'}; {folder} has "), line
    assert line.endswith("free now; free some and re-run") and "\n" not in line


def test_an_atomic_write_on_a_full_disk_leaves_nothing_and_names_its_target(tmp_path):
    target = tmp_path / "figures" / "decision.png"
    target.parent.mkdir()
    target.write_bytes(b"the earlier figure")

    def write() -> None:
        with atomic.atomic_path(target):
            fill_the_disk()

    error = raised(write)
    assert isinstance(error, atomic.DiskFull) and error.errno == errno.ENOSPC and error.filename == str(target)
    assert sorted(target.parent.iterdir()) == [target] and target.read_bytes() == b"the earlier figure"
    line = failures.describe(error)
    assert f"writing {target}; {target.parent} has " in line and failures.size_words(error.free) in line


def test_a_full_disk_without_a_file_name_reports_the_folder_of_the_log(tmp_path):
    line = failures.describe(raised(fill_the_disk), near=tmp_path / "job.log")
    assert line.startswith(f"disk full: no space left writing a file the error does not name; {tmp_path} has "), line


@pytest.mark.parametrize(
    ("size", "words"), [(0, "0 bytes"), (1023, "1023 bytes"), (12 * 1024, "12.0 KiB"), (3 << 30, "3.0 GiB")]
)
def test_sizes_are_written_as_people_read_them(size, words):
    assert failures.size_words(size) == words


def test_host_memory_says_out_of_memory_with_what_was_asked():
    assert failures.describe(MemoryError()).startswith("out of memory on the host (MemoryError); smaller batch")
    numpy_says = "Unable to allocate 7.45 GiB for an array with shape (1000000000,) and data type float64"
    assert f"(MemoryError): {numpy_says};" in failures.describe(MemoryError(numpy_says))
    cpu = RuntimeError(
        "[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to "
        "allocate 40000000000 bytes. Error code 12 (Cannot allocate memory)"
    )
    assert failures.describe(cpu).startswith("out of memory on the host (RuntimeError) while allocating 37.3 GiB;")


def test_torch_out_of_memory_names_the_allocation_and_the_free_memory():
    error = torch.OutOfMemoryError(
        "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which "
        "3.12 MiB is free. Of the allocated memory 75.9 GiB is allocated by PyTorch"
    )
    wrapped = raised(lambda: _raise_from(ValueError("training stopped"), error))
    assert failures.describe(wrapped) == (
        "out of memory on the device (torch.OutOfMemoryError) while allocating 2.00 GiB, 3.12 MiB free; "
        "smaller batch sizes or data, or a machine with more memory"
    )


def _raise_from(error: BaseException, cause: BaseException) -> None:
    raise error from cause


def test_the_users_model_is_named_with_its_message_and_the_line_that_raised(tmp_path):
    """A model whose forward raises, timed by the library: the line names the user's file, not torch's."""
    package = tmp_path / "mymodels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "net.py").write_text(
        textwrap.dedent(
            """\
            from torch import nn

            class Net(nn.Module):
                def __init__(self, features):
                    super().__init__()
                    self.layer = nn.Linear(features, 1)

                def forward(self, x):
                    raise RuntimeError("shapes (16x8) and (4x1) cannot be multiplied")

            def build(shape):
                return Net(shape[0])
            """
        )
    )
    spec = ModelSpec(hidden=4, lr=1e-2, factory="mymodels.net:build", path=str(tmp_path))
    variant = steps.cpu_variants(["fastpath"], batch_size=16, threads=torch.get_num_threads())[0]
    x, y = torch.randn(64, 8), torch.randint(0, 2, (64,)).float()
    try:
        error = raised(
            lambda: training.prepare_variant(variant, x, y, grad_scaler=False, seed=1, spec=spec, warmup_steps=2)
        )
    finally:
        sys.modules.pop("mymodels.net", None), sys.modules.pop("mymodels", None)
    line = failures.describe(error)
    assert line.startswith(
        "your model raised RuntimeError: shapes (16x8) and (4x1) cannot be multiplied (at "
        f"{package / 'net.py'} line 9, in forward: the code of config key model.factory"
    ), line


def test_a_compiled_extensions_frame_is_not_the_users_model():
    """pyarrow's compiled code names its source relatively (pyarrow/error.pxi): never the user's, even below
    the library and an installed package's frame, as when a job reads a corrupt Parquet file."""
    import functools
    import sysconfig

    from accel_choice.measure.conditions import computed_dtypes

    inner = "exec(compile(\"raise ValueError('Parquet magic bytes not found')\", 'pyarrow/error.pxi', 'exec'))"
    installed = compile(inner, f"{sysconfig.get_path('purelib')}/pyarrow/parquet/core.py", "exec")
    error = raised(lambda: computed_dtypes(functools.partial(exec, installed)))  # library -> pyarrow -> .pxi
    assert failures.describe(error) == "ValueError: Parquet magic bytes not found"


def test_a_timing_invariant_is_called_one(restore_logging_and_threads):
    variant = steps.cpu_variants(["fastpath"], batch_size=2, threads=1)[0]
    spec = ModelSpec(hidden=4, lr=1e-2)
    error = raised(
        lambda: training.measure_training_job(
            torch.zeros(4, 2), torch.zeros(4), [variant], repeat=0, seed=1, spec=spec, warmup_steps=1, epochs=0
        )
    )
    line = failures.describe(error)
    assert line.startswith("a measurement invariant does not hold (ValueError at accel_choice/measure/training.py")
    assert "epochs per job must be at least 1, got 0" in line
    assert line.endswith("the timing cannot be trusted, so nothing was recorded")


def test_anything_else_is_its_type_and_message_on_one_line():
    assert failures.describe(KeyError("epochs")) == "KeyError: 'epochs'"
    long = failures.describe(ValueError("first line\n  second line " + "x" * 1000))
    assert long.startswith("ValueError: first line second line x") and long.endswith("…") and len(long) < 450


# ---------------------------------------------------------------- the job: one line on stderr, the traceback in its log


def test_a_failed_job_prints_one_line_and_logs_its_traceback(tmp_path, capsys, restore_logging_and_threads):
    log_path = tmp_path / "job.log"
    with pytest.raises(SystemExit) as stopped:
        with runtime.job(log_path, threads=1):
            {}["epochs"]
    assert stopped.value.code == 1
    shown = [line for line in capsys.readouterr().err.splitlines() if " INFO " not in line]
    assert len(shown) == 1 and shown[0].endswith(
        f"ERROR job failed: KeyError: 'epochs'; the traceback is in {log_path}"
    )
    text = log_path.read_text()
    assert "ERROR job failed: KeyError: 'epochs'\nTraceback (most recent call last):" in text
    assert text.count("Traceback") == 1 and "the traceback is in" not in text
    assert runtime.read_body_line(text) is None


def _run_job(tmp_path, log_path: str, body: str) -> subprocess.CompletedProcess[str]:
    """A job in a process of its own, as Snakemake runs one: what reaches the screen is all of its stderr."""
    code = textwrap.dedent(
        f"""\
        import sys; sys.path.insert(0, {str(failures.SCRIPTS)!r})
        from accel_choice.io import runtime
        with runtime.job({log_path!r}, threads=1) as log:
            log.info("working")
        """
    ) + textwrap.indent(textwrap.dedent(body), "    ")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)


def test_the_screen_of_a_failed_job_is_its_info_lines_and_one_line_why(tmp_path):
    done = _run_job(tmp_path, "job.log", "raise RuntimeError('boom')\n")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert [line.split(" ", 3)[-1] for line in done.stderr.splitlines()] == [
        "threads=1 torch_threads=torch not imported",
        "working",
        "job failed: RuntimeError: boom; the traceback is in job.log",
    ]
    assert "Traceback" in (tmp_path / "job.log").read_text()


@pytest.mark.skipif(not DEV_FULL.exists(), reason="needs /dev/full")
def test_a_log_on_a_full_disk_still_gives_the_one_line_and_says_the_log_is_lost(tmp_path):
    done = _run_job(tmp_path, str(DEV_FULL), "raise OSError(28, 'No space left on device', 'figure.png')\n")
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Logging error" not in done.stderr
    last = done.stderr.splitlines()[-1]
    assert re.search(
        r"job failed: disk full: no space left writing figure.png; \. has [0-9.]+ [KMGT]?i?B(ytes)? free now; "
        r"free some and re-run; its log /dev/full could not be written \(No space left on device\), so the "
        r"traceback is not kept$",
        last,
    ), done.stderr
    assert len([line for line in done.stderr.splitlines() if "ERROR" in line]) == 1


@pytest.mark.skipif(not DEV_FULL.exists(), reason="needs /dev/full")
def test_a_job_whose_log_could_not_be_written_fails(tmp_path):
    done = _run_job(tmp_path, str(DEV_FULL), "pass\n")
    assert done.returncode == 1 and "Traceback" not in done.stderr and "Logging error" not in done.stderr
    assert done.stderr.splitlines()[-1].endswith(
        "job failed: its log /dev/full could not be written (No space left on device); its records are vouched "
        "for by nothing"
    ), done.stderr
