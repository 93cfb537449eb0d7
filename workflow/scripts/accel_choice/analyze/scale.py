"""The streaming study analysed (docs/scale.md): rates with intervals, which stage bounds the epoch,
where the page cache runs out, and the scale scenario with the measured reader.

A pass is timed in chunks (row groups, 64 MiB of raw reads, blocks of steps). Its rate is total
amount over total seconds, the sustained rate; its interval is the percentile interval of that
ratio with the chunks resampled in pairs (scipy.stats.bootstrap). Chunks of one pass are not
independent - a slow minute slows neighbours - so the interval says how steady the pass was, not how
a second run would land.

A comparison of two rates is decided only where the interval of their ratio, bounded by the two
intervals (the slower's high end against the faster's low end), lies wholly above 1; otherwise the
stages are "no measurable difference" apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from accel_choice.analyze.sentinel import summarize_sentinels
from accel_choice.analyze.stats import NoiseRules, off_speed, shared_cpu_reasons
from accel_choice.records.estimate import PositiveEstimate
from accel_choice.records.planner import Scenario
from accel_choice.records.scale import (
    Bottleneck,
    BusyPart,
    Rate,
    ReaderPass,
    ScaleJob,
    ScaleTable,
    SizeMeasurement,
    StepRate,
    StorageScenario,
)

CONFIDENCE = 0.95
RESAMPLES = 2000
# How a rate's interval is made, and a ratio of two rates' (Estimate.method).
CHUNKS = "percentile bootstrap: the pass's chunks, paired"
BOUND = "bound: the faster's interval over the slower's"
# A warm pass that still fetched this share of the files from storage found the page cache full.
CACHE_MISS_SHARE = 0.5


def rate(amounts: Sequence[float], seconds: Sequence[float], *, seed: int = 0) -> Rate:
    """Sum of amounts over sum of seconds, with the chunks' paired-bootstrap percentile interval."""
    a, s = np.asarray(amounts, dtype=float), np.asarray(seconds, dtype=float)
    if len(a) == 0 or len(a) != len(s) or np.any(a <= 0) or np.any(s <= 0):
        raise ValueError("a rate needs at least one chunk, each with a positive amount and seconds")
    per_s = float(a.sum() / s.sum())
    low = high = per_s
    if len(a) > 1 and np.ptp(a / s) > 0:
        from scipy import stats  # here, not at the top: the planner reads a scale record without resampling one

        result = stats.bootstrap(
            (a, s),
            lambda x, t, axis=-1: np.sum(x, axis=axis) / np.sum(t, axis=axis),
            paired=True,
            vectorized=True,
            confidence_level=CONFIDENCE,
            n_resamples=RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
        low = min(float(result.confidence_interval.low), per_s)
        high = max(float(result.confidence_interval.high), per_s)
    estimate = PositiveEstimate(point=per_s, low=low, high=high, level=CONFIDENCE, method=CHUNKS, jobs=1)
    return Rate(amount=float(a.sum()), seconds=float(s.sum()), per_s=estimate, chunks=len(a))


def scaled(r: Rate, factor: float) -> Rate:
    """Return the same pass in other units: samples to bytes (factor: bytes per sample), or back."""
    return Rate(amount=r.amount * factor, seconds=r.seconds, per_s=r.per_s.scaled(factor), chunks=r.chunks)


def slower_by(slow: Rate, fast: Rate) -> PositiveEstimate:
    """Return how many times `fast` outpaces `slow`, with the bound from both intervals."""
    s, f = slow.per_s, fast.per_s
    return PositiveEstimate(
        point=f.point / s.point, low=f.low / s.high, high=f.high / s.low, level=CONFIDENCE, method=BOUND, jobs=1
    )


def intake(step: StepRate) -> tuple[Rate, str]:
    """Return what a device takes in, in samples per second.

    What a device takes in, in samples per second: its training step's rate, or on a GPU its
    host→device copy's (a batch's features and target) where that is slower."""
    if step.copy is None:
        return step.train, "train"
    copy = scaled(step.copy, 1 / ((step.features + 1) * 4))
    return (copy, "copy") if copy.per_s.point < step.train.per_s.point else (step.train, "train")


def bottlenecks(jobs: Sequence[ScaleJob], steps: Sequence[StepRate]) -> list[Bottleneck]:
    """Find the bottleneck for every format, size, reader and device.

    For every format, size and reader (cold reads) and every device: the reader, the training step
    or (GPU) the host→device copy."""
    found = []
    for job in jobs:
        for size in job.sizes:
            for reader in (r for r in size.readers if r.cache == "cold"):
                for step in steps:
                    read, (train, device_stage) = reader.samples, intake(step)
                    slow, fast = (read, train) if read.per_s.point < train.per_s.point else (train, read)
                    by = slower_by(slow, fast)
                    found.append(
                        Bottleneck(
                            format=job.format,
                            target_gb=size.target_gb,
                            file_bytes=size.file_bytes,
                            workers=reader.workers,
                            kind=reader.kind,
                            device=step.device,
                            reader_samples_per_s=read.per_s,
                            train_samples_per_s=train.per_s.point,
                            stage="reader" if slow is read else device_stage,  # type: ignore[arg-type]
                            slower_by=by,
                            decided=by.low > 1,
                        )
                    )
    return found


def cold_verified(job: ScaleJob) -> bool:
    """Say whether every cold pass really read from storage.

    Every cold pass read at least CACHE_MISS_SHARE of its files from storage (/proc/vmstat): the
    page cache was really dropped. False also where the bytes read are unknown (recorded as 0)."""
    return all(size.cold_storage_bytes >= CACHE_MISS_SHARE * size.file_bytes for size in job.sizes)


def bend(job: ScaleJob) -> tuple[float | None, Literal["storage", "timing"]]:
    """Find the first size whose warm read no longer came from the page cache.

    The first size whose warm read no longer came from the page cache, and how that was seen: where
    the cold reads are verified cold, by a warm pass that fetched most of its files from storage
    again; otherwise only by timing, a warm read no faster than the cold one by their intervals.
    (None, ...) if every size stayed in the page cache."""
    by: Literal["storage", "timing"] = "storage" if cold_verified(job) else "timing"
    for size in job.sizes:
        if by == "storage" and size.warm_storage_bytes >= CACHE_MISS_SHARE * size.file_bytes:
            return size.target_gb, by
        if by == "timing" and size.warm_read.per_s.low <= size.cold_read.per_s.high:
            return size.target_gb, by
    return None, by


def rss_growth(job: ScaleJob) -> tuple[float, int]:
    """Return the job's peak resident set at its largest size over (and less) that at the size before it.

    A reader's memory has a ceiling - the units in flight - that a dataset of a single row group
    does not reach, so growth from the smallest size says little; growth while the data grow
    several times over, at the top, is what would show an unbounded reader."""
    first, last = (job.sizes[-2], job.sizes[-1]) if len(job.sizes) > 1 else (job.sizes[0], job.sizes[0])
    return last.peak_rss_bytes / first.peak_rss_bytes, last.peak_rss_bytes - first.peak_rss_bytes


def best_reader(jobs: Sequence[ScaleJob]) -> tuple[ScaleJob, SizeMeasurement, ReaderPass, Rate]:
    """Return the fastest cold reader at the largest size: its job, size, pass and rate in file bytes/s."""
    largest = max(size.target_gb for job in jobs for size in job.sizes)
    best = None
    for job in jobs:
        for size in (s for s in job.sizes if s.target_gb == largest):
            for reader in (r for r in size.readers if r.cache == "cold"):
                if best is None or reader.samples.per_s.point > best[2].samples.per_s.point:
                    best = (job, size, reader)
    if best is None:
        raise ValueError("no cold reader pass at the largest size")
    job, size, reader = best
    return job, size, reader, scaled(reader.samples, size.file_bytes / size.rows)


def zero_worker_gain(size: SizeMeasurement, reader: ReaderPass) -> float | None:
    """Return a cold reader's rate over the cold rate without workers (None: it is that one, or not measured)."""
    alone = [r.samples.per_s.point for r in size.readers if r.cache == "cold" and r.workers == 0]
    return reader.samples.per_s.point / alone[0] if alone and reader.workers else None


def storage_scenario(
    plan: Scenario, file_bytes_per_row: float, features: int, reader_bytes: Rate, overlapped: bool
) -> tuple[int, list[StorageScenario]]:
    """Model each device's streamed epoch of the scenario.

    Each device's streamed epoch of the scenario: its modelled compute (and, on a GPU, the copy of
    every row), and reading the scenario's rows at the measured reader rate (`file_bytes_per_row` of
    rows of `features`, scaled to the scenario's width). A reader with workers or threads overlaps
    reading with the step (`overlapped`): the epoch takes the slowest part, which bounds it; a reader
    without them reads between steps: the epoch is their sum, bound by the largest part."""
    modelled = plan.modelled
    if modelled is None:
        raise ValueError("the scenario has no modelled epochs (the planner adds them)")
    per_row = file_bytes_per_row * (plan.features + 1) / (features + 1)
    scenario_bytes = round(plan.rows * per_row)
    storage = reader_bytes.per_s.inverted(scenario_bytes)  # seconds: the interval's ends swap
    rows = []
    for device, compute, copy in (
        ("cpu", modelled.cpu_epoch_s, 0.0),
        ("gpu", modelled.gpu_epoch_s_resident, modelled.host_to_device_copy_s),
    ):
        parts = {"compute-bound": compute, "copy-bound": copy, "storage-bound": storage.point}
        bound = max(parts, key=parts.__getitem__)
        rows.append(
            StorageScenario(
                device=device,
                compute_s=compute,
                copy_s=copy,
                storage_s=storage,
                epoch_s=parts[bound] if overlapped else sum(parts.values()),
                bound=bound,  # type: ignore[arg-type]
                source="fitted" if device == "cpu" else modelled.gpu_model_source,
            )
        )
    return scenario_bytes, rows


def busy(jobs: Sequence[ScaleJob], steps: Sequence[StepRate], rules: NoiseRules) -> list[BusyPart]:
    """Return what shared the machine, flagged and kept.

    What shared the machine, flagged and kept: a whole job whose drift sentinel ran off the study's
    (its jobs of one sentinel workload) or that had steal over the limit (analyze.sentinel); a size
    with other processes' CPU or steal over the limits, or whose sentinel, timed after it, ran off its
    job's median by more than the tolerance; a step job with other processes' CPU over the limit."""
    found: dict[tuple[str, float | None], list[str]] = {}
    labelled = [(job.format, job.sentinel) for job in jobs] + [(f"step {s.device}", s.sentinel) for s in steps]
    for workload in sorted({readings.workload for _, readings in labelled}):
        summary = summarize_sentinels([(k, r) for k, r in labelled if r.workload == workload], rules)
        for row in summary.jobs:
            found.setdefault((row.job, None), []).extend(row.reasons)
    for job in jobs:
        for size, after in zip(job.sizes, job.sentinel.seconds[1:], strict=True):
            reasons = found.setdefault((job.format, size.target_gb), [])
            reasons += shared_cpu_reasons(size.foreign_cpu_share, size.steal_share, rules)
            ratio = after / job.sentinel.median_s
            if off_speed(ratio, rules):
                reasons.append(f"the sentinel timed after it ran {ratio:.2f}x its job's median")
    for step in steps:
        found[(f"step {step.device}", None)] += shared_cpu_reasons(step.foreign_cpu_share, None, rules)
    return [BusyPart(job=job, target_gb=gb, reasons=tuple(why)) for (job, gb), why in found.items() if why]


def scale_table(
    jobs: Sequence[ScaleJob], steps: Sequence[StepRate], plan: Scenario, rules: NoiseRules = NoiseRules()
) -> ScaleTable:
    """Summarise the study (records.scale.ScaleTable), what shared the machine judged by `rules`."""
    job, size, reader, reader_bytes = best_reader(jobs)
    scenario_bytes, scenario = storage_scenario(
        plan, size.file_bytes / size.rows, job.features, reader_bytes, overlapped=reader.workers > 0
    )
    largest = max((s for j in jobs for s in j.sizes), key=lambda s: s.target_gb)
    bends = [found for found in (bend(j) for j in jobs) if found[0] is not None]
    growth = [rss_growth(j) for j in jobs]
    return ScaleTable(
        bottlenecks=tuple(bottlenecks(jobs, steps)),
        best_format=job.format,
        best_workers=reader.workers,
        best_kind=reader.kind,
        sustained_gb_per_s=reader_bytes.per_s.scaled(1e-9),
        largest_gb=largest.target_gb,
        beyond_page_cache=not size.fits_page_cache,
        cache_drop=job.cache_drop,
        bend_gb=min(b for b, _ in bends) if bends else None,
        bend_by=min(bends)[1] if bends else None,
        cold_verified=all(cold_verified(j) for j in jobs),
        host_memory_bytes=job.environment.host_memory_bytes,
        peak_rss_growth=max(ratio for ratio, _ in growth),
        peak_rss_added_bytes=max(added for _, added in growth),
        scenario_bytes=scenario_bytes,
        scenario=tuple(scenario),
        fp16_storage_s=scenario_bytes / 2 / reader_bytes.per_s.point,
        workers_gain=zero_worker_gain(size, reader),
        busy=tuple(busy(jobs, steps, rules)),
        foreign_cpu_limit=rules.foreign_cpu_share,
        steal_limit=rules.steal_share,
        sentinel_tolerance=rules.sentinel_tolerance,
    )
