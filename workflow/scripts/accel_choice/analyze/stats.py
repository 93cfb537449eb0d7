"""Robust summaries of repeated measurements, with an explicit noise flag, and what a record says of the
machine it ran on (contamination, job_warnings). Light on purpose: timing jobs import it (no scipy)."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from accel_choice.records.estimate import quartiles
from accel_choice.records.sentinel import SentinelReadings


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
    bad_run_share: float = 0.4  # more timing jobs flagged than this share: the run is contaminated (1 of 3 is not)


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
    """Return why a measurement shared the machine's CPU.

    Why a measurement shared the machine's CPU: other processes' cores (`foreign`) or the hypervisor's
    steal over the rules' limits; `when` is added after the figure (" during the job")."""
    reasons = []
    if foreign is not None and foreign > rules.foreign_cpu_share:
        reasons.append(f"other processes used {foreign:.2f} cores{when} (> {rules.foreign_cpu_share:g})")
    if steal is not None and steal > rules.steal_share:
        reasons.append(f"the hypervisor stole {steal:.2f} cores{when} (> {rules.steal_share:g})")
    return reasons


def off_speed(ratio: float, rules: NoiseRules) -> bool:
    """Say whether a sentinel `ratio` (a timing over its reference) is more than the tolerance off, either way."""
    return ratio > 1 + rules.sentinel_tolerance or ratio < 1 / (1 + rules.sentinel_tolerance)


def contamination(record: Any, rules: NoiseRules = NoiseRules(), threads: int | None = None) -> list[str]:
    """Return why a measurement may have shared the machine.

    Why a measurement (a training, grid or load/convert record) may have shared the machine: other
    processes' CPU during the job, or a rising load average. Empty when neither was seen. `threads`: the most
    its job ran at (a CPU job times every thread count, each record's load window the whole job); None: its own."""
    reasons = shared_cpu_reasons(record.foreign_cpu_share, None, rules, " during the job")
    # A job of T threads raises the load average by up to T − 1 more than a one-thread job: its own.
    allowed = rules.loadavg_rise + (threads or getattr(record, "threads", 1)) - 1
    rise = record.loadavg_after[0] - record.loadavg_before[0]
    if rise > allowed:
        reasons.append(f"1-min load average rose by {rise:.2f} (> {allowed:g})")
    return reasons


def job_warnings(records: Sequence[Any], sentinel: SentinelReadings | None, rules: NoiseRules) -> list[str]:
    """Return what a timing job can tell of itself as it finishes.

    What a timing job can tell of itself as it finishes, for a WARNING in its log: other processes' CPU or
    a rising load average in any of its records, the hypervisor's steal, or its own sentinel readings
    moving more than the tolerance within the job. (Whether it ran at the run's speed is known only when
    every job has run: analyze.sentinel, at aggregation.)"""
    most = max((getattr(record, "threads", 1) for record in records), default=1)
    reasons = dict.fromkeys(reason for record in records for reason in contamination(record, rules, most))
    if sentinel is not None:
        reasons.update(dict.fromkeys(shared_cpu_reasons(None, sentinel.steal_share, rules, " during the job")))
        for name, seconds in (("sentinel", sentinel.seconds), ("host sentinel", sentinel.host_seconds or ())):
            moved = max(seconds, default=1.0) / min(seconds, default=1.0)
            if off_speed(moved, rules):
                reasons[
                    f"its {name} readings moved {moved:.2f}x within the job (> {1 + rules.sentinel_tolerance:g}x)"
                ] = None
    return list(reasons)


def log_job_warnings(
    log: logging.Logger, records: Sequence[Any], sentinel: SentinelReadings | None, rules: NoiseRules
) -> None:
    """Log each of job_warnings' reasons as a WARNING line of the job's log (and so of Snakemake's output)."""
    for reason in job_warnings(records, sentinel, rules):
        log.warning("this timing job may have measured the machine, not the code: %s", reason)


def log_training_job(
    log: logging.Logger, records: Sequence[Any], sentinel: SentinelReadings | None, rules: NoiseRules
) -> None:
    """Log a training job's warnings (`log_job_warnings`), then one INFO line per variant it timed."""
    log_job_warnings(log, records, sentinel, rules)
    for r in records:
        log.info(
            "%s B=%s: epoch %.2f ms, %.0f samples/s, eval %.2f ms%s%s",
            r.name,
            r.batch_size,
            r.epoch_s * 1e3,
            r.samples_per_s,
            r.eval_s * 1e3,
            "" if r.finite else f", not finite from step {r.nonfinite_step}",
            "" if r.peak_memory_bytes is None else f", peak {r.peak_memory_bytes} bytes",
        )
