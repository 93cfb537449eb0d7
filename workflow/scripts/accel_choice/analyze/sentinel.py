"""The run's machine speed from its timing jobs' sentinels: which jobs ran at another speed, and the
noise floor below which a difference in this run is not evidence."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from accel_choice.analyze.bootstrap import spread_floor
from accel_choice.analyze.stats import NoiseRules, off_speed, shared_cpu_reasons
from accel_choice.records.sentinel import SentinelJob, SentinelReadings, SentinelSummary


def job_reasons(
    readings: SentinelReadings, run_median_s: float, rules: NoiseRules, host_run_median_s: float | None = None
) -> list[str]:
    """Return why a job's machine was not the run's machine.

    Why a job's machine was not the run's machine: its sentinel (or a GPU job's host sentinel) off the run's
    median by more than the tolerance (either way), or the hypervisor taking CPU from it."""
    reasons = []
    ratio = readings.median_s / run_median_s
    if off_speed(ratio, rules):
        reasons.append(f"machine speed changed during this job (sentinel {ratio:.2f}x the run median)")
    host = readings.host_median_s
    if host is not None and host_run_median_s and off_speed(host / host_run_median_s, rules):
        reasons.append(
            f"the host's speed changed during this job (host sentinel {host / host_run_median_s:.2f}x the run median)"
        )
    reasons += shared_cpu_reasons(None, readings.steal_share, rules, " during the job")
    gpu_reasons = sorted({r for state in (readings.gpu_start, readings.gpu_end) if state for r in state.reasons})
    if gpu_reasons:
        reasons.append(f"GPU clocks held down ({', '.join(gpu_reasons)})")
    return reasons


def summarize_sentinels(jobs: Sequence[tuple[str, SentinelReadings]], rules: NoiseRules) -> SentinelSummary:
    """Summarise the run's sentinel.

    The run's sentinel: its median over the jobs, each job's ratio and flags, the noise floor.

    `jobs` are (label, readings) of the timing jobs of one device and one workload; the floor is
    taken over the jobs that were not flagged, so one planted slowdown does not widen it for all.
    """
    if not jobs:
        raise ValueError("no sentinel readings to summarise")
    workloads = {readings.workload for _, readings in jobs}
    if len(workloads) != 1:
        raise ValueError(f"sentinels of different workloads cannot be compared: {sorted(workloads)}")
    run_median = statistics.median(readings.median_s for _, readings in jobs)
    hosts = [readings.host_median_s for _, readings in jobs if readings.host_median_s is not None]
    host_median = statistics.median(hosts) if hosts else None
    rows = []
    for label, readings in jobs:
        rows.append(
            SentinelJob(
                job=label,
                median_s=readings.median_s,
                over_run_median=readings.median_s / run_median,
                steal_share=readings.steal_share,
                reasons=tuple(job_reasons(readings, run_median, rules, host_median)),
            )
        )
    clean = [row.median_s for row in rows if not row.reasons]
    return SentinelSummary(
        workload=workloads.pop(),
        run_median_s=run_median,
        noise_floor=spread_floor(clean),
        tolerance=rules.sentinel_tolerance,
        flagged=sum(bool(row.reasons) for row in rows),
        jobs=tuple(rows),
        confidence=rules.confidence,
        host_run_median_s=host_median,
    )
