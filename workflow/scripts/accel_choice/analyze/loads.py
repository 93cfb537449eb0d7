"""Repeats -> medians with spread for the data path: load/convert stages per format, host↔device copies."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from accel_choice.analyze.aggregate import cell_seed, contaminated_repeats, group_by
from accel_choice.analyze import job_intervals
from accel_choice.analyze.bootstrap import median_interval
from accel_choice.records.estimate import positive
from accel_choice.analyze.stats import NoiseRules, summarize
from accel_choice.records.loads import (
    CopyCell,
    CopyTiming,
    FileLoad,
    LoadCell,
    LoadConvertJob,
    SecondsSpread,
    TransferJob,
    TransferTable,
)


def aggregate_load_convert(
    jobs: Sequence[LoadConvertJob],
    rules: NoiseRules = NoiseRules(),
) -> tuple[LoadCell, ...]:
    """Aggregate the load/convert records into one cell per (dataset, format).

    One cell per (dataset, format): each stage's median over repeats; the total as an Estimate (t on log
    job medians) with the spread of the jobs' totals.

    A file's repeats are the jobs that loaded it; a job's contamination readings (it loaded every
    file) count against each of its files."""
    if not jobs:
        raise ValueError("no load/convert records to aggregate")
    seen = [(load.dataset, load.format, job.repeat) for job in jobs for load in job.loads]
    if len(set(seen)) != len(seen):
        raise ValueError(f"a file loaded more than once in one repeat: {sorted(seen)}")
    files: dict[tuple[str, str], list[tuple[LoadConvertJob, FileLoad]]] = {}
    for job in jobs:
        for load in job.loads:
            files.setdefault((load.dataset, load.format), []).append((job, load))
    table = []
    for (dataset, fmt), unordered in sorted(files.items()):
        pairs = sorted(unordered, key=lambda pair: pair[0].repeat)
        group = [load for _, load in pairs]
        total = summarize([r.total_s for r in group], rules)
        # Each job's median pass, their geometric mean with its t interval (the jobs are the repeats).
        interval = positive(
            job_intervals.median_interval([[p.total_s for p in r.pass_stages] for r in group], rules.confidence)
        )
        first = group[0]
        table.append(
            LoadCell(
                dataset=dataset,
                format=fmt,
                repeats=len(group),
                rows=first.rows,
                file_bytes=first.file_bytes,
                tensor_bytes=first.tensor_bytes,
                read_s_median=statistics.median(r.read_s for r in group),
                to_pandas_s_median=statistics.median(r.to_pandas_s for r in group),
                to_numpy_s_median=statistics.median(r.to_numpy_s for r in group),
                to_torch_s_median=statistics.median(r.to_torch_s for r in group),
                load_s_jobs=tuple(r.read_s + r.to_pandas_s for r in group),
                convert_s_jobs=tuple(r.to_numpy_s + r.to_torch_s for r in group),
                total_s=interval,
                total_s_min=total["min"],
                total_s_max=total["max"],
                total_s_iqr=total["iqr"],
                noisy=total["noisy"],
                noise_reasons=tuple(total["noise_reasons"]),
                mb_per_s=first.file_bytes / interval.point / 1e6,
                contaminated=contaminated_repeats([job for job, _ in pairs], rules),
            )
        )
    return tuple(table)


def aggregate_transfers(jobs: Sequence[TransferJob], rules: NoiseRules = NoiseRules()) -> TransferTable:
    """Aggregate the transfer records into one row per copy.

    Per copy (what, direction, memory): median seconds over repeats with its bootstrap interval
    (jobs, then their passes), min, max, GB/s from the median; and the fixed costs, context start-up
    and pinning, with their spread."""
    if not jobs:
        raise ValueError("no transfer records to aggregate")
    devices = sorted({job.device for job in jobs})
    if len(devices) != 1:
        raise ValueError(
            f"transfer records of more than one device ({', '.join(devices)}) cannot be aggregated together"
        )
    unstarted = [job.repeat for job in jobs if job.context_startup_s is None]
    if unstarted:
        raise ValueError(
            f"transfer repeat(s) {unstarted} timed no context start-up: copies on the CPU are not "
            "transfers to aggregate"
        )
    jobs = sorted(jobs, key=lambda job: job.repeat)
    copies: list[CopyTiming] = [copy for job in jobs for copy in job.copies]
    table = []
    for (what, direction, memory), group in group_by(copies, ("what", "direction", "memory")).items():
        seconds = summarize([c.seconds for c in group])
        interval = median_interval(
            [c.passes for c in group],
            rules.confidence,
            rules.bootstrap_resamples,
            cell_seed((what, direction, memory)),
            value=seconds["median"],
        )
        table.append(
            CopyCell(
                what=what,
                direction=direction,
                memory=memory,
                bytes=group[0].bytes,
                repeats=len(group),
                seconds_jobs=tuple(c.seconds for c in group),
                seconds=interval,
                gb_per_s=group[0].bytes / seconds["median"] / 1e9,
                noisy=seconds["noisy"],
            )
        )
    startup = summarize([job.context_startup_s for job in jobs if job.context_startup_s is not None])
    pins = [job.pin_memory_s for job in jobs if job.pin_memory_s is not None]
    return TransferTable(
        device=jobs[0].device,
        copies=tuple(sorted(table, key=lambda c: (c.direction, c.memory, c.bytes))),
        context_startup_s=SecondsSpread(median=startup["median"], min=startup["min"], max=startup["max"]),
        pin_memory_s_jobs=tuple(pins),
    )
