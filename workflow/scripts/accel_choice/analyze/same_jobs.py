"""Compare two cells timed in the same jobs: a paired ratio whose spread the job's other cells help estimate.

A CPU job times every batch size and loader of one thread count, interleaved in rounds. The ratio of two of
its cells is paired: each job's log ratio, so the job's own speed cancels. With three jobs that ratio rests
on 2 degrees of freedom, and Student's t at 2 degrees of freedom is 4.30: a 4 % spread gives ±10 %.
Three jobs that happen to agree give an interval that may be far too narrow instead.

The job's other cells know more. A cell's spread beyond its job's speed is read from its quotients over
the rest of its job (analyze.row_relative: each cell centred on its own level, then over the median of the
other cells in that job), with jobs - 1 degrees of freedom each. The spreads of one job group share a prior,
fitted as limma's `squeezeVar` does (Smyth 2004, `row_relative.fit_prior`); each cell's is shrunk towards it.
A pair's own variance is then shrunk towards the sum of its two cells', keeping at least half its weight.
`benchmarks/calibration.py --paired` shows the coverage (docs/statistics.md).
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

METHOD = "paired t on log job medians, the pair's spread shrunk towards its cells' over the cells of its jobs"
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
    """Each cell's moderated variance of log job medians beyond its job's speed, and the prior of its job group."""

    cells: dict[Key, float]
    priors: dict[Key, row_relative.Prior]

    def ratio(self, key_a: Key, key_b: Key, d: Sequence[float], level: float) -> Estimate | None:
        """Return B/A from `d`, the per-job log ratios log b - log a, with the moderated t interval at `level`.

        The pair's own variance of `d` (jobs - 1 degrees of freedom) is shrunk towards the sum of its two cells'
        moderated variances, as limma shrinks a row's towards its prior, weighted by the group prior's degrees of
        freedom but never more than the pair's own. A pair whose jobs moved apart more than its cells' spreads say
        keeps half of that: a job's own trend over the batch sizes moves the smallest and the largest apart.
        None where the two cells are not of one job group with a prior."""
        prior = self.priors.get(key_a)
        if prior is None or self.priors.get(key_b) is not prior or len(d) < 2:
            return None
        own = float(np.var(d, ddof=1))
        borrowed = self.cells[key_a] + self.cells[key_b]
        df = len(d) - 1
        lent = min(prior.df, df)  # the pair's own variance keeps at least half the weight
        variance = (lent * borrowed + df * own) / (lent + df)
        if not variance > 0:
            return None
        return _t_estimate(
            float(np.mean(d)), math.sqrt(variance / len(d)), min(lent + df, prior.pooled_df), level, len(d), METHOD
        )


def fit(groups: Sequence[tuple[Sequence[Key], np.ndarray]]) -> Spreads:
    """Fit every cell's moderated spread under its own job group's prior.

    `groups[g]` is (its cells' keys, its cells × jobs medians in that order). Each group gets its own prior:
    one thread count's cells may spread unlike another's (two threads on two cores, say). Groups of fewer than
    row_relative.MIN_CELLS cells, of one job, or too few cells that varied to fit a prior lend nothing."""
    cells: dict[Key, float] = {}
    priors: dict[Key, row_relative.Prior] = {}
    for keys, medians in groups:
        if len(keys) < row_relative.MIN_CELLS or medians.shape[1] < 2:
            continue
        raw = [(float(np.var(q, ddof=1)), len(q) - 1) for q in quotients(medians)]
        prior = row_relative.fit_prior([v for v, _ in raw], [d for _, d in raw])
        if prior is None:
            continue
        cells |= {key: row_relative.moderated(*spread, prior)[0] for key, spread in zip(keys, raw)}
        priors |= dict.fromkeys(keys, prior)
    return Spreads(cells, priors)


def fit_cells(cells: Sequence[TrainingCell]) -> Spreads:
    """Fit the epoch spreads of training cells, grouped by the jobs that timed them (their `jobs`).

    A cell that lost a job to a non-finite run names fewer jobs: it is of another group than its neighbours."""
    grouped: dict[tuple[str, ...], list[TrainingCell]] = defaultdict(list)
    for cell in cells:
        grouped[cell.jobs].append(cell)
    return fit(
        [([c.key for c in group], np.array([job_medians(c.epoch_s_jobs) for c in group])) for group in grouped.values()]
    )
