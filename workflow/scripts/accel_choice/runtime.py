"""Job set-up shared by the entry scripts: log file, thread counts, errors into the log."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

import torch

log = logging.getLogger("accel_choice")


def set_threads(threads: int) -> None:
    """Make torch (and pyarrow's pool) use exactly the threads the scheduler granted the job."""
    torch.set_num_threads(threads)
    try:
        import pyarrow

        pyarrow.set_cpu_count(threads)
        pyarrow.set_io_thread_count(threads)
    except ImportError:
        pass


@contextlib.contextmanager
def job(log_path: str | os.PathLike[str], threads: int) -> Iterator[logging.Logger]:
    """Log to `log_path` (and stderr); record any exception with its traceback before it propagates."""
    handlers: list[logging.Handler] = [logging.FileHandler(log_path, mode="w"), logging.StreamHandler(sys.stderr)]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers, force=True)
    set_threads(threads)
    log.info("threads=%d torch_threads=%d", threads, torch.get_num_threads())
    try:
        yield log
    except Exception:
        log.exception("job failed")
        raise
