"""Confidence intervals for repeated timings: a two-level (hierarchical) percentile bootstrap.

A timing cell is a list of *jobs* (separate processes, the repeats that see the machine's drift
from minute to minute), each holding the *epochs* timed inside it. A bootstrap resample draws as
many jobs as there are, with replacement, then each drawn job's epochs with replacement, pools
them and takes the median (Davison & Hinkley's two-stage bootstrap, the design pyperf's
processes × values calls for). The percentile interval of those medians is the interval of the
cell's median; with one job it only reflects the spread inside the process, which the caller
must say.

A ratio of two cells resamples both sides the same way. Where both sides ran in the same jobs
(the DataLoader and the fast path of one batch size, timed in one process, epochs interleaved),
the resample is *paired*: the same jobs and the same epoch positions on both sides, so the drift
they shared cancels in the ratio.

Everything is seeded: the same data and seed give the same interval. tests/test_bootstrap.py
checks the one-level case against `scipy.stats.bootstrap` and the coverage on known distributions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
import numpy as np

from accel_choice.analyze.job_intervals import Groups, can_pair
from accel_choice.records.estimate import BOOTSTRAP, Estimate


RESAMPLES = 2000  # resamples per interval: Monte-Carlo error of a 95 % percentile bound ~1 % of the spread


def _matrix(groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """Jobs as rows of a NaN-padded matrix, and each job's count of values."""
    cleaned = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not cleaned:
        raise ValueError("no measurements to resample")
    if not all(np.isfinite(g).all() for g in cleaned):
        raise ValueError("measurements must be finite numbers")
    counts = np.array([len(g) for g in cleaned])
    matrix = np.full((len(cleaned), counts.max()), np.nan)
    for row, values in enumerate(cleaned):
        matrix[row, : len(values)] = values
    return matrix, counts


def pooled_median(groups: Groups) -> float:
    """Return the median of every value of every job: the point estimate the intervals go with."""
    matrix, _ = _matrix(groups)
    return float(np.nanmedian(matrix))


def _draw(matrix: np.ndarray, counts: np.ndarray, jobs: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The resampled values: job `jobs[b, j]`, epoch `positions[b, j, k]` scaled to that job's count."""
    chosen_counts = counts[jobs][..., None]
    index = np.minimum((positions * chosen_counts).astype(int), chosen_counts - 1)
    values = matrix[jobs[..., None], index]
    # A job with fewer values than the longest contributes only its own number of draws.
    values[np.arange(matrix.shape[1])[None, None, :] >= chosen_counts] = np.nan
    return values.reshape(values.shape[0], -1)


def _indices(jobs: int, width: int, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The drawn jobs (resamples × jobs) and the epoch positions within them, as fractions of each
    drawn job's count (resamples × jobs × width): one seed, one set of draws."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, jobs, size=(resamples, jobs)), rng.random(size=(resamples, jobs, width))


def _medians(matrix: np.ndarray, counts: np.ndarray, draws: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return np.nanmedian(_draw(matrix, counts, *draws), axis=1)


def resampled_medians(groups: Groups, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """`resamples` medians of two-level bootstrap resamples (jobs, then epochs within each)."""
    matrix, counts = _matrix(groups)
    return _medians(matrix, counts, _indices(len(counts), matrix.shape[1], resamples, seed))


METHOD = BOOTSTRAP
PAIRED = "paired percentile bootstrap: the same jobs and epochs on both sides"


def estimate_from(value: float, distribution: np.ndarray, level: float, jobs: int, method: str = METHOD) -> Estimate:
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be between 0 and 1, got {level}")
    tail = (1 - level) / 2
    low, high = np.quantile(distribution, [tail, 1 - tail])
    # The percentile interval of a median can, with very few values, miss the point by a rounding step:
    # widen it to hold the point rather than report a point outside its own interval.
    return Estimate(
        point=value, low=min(float(low), value), high=max(float(high), value), level=level, method=method, jobs=jobs
    )


def median_interval(
    groups: Groups, level: float = 0.95, resamples: int = RESAMPLES, seed: int = 0, value: float | None = None
) -> Estimate:
    """Return the pooled median of `groups` with its two-level bootstrap percentile interval.

    The pooled median of `groups` with its two-level bootstrap percentile interval; given
    `value` (another median of the same measurements, e.g. the median of the jobs' medians), that
    value with the same interval, widened where needed to hold it."""
    distribution = resampled_medians(groups, resamples, seed)
    return estimate_from(pooled_median(groups) if value is None else value, distribution, level, _jobs(groups))


def _jobs(groups: Groups) -> int:
    """The jobs that hold at least one value."""
    return sum(1 for g in groups if len(g))


def ratio_interval(
    a: Groups,
    b: Groups,
    *,
    paired: bool = False,
    level: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """median(b) / median(a) with its interval (B/A: for times, below 1 means B is faster).

    `paired`: a[j][k] and b[j][k] were timed in the same job, side by side; the resample keeps
    them together. Refused when the shapes differ (see `can_pair`).
    """
    value = pooled_median(b) / pooled_median(a)
    if paired:
        if not can_pair(a, b):
            raise ValueError("paired resampling needs the same jobs and epoch counts on both sides")
        ma, counts = _matrix(a)
        mb, _ = _matrix(b)
        draws = _indices(len(counts), ma.shape[1], resamples, seed)  # the same jobs and epochs on both sides
        distribution = _medians(mb, counts, draws) / _medians(ma, counts, draws)
        return estimate_from(value, distribution, level, len(counts), PAIRED)
    # Independent sides: different seeds, so the two resamples do not share their draws.
    distribution = resampled_medians(b, resamples, seed + 1) / resampled_medians(a, resamples, seed)
    return estimate_from(value, distribution, level, min(_jobs(a), _jobs(b)))


def repeats_to_settle(estimate: Estimate, threshold: float) -> int | None:
    """Estimate how many jobs would make the interval clear `threshold`.

    How many jobs would likely make the interval clear `threshold`, from its observed width.

    The interval's half-width shrinks about as 1/√jobs; the answer is the jobs at which it would be
    smaller than the distance from the value to `threshold` (None when the value is the threshold).
    """
    distance = abs(estimate.point - threshold)
    if distance == 0:
        return None
    half = max(estimate.point - estimate.low, estimate.high - estimate.point)
    if half <= distance:
        return estimate.jobs
    return math.ceil(estimate.jobs * (half / distance) ** 2)


def spread_floor(values: Sequence[float], coverage: float = 0.9) -> float | None:
    """Half the width of the central `coverage` of `values`, over their median: "±x" of the median.

    Applied to the sentinel's job medians it is the run's noise floor: how far the machine's own
    speed moved between jobs. None with fewer than three values (no spread to speak of).
    """
    if len(values) < 3:
        return None
    tail = (1 - coverage) / 2
    low, median, high = np.quantile(np.asarray(values, dtype=float), [tail, 0.5, 1 - tail])
    return float((high - low) / 2 / median)
