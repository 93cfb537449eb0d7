"""Repeats -> medians with spread for the training cells, the exercise-2 JSON, and the contamination flags."""

from __future__ import annotations

import statistics
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from accel_choice import records
from accel_choice.analyze.gpu_checks import cell_launch_checks
from accel_choice.analyze.job_intervals import median_interval, outcome, ratio_interval
from accel_choice.analyze import same_jobs
from accel_choice.analyze.sentinel import summarize_sentinels
from accel_choice.analyze.stats import NoiseRules, contamination, summarize
from accel_choice.io import paths
from accel_choice.records import UserInputError
from accel_choice.records.estimate import positive
from accel_choice.records.environment import Environment
from accel_choice.records.training import (
    VARIANT_KEYS,
    Contamination,
    NonFiniteRun,
    TrainingCell,
    TrainingRecord,
    TrainingTable,
    Variant,
    variant_fields,
)
from accel_choice.records.training_job import TrainingJob


def group_by(rows: Iterable[Any], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Any]]:
    """Records grouped by the values of `keys`, the groups sorted by those values."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for row in rows:
        groups[tuple(getattr(row, k) for k in keys)].append(row)
    return dict(sorted(groups.items()))


def contaminated_repeats(
    group: Sequence[Any],
    rules: NoiseRules,
    job_reasons: Mapping[str, Sequence[str]] | None = None,
    table: str | None = None,
    job_threads: Mapping[str, int] | None = None,
) -> tuple[Contamination, ...]:
    """Return the repeats of a group that shared the machine or ran at another speed.

    The repeats of a group that shared the machine or ran at another speed, each with its reasons
    (`job_reasons`: the sentinel's, by the name of the job (`job_name`) of the `table`; `job_threads`: the most
    threads each job ran at, by name, whose load average it may raise)."""
    found = []
    for r in group:
        name = job_name(r, r.repeat, table) if job_threads or job_reasons else None  # training records only
        reasons = contamination(r, rules, job_threads.get(name) if job_threads else None)
        if job_reasons:
            reasons += job_reasons.get(name, ())
        if reasons:
            found.append(Contamination(repeat=r.repeat, reasons=tuple(reasons)))
    return tuple(found)


def read_training_jobs(paths: Sequence[str]) -> list[TrainingJob]:
    """Read the timing-job files, each checked as a TrainingJob."""
    return [records.read(TrainingJob, path) for path in paths]


def job_name(variant: Variant, repeat: int, table: str | None = None) -> str:
    """Return the name of the job that timed repeat `repeat` of `variant`.

    The name of the job of `table` ("cpu", "gpu"; None: by the variant's device) that timed repeat `repeat`
    of `variant`: "rep2" on the CPU (every thread count), "bs64.rep2" on a GPU; its record's file name without ".json"."""
    table = table or ("cpu" if variant.device == "cpu" else "gpu")
    return paths.training_job(table, variant.batch_size, variant.threads, repeat)


def job_label(job: TrainingJob, table: str | None = None) -> str:
    """Return a training job's name in the sentinel and the report (`job_name`), one for all its records."""
    names = {job_name(r, r.repeat, table) for r in job.records}
    if len(names) != 1:
        raise ValueError(f"the records of one training job name {len(names)} jobs: {sorted(names)}")
    return names.pop()


def cell_seed(key: tuple[Any, ...], salt: str = "") -> int:
    """Return a bootstrap seed fixed by the cell: the same records give the same intervals on every run."""
    return zlib.crc32(repr((key, salt)).encode())


def check_training_records(measured: Sequence[TrainingRecord], rows: int) -> None:
    """Refuse a set of records that cannot be compared: different data, different start weights."""
    if not measured:
        raise ValueError("no training records to aggregate")
    bad = [r for r in measured if r.samples != rows or not all(records.to_json(r.invariants).values())]
    if bad:
        raise ValueError(
            f"{len(bad)} record(s) break an invariant, e.g. batch_size={bad[0].batch_size} loader={bad[0].loader}"
        )
    initial = {r.initial_weights_sha256 for r in measured}
    if len(initial) != 1:
        raise ValueError(f"records start from {len(initial)} different initial weights; all must share one seed")
    repeats = group_by(measured, (*VARIANT_KEYS, "repeat"))
    duplicated = [key for key, group in repeats.items() if len(group) > 1]
    if duplicated:
        raise ValueError(f"duplicate records for ({', '.join(VARIANT_KEYS)}, repeat) {duplicated[0]}")


def aggregate_training(
    measured: Sequence[TrainingRecord],
    rows: int,
    rules: NoiseRules = NoiseRules(),
    job_reasons: Mapping[str, Sequence[str]] | None = None,
    noise_floor: float | None = None,
    table: str | None = None,
    also_in_jobs: Sequence[TrainingRecord] = (),
) -> list[TrainingCell]:
    """Aggregate the training records into one cell per variant.

    One cell per variant (device, precision, placement, loader, batch size, threads): the geometric mean of
    its jobs' median epochs with its t interval (analyze.job_intervals: the jobs are the repeats), the raw
    times, the jobs' spread and flags.

    `job_reasons`: what the sentinel saw in each job, by its name (`job_name` in `table`); each cell names its
    jobs, so cells timed by the same jobs pair job by job; `noise_floor`: the run's, from the sentinel — a
    loader difference inside it is "no measurable difference". `also_in_jobs`: the other records of the same
    jobs (a GPU job's CPU beside its GPU), whose threads may raise a job's load average too."""
    check_training_records(measured, rows)
    finite = [r for r in measured if r.finite]
    job_threads: dict[str, int] = {}
    for r in (*measured, *also_in_jobs):  # a CPU job times every thread count: its load is its largest count's
        name = job_name(r, r.repeat, table)
        job_threads[name] = max(job_threads.get(name, 1), r.threads)
    cells = {}
    groups = {key: sorted(group, key=lambda r: r.repeat) for key, group in group_by(finite, VARIANT_KEYS).items()}
    for key, group in groups.items():
        epoch = summarize([r.epoch_s for r in group], rules)
        evaluation = summarize([r.eval_s for r in group], rules)
        epoch_jobs = tuple(r.epoch_s_each for r in group)
        eval_jobs = tuple(r.eval_s_each for r in group)
        epoch_ci = median_interval(epoch_jobs, rules.confidence)
        eval_ci = median_interval(eval_jobs, rules.confidence)
        first = group[0]
        peaks = [r.peak_memory_bytes for r in group if r.peak_memory_bytes is not None]
        own = [r.epoch_memory_bytes for r in group if r.epoch_memory_bytes is not None]
        startups = [r.context_startup_s for r in group if r.context_startup_s is not None]
        rehearsed = {r.rehearsal_steps for r in group}
        if len(rehearsed) != 1:  # jobs of two versions: epochs started cold in some, rehearsed in others
            raise ValueError(
                f"{first.name} B={first.batch_size}: its jobs rehearsed {sorted(rehearsed)} untimed steps before each "
                "epoch (measure.rehearsal); re-run its timing jobs with one version of the workflow"
            )
        cells[key] = dict(
            **dict(zip(VARIANT_KEYS, key)),
            grad_scaler=first.grad_scaler,
            repeats=len(group),
            jobs=tuple(job_name(r, r.repeat, table) for r in group),
            samples=first.samples,
            steps=first.steps,
            epoch_s_jobs=epoch_jobs,
            eval_s_jobs=eval_jobs,
            epoch_s=positive(epoch_ci),
            samples_per_s=positive(epoch_ci.inverted(first.samples)),
            eval_s=positive(eval_ci),
            mean_train_loss_median=_median_or_none([r.mean_train_loss for r in group]),
            eval_accuracy_median=_median_or_none([r.eval_accuracy for r in group]),
            warmup_first_over_steady_median=_median([r.warmup_first_step_s / r.warmup_steady_step_s for r in group]),
            rehearsal_steps=rehearsed.pop(),
            loadavg_max=max(max(r.loadavg_before[0], r.loadavg_after[0]) for r in group),
            noisy=epoch["noisy"],
            noise_reasons=tuple(epoch["noise_reasons"]),
            eval_noisy=evaluation["noisy"],
            same_final_weights_across_variants=all(r.same_final_weights_across_variants for r in group),
            peak_memory_bytes_max=max(peaks) if peaks else None,
            epoch_memory_bytes_max=max(own) if own else None,
            contaminated=contaminated_repeats(group, rules, job_reasons, table, job_threads),
            context_startup_s_median=_median(startups) if startups else None,
            startup_s_jobs=tuple(r.startup_s for r in group),
            graph_breaks=max((r.graph_breaks for r in group if r.graph_breaks is not None), default=None),
            **versus_fastpath(key, groups, rules, noise_floor),
            **versus_reference(group, rules),
            **cell_launch_checks(group, rules),
        )
    table = [TrainingCell(**c) for c in cells.values()]
    return sorted(
        table, key=lambda c: (c.device, c.precision, c.placement, c.batch_size, c.threads, c.compiled, c.loader)
    )


def versus_fastpath(
    key: tuple[Any, ...],
    groups: Mapping[tuple[Any, ...], Sequence[TrainingRecord]],
    rules: NoiseRules,
    floor: float | None,
) -> dict[str, Any]:
    """Return this cell's epoch over the fast path's, with a paired interval.

    This cell's epoch over the fast path's (same device, precision, placement, B): for the
    DataLoader its per-sample Python overhead as a ratio, with a paired interval (both loaders ran
    in the same jobs, epochs interleaved: the per-job ratio, round by round (same_jobs.alone), cancels the
    drift they shared) and the outcome it supports."""
    base = groups.get(tuple("fastpath" if name == "loader" else value for name, value in zip(VARIANT_KEYS, key)))
    if not base:
        return {"epoch_s_over_fastpath": None, "versus_fastpath": None}
    mine = groups[key]
    # Pair the jobs both loaders ran in (the same repeats).
    repeats = sorted({r.repeat for r in mine} & {r.repeat for r in base})
    a = [next(r.epoch_s_each for r in base if r.repeat == rep) for rep in repeats]
    b = [next(r.epoch_s_each for r in mine if r.repeat == rep) for rep in repeats]
    if not repeats:
        a, b = [r.epoch_s_each for r in base], [r.epoch_s_each for r in mine]
    ratio = same_jobs.alone(a, b, rules.confidence) if repeats else ratio_interval(a, b, level=rules.confidence)
    said = outcome(ratio, floor or 0.0)
    return {
        "epoch_s_over_fastpath": positive(ratio),
        "versus_fastpath": {"a_faster": "slower", "b_faster": "faster", "no_difference": "no_difference"}[said],
    }


def versus_reference(group: Sequence[TrainingRecord], rules: NoiseRules) -> dict[str, Any]:
    """Return the cell's epoch over its plain-loop reference, with a paired interval.

    The cell's epoch over its plain-loop reference (measure.reference) with a paired interval: each job's
    median epoch over the reference epoch timed in the same job, so the drift they shared cancels. None
    where a job of the cell timed no reference."""
    if any(r.reference_epoch_s is None for r in group):
        return {}
    reference = tuple(r.reference_epoch_s for r in group)
    ratio = ratio_interval(
        [(s,) for s in reference], [r.epoch_s_each for r in group], paired=True, level=rules.confidence
    )
    return {"reference_s_jobs": reference, "epoch_s_over_reference": positive(ratio)}


def _median(values: Sequence[float]) -> float:
    return summarize(values)["median"]


def _median_or_none(values: Sequence[float | None]) -> float | None:
    finite = [v for v in values if v is not None]
    return _median(finite) if finite else None


def training_table(
    jobs: Sequence[TrainingJob], rows: int, rules: NoiseRules, environment: Environment, table: str | None = None
) -> TrainingTable:
    """Build the training table of `table`.

    tables/{cpu,gpu}_training.json (`table`: "cpu", "gpu"; None: by device): the cells of the finite runs,
    the runs left out of them, and the run's sentinel (its jobs' flags go into the cells' `contaminated`, its
    floor into outcomes)."""
    if not jobs:
        raise ValueError("no training jobs to aggregate")
    labels = [job_label(job, table) for job in jobs]
    shared = sorted({label for label in labels if labels.count(label) > 1})
    if shared:  # cells of one name pair job by job: two processes must never share one
        raise ValueError(
            f"{len(jobs)} training jobs share the name(s) {', '.join(shared)}: CPU jobs of a run before training-job "
            "version 14 timed one thread count each, and this version cannot pair their cells"
        )
    sentinel = summarize_sentinels(list(zip(labels, (job.sentinel for job in jobs))), rules)
    reasons = {row.job: row.reasons for row in sentinel.jobs}
    measured = [record for job in jobs for record in job.records]
    if not any(r.finite for r in measured):
        steps = sorted({r.nonfinite_step for r in measured if r.nonfinite_step is not None})
        raise UserInputError(
            f"every one of the {len(measured)} timed runs went non-finite (the loss or the weights NaN/inf, from "
            f"step {steps[0] if steps else '?'} on at the earliest), so no cell can be made; check model.factory, "
            "model.lr and the data"
        )
    beside = [record for job in jobs for record in job.beside]  # a GPU job's CPU: cells of their own, same job names
    return TrainingTable(
        table=tuple(aggregate_training(measured, rows, rules, reasons, sentinel.noise_floor, table, beside)),
        beside=tuple(aggregate_training(beside, rows, rules, reasons, sentinel.noise_floor, table, measured))
        if beside
        else (),
        non_finite=non_finite_runs(measured + beside),
        sentinel=sentinel,
        host_memory_bytes=smallest_host_memory(job.environment.host_memory_bytes for job in jobs),
        environment=environment,
    )


def smallest_host_memory(memories: Iterable[int | None]) -> int | None:
    """Return the smallest host memory among the nodes that measured.

    The memory a judgement may count on from the nodes that measured: the smallest node's total
    memory; None where any node's is unknown, or there is none."""
    values = list(memories)
    known = [memory for memory in values if memory is not None]
    return min(known) if values and len(known) == len(values) else None


def non_finite_runs(measured: Sequence[TrainingRecord]) -> tuple[NonFiniteRun, ...]:
    """Return the runs left out of the medians because a loss or the weights went NaN/inf."""
    return tuple(
        NonFiniteRun(
            **variant_fields(r),
            grad_scaler=r.grad_scaler,
            repeat=r.repeat,
            nonfinite_step=r.nonfinite_step,
            final_loss=r.final_loss,
            mean_train_loss=r.mean_train_loss,
        )
        for r in measured
        if not r.finite
    )


def exercise2_json(table: Sequence[TrainingCell], loader: str = "dataloader") -> list[dict[str, Any]]:
    """Return the specification's exercise-2 record for the DataLoader path.

    The specification's exercise-2 record shape, for the DataLoader path (the textbook's format,
    unversioned), eager, at the smallest thread count measured (the textbook's single configuration).

    Its contract is the exercise's: the runs' epoch times (each job's median epoch) and *their* median,
    `statistics.median(epoch_s_runs)`, with samples per second from that median. The cell's own
    `epoch_s.point` is the geometric mean of the jobs' medians (the report's), which differs."""
    threads = next((cell.threads for cell in table if cell.loader == loader), None)  # the table is sorted by threads
    rows = []
    for cell in table:
        if cell.loader == loader and cell.threads == threads and not cell.compiled:
            median = statistics.median(cell.epoch_s_runs)
            rows.append(
                {
                    "batch_size": cell.batch_size,
                    "samples": cell.samples,
                    "epoch_s_runs": list(cell.epoch_s_runs),
                    "epoch_s_median": median,
                    "samples_per_s": cell.samples / median,
                }
            )
    return rows
