"""The records rules hand each other: data types defined once, imported by every layer.

Nothing here imports the rest of the package, so `io`, `analyze`, `measure` and `render` can
all depend on it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# What identifies a training variant: one aggregated cell per value of these fields.
VARIANT_KEYS = ("device", "precision", "placement", "loader", "batch_size")


@dataclass(frozen=True)
class Dataset:
    name: str
    matrix: np.ndarray  # float32, shape (rows, features + 1); last column is the target
    feature_columns: tuple[str, ...]
    target_column: str

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.feature_columns, self.target_column)

    @property
    def features(self) -> np.ndarray:
        return self.matrix[:, :-1]

    @property
    def target(self) -> np.ndarray:
        return self.matrix[:, -1]


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
