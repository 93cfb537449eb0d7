"""The data a run works on: the in-memory dataset (the matrix and its columns)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
