"""Intervals from the jobs themselves: Student-t on the logarithm of each job's median.

A timing job is a process: what moves from one to the next (the machine's state, the allocator's
layout, a neighbour) moves every epoch inside it together. The jobs, not the epochs, are the
independent repeats, and with the default three of them a percentile bootstrap cannot reach past
the three job medians (a resample repeats one job 1/9 of the time), so its "95 %" interval covers
74-85 % on a drifting machine (benchmarks/calibration.py). Here each job is summarised by its median
epoch, the summaries are compared on a log scale (times are positive and their spread grows with
them: a ratio of times is a difference of logs), and the interval is Student's t with jobs - 1
degrees of freedom (Welch's for two independent runs): exact when the log job medians are normal,
and wide when the jobs are few, which is what three jobs honestly know.

The point is the geometric mean of the job medians (the median of a log-normal job effect);
a one-job cell has no interval (low = high = point, `jobs` 1): it cannot say how far the next job
would land.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import special

from accel_choice.records.estimate import JOB_T, Estimate

Groups = Sequence[Sequence[float]]  # jobs, each a list of epoch times
Outcome = Literal["a_faster", "b_faster", "no_difference"]


def job_medians(groups: Groups) -> np.ndarray:
    """Return each job's median (jobs without values left out), checked positive and finite."""
    medians = np.array([float(np.median(np.asarray(g, dtype=float))) for g in groups if len(g)])
    if not len(medians):
        raise ValueError("no measurements to summarise")
    if medians.min() <= 0 or not np.isfinite(medians).all():
        raise ValueError(f"job medians must be positive finite times, got {medians.tolist()}")
    return medians


def job_logs(groups: Groups) -> np.ndarray:
    """Return the natural logarithm of each job's median (jobs without values left out)."""
    return np.log(job_medians(groups))


METHOD = JOB_T
PAIRED = "paired t on log job medians: the per-job ratio of jobs both sides ran in"
WELCH = "Welch t on log job medians of two independent sets of jobs"
# One job, or jobs that all agree to the last digit: no interval can be told, and nothing is decided on it.
NO_SPREAD_FLAG = "one job or no spread between jobs: no interval"
NO_SPREAD = (NO_SPREAD_FLAG,)


def _t_quantile(p: float, df: float) -> float:
    """Student t's `p` quantile at `df` degrees of freedom: scipy.special's `stdtrit`, the function
    `scipy.stats.t.ppf` calls, without scipy.stats' import (a second per analysis job)."""
    return float(special.stdtrit(df, p))


def _t_estimate(center: float, se: float, df: float, level: float, jobs: int, method: str = METHOD) -> Estimate:
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be between 0 and 1, got {level}")
    if jobs < 2 or not se > 0:
        point = math.exp(center)
        return Estimate(point=point, low=point, high=point, level=level, method=method, jobs=jobs, flags=NO_SPREAD)
    half = _t_quantile(1 - (1 - level) / 2, df) * se
    return Estimate(
        point=math.exp(center),
        low=math.exp(center - half),
        high=math.exp(center + half),
        level=level,
        method=method,
        jobs=jobs,
    )


def point(groups: Groups) -> float:
    """Return the cell's point: the geometric mean of its job medians."""
    return math.exp(float(np.mean(job_logs(groups))))


def median_interval(groups: Groups, level: float = 0.95) -> Estimate:
    """Return the geometric mean of the job medians with its t interval (jobs - 1 degrees of freedom)."""
    medians = job_medians(groups)
    logs = np.log(medians)
    se = float(np.std(logs, ddof=1) / math.sqrt(len(logs))) if len(logs) > 1 else 0.0
    estimate = _t_estimate(float(np.mean(logs)), se, len(logs) - 1, level, len(logs))
    # exp(mean(log)) of equal medians can land one rounding step outside them: keep it between.
    point = min(max(estimate.point, float(medians.min())), float(medians.max()))
    return dataclasses.replace(estimate, point=point, low=min(estimate.low, point), high=max(estimate.high, point))


def ratio_interval(a: Groups, b: Groups, *, paired: bool = False, level: float = 0.95) -> Estimate:
    """B/A of the two cells' geometric-mean job medians with its t interval (B/A < 1: B is faster).

    `paired`: a[j] and b[j] ran in the same job j, interleaved, so the drift they shared cancels in
    the per-job log ratio (jobs - 1 degrees of freedom). Otherwise two independent sets of jobs:
    Welch's t on the difference of the mean logs (Welch-Satterthwaite degrees of freedom)."""
    la, lb = job_logs(a), job_logs(b)
    if paired:
        if len(la) != len(lb):
            raise ValueError("paired intervals need the same jobs on both sides")
        return paired_t(lb - la, level, PAIRED)
    jobs = min(len(la), len(lb))
    if jobs < 2:
        return _t_estimate(float(np.mean(lb) - np.mean(la)), 0.0, 1, level, jobs, WELCH)
    va, vb = np.var(la, ddof=1) / len(la), np.var(lb, ddof=1) / len(lb)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1)) if se > 0 else 1.0
    return _t_estimate(float(np.mean(lb) - np.mean(la)), se, df, level, jobs, WELCH)


