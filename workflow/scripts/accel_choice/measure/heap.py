"""Keep the garbage collector's full passes out of the timed rounds.

A CPU training job holds about 346,000 objects that Python's collector tracks.
A full (generation 2) pass over them took 83-196 ms on the 2-vCPU VM, about five times a job
(2026-12-07, the default job, `gc.callbacks`). One of them landed inside a timed 16-step epoch (B=512).
In a default run dataloader B=512 (44 ms) read 4.0-4.6x its median in round 7, in 3 of its 6 cells x jobs.

`frozen_heap` collects once, untimed, then freezes what is left (`gc.freeze`): the collector's passes skip it.
A full pass then took 0.8-1.5 ms. The young generations still run inside epochs, as in a user's loop.
A user's long training loop pays the full passes too, rarely: the job medians never counted them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def frozen_heap() -> Iterator[int]:
    """Collect, then keep every object alive now out of the collector's passes until the block ends.

    Yields how many objects were frozen. Afterwards they are collectable again (`gc.unfreeze` thaws every frozen
    object, so the block is not re-entrant: it refuses to start where something is frozen already)."""
    if gc.get_freeze_count():
        raise RuntimeError(f"{gc.get_freeze_count()} objects are frozen already: frozen_heap would thaw them")
    gc.collect()
    gc.freeze()
    try:
        yield gc.get_freeze_count()
    finally:
        gc.unfreeze()
