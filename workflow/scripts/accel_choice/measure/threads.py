"""Switch torch's intra-op thread count inside a job: one CPU training job times every thread count.

Switching was measured against separate processes before it was relied on (benchmarks/thread_switch.py,
docs/measurement.md#measurement-discipline): three runs, 432 processes, no cell moved beyond -3 % to +4 %.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

# Untimed work at a new thread count before its first timed epoch: runs of 15 CPU jobs read the 1-thread cells
# 6.5 % (1.2-12.2 %) slower in the rounds where they followed the 2-thread block (benchmarks/switch_position.py).
SETTLE_S = 0.1


def use_threads(threads: int) -> bool:
    """Make torch run `threads` intra-op threads from now on; return whether that switched the count."""
    if threads < 1:
        raise ValueError(f"torch needs at least one thread, got {threads}")
    if torch.get_num_threads() == threads:
        return False
    torch.set_num_threads(threads)
    return True


def switch_to(threads: int, settle: Callable[[], object], seconds: float = SETTLE_S) -> int:
    """Make torch run `threads`; where that switched, run `settle` (untimed work at the new count) until `seconds`
    have passed, once at least. Return how many times it ran."""
    if not use_threads(threads):
        return 0
    runs, end = 0, time.perf_counter() + seconds
    while not runs or time.perf_counter() < end:
        settle()
        runs += 1
    return runs


@contextmanager
def at_threads(threads: int) -> Iterator[None]:
    """Run the block at `threads` torch threads, then return to the count before it."""
    before = torch.get_num_threads()
    use_threads(threads)
    try:
        yield
    finally:
        use_threads(before)
