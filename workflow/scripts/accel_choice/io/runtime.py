"""Job set-up shared by the entry scripts: log file, thread counts, errors in one line (tracebacks into the log)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from accel_choice import records
from accel_choice.io import atomic, failures, library
from accel_choice.records import UserInputError
from accel_choice.records.model import ModelSpec

log = logging.getLogger("accel_choice")


def set_threads(threads: int) -> None:
    """Make torch (and pyarrow's pool) use exactly the threads the scheduler granted the job.

    torch is set where the job imported it; the environment variables cover a torch imported later.
    A job that needs no torch does not import it here.
    """
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        import pyarrow

        pyarrow.set_cpu_count(threads)
        pyarrow.set_io_thread_count(threads)
    except ImportError:
        pass


class _LogFile(logging.FileHandler):
    """The job's log file; a write that fails (a full disk) is kept in `failed`, not printed as a traceback."""

    failed: OSError | None = None

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
        elif self.failed is None:
            self.failed = error

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as error:
            self.failed = self.failed or error


@contextlib.contextmanager
def job(log_path: str | os.PathLike[str], threads: int) -> Iterator[logging.Logger]:
    """Log to `log_path` and stderr; end a job that raises with one line on stderr, its traceback in the log.

    A mistake in the user's input (records.UserInputError) is logged as its one line. Any other exception is
    logged with its traceback, and stderr gets one line saying why (io.failures.describe) and where the
    traceback is. Either ends the job with exit status 1. A log that cannot be written (a full disk) fails the
    job too: the records it wrote would be vouched for by nothing (records.ledger)."""
    log_file = _LogFile(log_path, mode="w")
    log_file.addFilter(lambda record: getattr(record, "log_file", True))
    screen = logging.StreamHandler(sys.stderr)
    screen.addFilter(lambda record: getattr(record, "screen", True))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=[log_file, screen], force=True
    )
    set_threads(threads)
    torch = sys.modules.get("torch")
    log.info("threads=%d torch_threads=%s", threads, torch.get_num_threads() if torch else "torch not imported")
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    # Every record this job writes is vouched for by this log, and every record it reads must be.
    ledger_was = records.require_ledger()
    atomic.JOB_LOG.append(Path(log_path))
    try:
        library.check()  # this checkout's library, not the venv's (io/library.py)
        yield log
    except UserInputError as error:
        log.error("job stopped: %s", error)
        raise SystemExit(1) from None
    except Exception as error:
        why = failures.describe(error, near=log_path)
        log.error("job failed: %s", why, exc_info=True, extra={"screen": False})
        log_file.flush()
        kept = "" if log_file.failed is None else ", so the traceback is not kept"
        log.error("job failed: %s; %s%s", why, _log_words(log_file), kept, extra={"log_file": False})
        raise SystemExit(1) from None
    finally:
        atomic.JOB_LOG.pop()
        records.require_ledger(ledger_was)
    log.info(BODY_LINE, time.perf_counter() - started_wall, time.process_time() - started_cpu, peak_rss_mb())
    log_file.flush()
    if log_file.failed is not None:
        log.error(
            "job failed: %s; its records are vouched for by nothing", _log_words(log_file), extra={"log_file": False}
        )
        raise SystemExit(1)


def _log_words(log_file: _LogFile) -> str:
    """Say where the traceback is, or that the log could not be written."""
    where = failures.shown(log_file.baseFilename)
    if log_file.failed is None:
        return f"the traceback is in {where}"
    return f"its log {where} could not be written ({log_file.failed.strerror or log_file.failed})"


# The last line of every job's log: the script body's own timing, read back by the
# resource table beside Snakemake's `benchmark:` sample of the whole process.
BODY_LINE = "job body: wall %.4f s, cpu %.4f s, peak RSS %.1f MB"
_BODY_PATTERN = re.compile(r"job body: wall ([0-9.]+) s, cpu ([0-9.]+) s, peak RSS ([0-9.]+) MB")


def peak_rss_mb() -> float:
    """This process's peak resident set size as the kernel tracked it (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_body_line(log_text: str) -> dict[str, float] | None:
    """Read the body timing a finished job logged, or None for a log without one (a failed job)."""
    matches = _BODY_PATTERN.findall(log_text)
    if not matches:
        return None
    wall, cpu, rss = (float(v) for v in matches[-1])
    return {"body_wall_s": wall, "body_cpu_s": cpu, "peak_rss_mb": rss}


def training_options(params: Any) -> dict[str, Any]:
    """Return what a training timing job passes measure.training.measure_training_job.

    What a training timing job passes measure.training.measure_training_job from its rule's params (the
    CPU and the GPU rule alike): the seed, the model, the warm-up, the epochs per job, the matmul precision
    and, where a compiled variant is timed, torch.compile's mode."""
    return {
        "seed": params.seed,
        "spec": ModelSpec(**params.model),
        "warmup_steps": params.warmup_steps,
        "epochs": params.epochs_per_job,
        "precision": params.matmul_precision,
        "compile_mode": params.compile_mode or "default",
    }


def check_thread_counts(threads: int, thread_counts: Any) -> None:
    """Stop a job given fewer threads than its largest thread count (timing.threads), naming the key.

    Snakemake lowers a job's threads to --cores: a cell would be timed on fewer cores than its threads."""
    most = max(thread_counts)
    if threads < most:
        raise SystemExit(
            f"config key timing.threads: this job times cells at up to {most} torch threads, but it was given "
            f"{threads} (--cores {threads}?): run with --cores {most} or more, or remove "
            f"{most} from timing.threads"
        )
