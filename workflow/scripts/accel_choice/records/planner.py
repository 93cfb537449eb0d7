"""The planner's records: the workloads of the timed grid."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    """One epoch of the model features → hidden → 1 in fp32 over `rows` rows."""

    rows: int
    features: int
    hidden: int
    batch_size: int

    @property
    def widths(self) -> tuple[int, int, int]:
        return (self.features, self.hidden, 1)


def grid_workloads(rows: Sequence[int], features: Sequence[int], hidden: Sequence[int],
                   batch_sizes: Sequence[int]) -> list[Workload]:
    """Every combination, except batch sizes larger than the rows they would split."""
    return [
        Workload(rows=n, features=d, hidden=h, batch_size=b)
        for n, d, h, b in itertools.product(rows, features, hidden, batch_sizes)
        if b <= n
    ]
