"""Switch torch's intra-op thread count inside a job: one CPU training job times every thread count.

Switching was measured against separate processes before it was relied on (benchmarks/thread_switch.py,
docs/measurement.md#thread-counts-share-a-job): three runs, 432 processes, no cell moved beyond -3 % to +4 %.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def use_threads(threads: int) -> None:
    """Make torch run `threads` intra-op threads from now on (nothing where it already does)."""
    if threads < 1:
        raise ValueError(f"torch needs at least one thread, got {threads}")
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


@contextmanager
def at_threads(threads: int) -> Iterator[None]:
    """Run the block at `threads` torch threads, then return to the count before it."""
    before = torch.get_num_threads()
    use_threads(threads)
    try:
        yield
    finally:
        use_threads(before)
