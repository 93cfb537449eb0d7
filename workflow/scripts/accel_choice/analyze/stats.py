"""Robust summaries of repeated measurements, with an explicit noise flag."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from accel_choice.records.estimate import quartiles


@dataclass(frozen=True, kw_only=True)
class NoiseRules:
    """When a cell of repeats is flagged noisy and a repeat busy: the config's `aggregate` mapping,
    passed to every rule that flags as one param (`noise`). The defaults are the schema's
    (tests/test_stats.py checks they agree)."""

    noise_iqr_ratio: float = 0.10  # a cell is noisy when IQR/median exceeds this
    outlier_factor: float = 2.0  # ... or when a repeat exceeds this × the median
    foreign_cpu_share: float = 0.25  # a repeat is busy when other processes used more cores than this
    loadavg_rise: float = 0.5  # ... or when the 1-minute load average rose by more than this
    sentinel_tolerance: float = 0.25  # ... or when its sentinel ran more than this fraction off the run's median
    steal_share: float = 0.1  # ... or when the hypervisor stole more cores than this during its job
    confidence: float = 0.95  # level of every interval
    bootstrap_resamples: int = 2000  # resamples per bootstrap interval (Northstar, copies, the planner's refits)
    bad_run_share: float = 0.25  # more timing jobs flagged than this share: the run is contaminated


class Summary(TypedDict):
    n: int
    median: float
    min: float
    max: float
    q1: float
    q3: float
    iqr: float
    iqr_over_median: float
    max_over_median: float
    noisy: bool
    noise_reasons: list[str]


def summarize(values: Sequence[float], rules: NoiseRules = NoiseRules()) -> Summary:
    """Median, spread and a noise verdict for one cell of repeats.

    A cell is noisy when IQR/median exceeds `rules.noise_iqr_ratio` or any repeat is more
    than `rules.outlier_factor` × the median; the reasons are kept so the report can say why.
    """
    if not values:
        raise ValueError("cannot summarise an empty list of measurements")
    median = statistics.median(values)
    q1, q3 = quartiles(values)
    iqr = q3 - q1
    iqr_ratio = iqr / median if median > 0 else float("inf")
    max_ratio = max(values) / median if median > 0 else float("inf")
    reasons = []
    if iqr_ratio > rules.noise_iqr_ratio:
        reasons.append(f"IQR/median {iqr_ratio:.1%} > {rules.noise_iqr_ratio:.0%}")
    if max_ratio > rules.outlier_factor:
        reasons.append(f"a repeat is {max_ratio:.2f}x the median (> {rules.outlier_factor:g}x)")
    return Summary(
        n=len(values),
        median=median,
        min=min(values),
        max=max(values),
        q1=q1,
        q3=q3,
        iqr=iqr,
        iqr_over_median=iqr_ratio,
        max_over_median=max_ratio,
        noisy=bool(reasons),
        noise_reasons=reasons,
    )


def shared_cpu_reasons(foreign: float | None, steal: float | None, rules: NoiseRules, when: str = "") -> list[str]:
    """Why a measurement shared the machine's CPU: other processes' cores (`foreign`) or the hypervisor's
    steal over the rules' limits; `when` is added after the figure (" during the job")."""
    reasons = []
    if foreign is not None and foreign > rules.foreign_cpu_share:
        reasons.append(f"other processes used {foreign:.2f} cores{when} (> {rules.foreign_cpu_share:g})")
    if steal is not None and steal > rules.steal_share:
        reasons.append(f"the hypervisor stole {steal:.2f} cores{when} (> {rules.steal_share:g})")
    return reasons


def off_speed(ratio: float, rules: NoiseRules) -> bool:
    """A sentinel `ratio` (a timing over its reference) more than the tolerance off, either way."""
    return ratio > 1 + rules.sentinel_tolerance or ratio < 1 / (1 + rules.sentinel_tolerance)
