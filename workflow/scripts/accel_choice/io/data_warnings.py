"""Warnings where a number of the data means nothing; nothing here refuses a run.

`columns` looks at the values where the data are written (generated or imported): a constant target,
constant feature columns. `few_steps` needs the batch sizes only, so it runs at parse time and in the
decide job: an epoch of fewer than MIN_STEPS steps. Each warning is a record of `records.data`, and
its `line` words it the one way the job log, the parse-time message and the report all use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from accel_choice.records.data import (
    MIN_STEPS,
    ColumnWarning,
    ConstantFeatures,
    ConstantTarget,
    Dataset,
    FewSteps,
)


def constant_target(values: np.ndarray, column: str) -> ConstantTarget | None:
    """Warn of a target where every row holds one value (a 0/1 target of one class included)."""
    values = np.asarray(values).reshape(-1)
    if values.size == 0 or not bool((values == values[0]).all()):
        return None
    return ConstantTarget(column=column, value=float(values[0]), rows=int(values.size))


def columns(dataset: Dataset) -> tuple[ColumnWarning, ...]:
    """Warn of a constant target, then of the feature columns that hold one value in every row."""
    matrix = dataset.matrix
    if len(matrix) == 0:
        return ()
    same = np.flatnonzero((matrix[:, :-1] == matrix[0, :-1]).all(axis=0))
    found: list[ColumnWarning] = []
    target = constant_target(dataset.target, dataset.target_column)
    if target is not None:
        found.append(target)
    if same.size:
        found.append(
            ConstantFeatures(
                columns=tuple(dataset.feature_columns[i] for i in same),
                values=tuple(float(matrix[0, i]) for i in same),
                features=len(dataset.feature_columns),
            )
        )
    return tuple(found)


def few_steps(rows: int, batch_sizes: Sequence[int]) -> FewSteps | None:
    """Return the batch sizes whose epoch over `rows` is fewer than MIN_STEPS steps (⌈rows / B⌉), or None."""
    few = sorted(b for b in set(batch_sizes) if math.ceil(rows / b) < MIN_STEPS)
    if not few:
        return None
    return FewSteps(batch_sizes=tuple(few), steps=tuple(math.ceil(rows / b) for b in few), rows=rows)
