"""Compare two cells timed in the same jobs: a paired ratio whose spread the job's other cells help estimate.

A CPU job times every batch size and loader of one thread count, interleaved in rounds. The ratio of two of
its cells is paired: each job's log ratio, so the job's own speed cancels. With three jobs that ratio rests
on 2 degrees of freedom, and Student's t at 2 degrees of freedom is 4.30: a 4 % spread gives ±10 %.
Three jobs that happen to agree give an interval far too narrow instead.

The job's other cells know more. A cell's spread beyond its job's speed is read from its quotients over
the rest of its job (analyze.row_relative: each cell centred on its own level, then over the median of the
other cells in that job), with jobs - 1 degrees of freedom each. Those spreads share one prior, fitted to
all the cells as limma's `squeezeVar` does (Smyth 2004, `row_relative.fit_prior`). Each cell's variance is
shrunk towards it. A pair's variance is the sum of its two cells'; its degrees of freedom are
Welch-Satterthwaite's, at most all the cells' together. `benchmarks/calibration.py --paired` shows the
coverage (docs/statistics.md).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import row_relative
from accel_choice.analyze.job_intervals import _t_estimate, job_medians
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import TrainingCell

METHOD = "paired t on log job medians, each cell's spread moderated over the cells of its jobs"
Key = Hashable


def quotients(medians: np.ndarray) -> np.ndarray:
    """Return each cell's log quotients over the rest of its job, from one job group's cells × jobs medians.

    Each cell is centred on its own mean log first, so cells of any size compare. Needs row_relative.MIN_CELLS cells."""
    if medians.ndim != 2 or medians.shape[0] < row_relative.MIN_CELLS:
        raise ValueError(f"a job group needs at least {row_relative.MIN_CELLS} cells × jobs, got shape {medians.shape}")
    if not (np.isfinite(medians).all() and (medians > 0).all()):
        raise ValueError("job medians must be positive finite times")
    z = np.log(medians)
    z = z - z.mean(axis=1, keepdims=True)
    return z - row_relative.others_median(z)


@dataclass(frozen=True)
class Spreads:
    """Each cell's moderated variance of log job medians beyond its job's speed, and its degrees of freedom."""

    cells: dict[Key, tuple[float, float]]
    prior: row_relative.Prior | None

    def ratio(self, key_a: Key, key_b: Key, d: Sequence[float], level: float) -> Estimate | None:
        """Return B/A from `d`, the per-job log ratios log b - log a, with the moderated t interval at `level`.

        None where either cell has no moderated spread (a job group too small to lend one)."""
        if key_a not in self.cells or key_b not in self.cells or len(d) < 2:
            return None
        (va, da), (vb, db) = self.cells[key_a], self.cells[key_b]
        variance = va + vb
        if not variance > 0:
            return None
        df = variance**2 / (va**2 / da + vb**2 / db)
        if self.prior is not None:
            df = min(df, self.prior.pooled_df)
        return _t_estimate(float(np.mean(d)), math.sqrt(variance / len(d)), df, level, len(d), METHOD)


def fit(groups: Sequence[tuple[Sequence[Key], np.ndarray]]) -> Spreads:
    """Fit every cell's moderated spread under one prior.

    `groups[g]` is (its cells' keys, its cells × jobs medians in that order). Groups of fewer than
    row_relative.MIN_CELLS cells or fewer than two jobs lend nothing: their cells get no spread."""
    raw: dict[Key, tuple[float, int]] = {}
    for keys, medians in groups:
        if len(keys) < row_relative.MIN_CELLS or medians.shape[1] < 2:
            continue
        for key, q in zip(keys, quotients(medians)):
            raw[key] = (float(np.var(q, ddof=1)), len(q) - 1)
    prior = row_relative.fit_prior([v for v, _ in raw.values()], [d for _, d in raw.values()])
    return Spreads({key: row_relative.moderated(*spread, prior) for key, spread in raw.items()}, prior)


def fit_cells(cells: Sequence[TrainingCell]) -> Spreads:
    """Fit the epoch spreads of training cells, grouped by the jobs that timed them (their `jobs`).

    A cell with a job left empty (a non-finite run) lends and gets nothing."""
    grouped: dict[tuple[str, ...], list[TrainingCell]] = defaultdict(list)
    for cell in cells:
        if all(cell.epoch_s_jobs):
            grouped[cell.jobs].append(cell)
    return fit(
        [([c.key for c in group], np.array([job_medians(c.epoch_s_jobs) for c in group])) for group in grouped.values()]
    )