def paired_t(d: Sequence[float] | np.ndarray, level: float, method: str) -> Estimate:
    """Return exp(mean d) with its t interval at `level`: `d` one log ratio a job, jobs - 1 degrees of freedom."""
    d = np.asarray(d, dtype=float)
    se = float(np.std(d, ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0
    return _t_estimate(float(np.mean(d)), se, len(d) - 1, level, len(d), method)


TABLE = "Welch t on the mean over job groups of B's and A's mean log job values"


def table_ratio(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], level: float = 0.95) -> Estimate:
    """B/A over a whole table, one figure for a shift every row shares (a slower commit slows every cell).
    `pairs[g]` are job group g's per-job values on side A and side B (a job's value: the geometric mean of the
    median epochs of the cells it timed; the jobs of a group are independent processes, the cells inside one
    job are not). Each group's difference of mean logs, the groups weighted alike; the interval is Welch's t,
    its variance the sum of every group's two variances over the groups squared, its degrees of freedom
    Welch-Satterthwaite's over all of them (so three jobs a side in each of ten groups give about 40, where one
    row has 2-4). Groups with fewer than two jobs on a side tell no spread and are left out."""
    diffs, parts, jobs = [], [], 0
    for a, b in pairs:
        la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
        if min(len(la), len(lb)) < 2:
            continue
        jobs += min(len(la), len(lb))
        diffs.append(float(lb.mean() - la.mean()))
        parts += [
            (float(np.var(la, ddof=1)) / len(la), len(la) - 1),
            (float(np.var(lb, ddof=1)) / len(lb), len(lb) - 1),
        ]
    if not diffs:
        raise ValueError("no job group with two jobs on each side: no whole-table interval")
    total = sum(v for v, _ in parts)
    se = math.sqrt(total) / len(diffs)
    df = total**2 / sum(v**2 / dof for v, dof in parts) if total > 0 else 1.0
    return _t_estimate(float(np.mean(diffs)), se, df, level, jobs, TABLE)


def can_pair(a: Groups, b: Groups) -> bool:
    """Say whether a paired comparison is possible: the same jobs with the same number of epochs on both sides."""
    return len(a) == len(b) and all(len(x) == len(y) for x, y in zip(a, b))


def contenders(candidates: Sequence[Groups], best: int, level: float = 0.95) -> int:
    """Count how many of `candidates` could have been the fastest.

    How many of `candidates` could have been the fastest: `candidates[best]` (the one picked by its point)
    and every other one not measurably slower than it at `level`. A pick among k equals is biased towards
    the luckiest, so the picked one's interval against anything else is held at the level of a family of k
    (`simultaneous_level`): benchmarks/calibration.py shows the verdict error this keeps at its level."""
    return 1 + sum(
        outcome(ratio_interval(candidates[best], other, level=level)) == "no_difference"
        for index, other in enumerate(candidates)
        if index != best
    )


def simultaneous_level(level: float, comparisons: int) -> float:
    """Return the per-comparison level that keeps `comparisons` intervals jointly at `level`.

    The per-comparison level that keeps `comparisons` intervals jointly at `level` (Bonferroni):
    a table of 20 rows at 95 % each would see some row "differ" in A/A runs about 64 % of the time."""
    if comparisons < 1:
        raise ValueError(f"comparisons must be at least 1, got {comparisons}")
    return 1 - (1 - level) / comparisons


def detectable_ratio(
    a: Groups, b: Groups, beyond: float = 1.0, level: float = 0.95, power: float = 0.8
) -> float | None:
    """Return the smallest true B/A ratio a Welch interval would put wholly above `beyond`.

    The smallest true B/A ratio of times above `beyond` that a Welch interval at `level` of jobs spread like
    `a` and `b` would put wholly above `beyond` with probability `power`: beyond · exp((t(1 - α/2) + t(power)) · se),
    on the log scale, with se and the degrees of freedom of the observed jobs (a planning figure: the spread
    itself is estimated from the jobs). None where a side has fewer than two jobs; `beyond` where nothing varied."""
    la, lb = job_logs(a), job_logs(b)
    if min(len(la), len(lb)) < 2:
        return None
    va, vb = np.var(la, ddof=1) / len(la), np.var(lb, ddof=1) / len(lb)
    se = math.sqrt(va + vb)
    if se == 0:
        return beyond
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    quantiles = _t_quantile(1 - (1 - level) / 2, df) + _t_quantile(power, df)
    return beyond * math.exp(quantiles * se)


def _pooled_spread(la: np.ndarray, lb: np.ndarray) -> float:
    """The two sides' pooled standard deviation of log job medians."""
    return math.sqrt(
        ((len(la) - 1) * np.var(la, ddof=1) + (len(lb) - 1) * np.var(lb, ddof=1)) / (len(la) + len(lb) - 2)
    )


def _jobs_for(distance: float, spread: float, level: float, power: float, most: int) -> int | None:
    """The fewest jobs a side with (t(1 - α/2) + t(power)) · spread · √(2/n) below `distance` (log scale, 2n - 2
    degrees of freedom): a two-sample t test's sample size. None past `most`, or with nothing to go on."""
    if distance <= 0 or spread == 0:
        return None
    for n in range(2, most + 1):
        quantiles = _t_quantile(1 - (1 - level) / 2, 2 * n - 2) + _t_quantile(power, 2 * n - 2)
        if quantiles * spread * math.sqrt(2 / n) < distance:
            return n
    return None


# The promise `jobs_to_settle` keeps (checked by the calibration harness, analyze.calibration.settle_rate): a
# re-run with its jobs decides rightly at least 80 % of the time when the true speedup lies at least this
# factor from the threshold; the spread it plans with is the upper SPREAD_BOUND confidence bound of the
# jobs' pooled spread, since a spread seen in three jobs is as often too small as too large.
SETTLE_AWAY, SPREAD_BOUND = 1.2, 0.8


def jobs_to_settle(
    a: Groups,
    b: Groups,
    threshold: float,
    level: float = 0.95,
    power: float = 0.8,
    most: int = 200,
    away: float = SETTLE_AWAY,
    bound: float = SPREAD_BOUND,
) -> int | None:
    """Estimate how many jobs a side would settle an undecided B/A against `threshold`.

    How many jobs a side would settle an undecided B/A against `threshold` with probability `power` when
    the true ratio lies at least `away` times from it: a two-sample t test's sample size (`_jobs_for`) for
    the distance log(`away`), planned with the one-sided `bound` upper confidence bound of the jobs' pooled
    log spread (chi-square, the pooled degrees of freedom). Not the observed distance to the threshold: that
    is the least known figure of an undecided run. None past `most` jobs, or when nothing varied."""
    la, lb = job_logs(a), job_logs(b)
    freedom = len(la) + len(lb) - 2
    if freedom < 1:
        return None
    spread = _pooled_spread(la, lb) * math.sqrt(freedom / float(special.chdtri(freedom, bound)))
    return _jobs_for(math.log(away), spread, level, power, most)


def jobs_to_detect(
    a: Groups, b: Groups, slowdown: float, beyond: float = 1.0, level: float = 0.95, power: float = 0.8, most: int = 200
) -> int | None:
    """Estimate how many jobs a side would let a comparison catch a true B/A of `slowdown`.

    How many jobs a side would let a comparison of jobs spread like `a` and `b` catch a true B/A of
    `slowdown` beyond `beyond` (the noise floor and the gate) with probability `power`. None past `most` jobs,
    or where `slowdown` does not exceed `beyond`."""
    la, lb = job_logs(a), job_logs(b)
    if len(la) + len(lb) < 3:
        return None
    return _jobs_for(math.log(slowdown) - math.log(beyond), _pooled_spread(la, lb), level, power, most)


def outcome(ratio: Estimate, noise_floor: float = 0.0) -> Outcome:
    """B/A ratio of times → who is faster, or no measurable difference.

    A difference counts only when the whole interval lies outside 1 ± `noise_floor` (the run's
    own drift, from the sentinel): an interval that includes 1, or reaches into the band the
    machine moves by itself, is "no measurable difference". So is a t estimate without an interval (one job,
    or jobs that agree to the last digit: flagged `NO_SPREAD_FLAG`): it cannot say how far the next job would land.
    """
    if NO_SPREAD_FLAG in ratio.flags:
        return "no_difference"
    if ratio.high < 1 / (1 + noise_floor):
        return "b_faster"
    if ratio.low > 1 + noise_floor:
        return "a_faster"
    return "no_difference"


def gate_fails(low: float, said: Outcome, percent: float) -> bool:
    """Apply the regression gate's rule to one B/A ratio of times.

    The regression gate's rule for one B/A ratio of times: B slower than A by more than `percent` %,
    the whole interval beyond it (`low`), and beyond the noise floor too (`said`, the outcome, is
    "a_faster"), so a difference the runs' own drift explains never fails it."""
    return said == "a_faster" and low > 1 + percent / 100
