"""Matching two results folders' rows: the training variant as the key, ratios B/A with their t intervals
(analyze.job_intervals: Welch on log job medians, every ratio of the table one family held together at the
tables' level) and an outcome (B faster, A faster, no measurable difference) decided against the two runs'
noise floors, which side is faster in words, and the keys where environments and configs differ.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from accel_choice import records
from accel_choice.analyze import row_relative, same_jobs
from accel_choice.analyze.job_intervals import (
    detectable_ratio,
    jobs_to_detect,
    outcome,
    ratio_interval,
    simultaneous_level,
)
from accel_choice.records.comparison import ComparisonRow, FullPathComparison, RateComparison, TimeComparison
from accel_choice.records.estimate import Estimate
from accel_choice.records.loads import SecondsSpread
from accel_choice.io import envinfo
from accel_choice.io.results_folder import ResultsFolder
from accel_choice.records.training import VARIANT_KEYS, TrainingCell
from accel_choice.records.fullpath import FullPathRow

PREFERRED_FORMAT = "parquet"
# Times with per-job data in both cells: each gets an interval of its ratio and an outcome.
TIME_METRICS = ("epoch_s", "eval_s")
METRIC_NAMES = {"epoch_s": "epoch time", "eval_s": "eval time"}
OUTCOME_WORDS = {"b_faster": "B faster", "a_faster": "A faster", "no_difference": "no measurable difference"}
# The slowdown a design is sized for: how many repeats a side would catch B this much slower (80 % power).
SIZED_FOR = 1.10
# A row over the rest of its job where another cell of the job got measurably faster in B: nothing decided on it.
REST_OF_JOB_MOVED = "the rest of its job moved"
NO_INTERVAL = "no interval"  # the full path: sums of medians, nothing to resample
# collect_env fields worth a row of their own; the quick record covers the rest.
COLLECT_ENV_KEYS = (
    "torch_version",
    "cuda_compiled_version",
    "cuda_runtime_version",
    "nvidia_gpu_models",
    "nvidia_driver_version",
    "cudnn_version",
    "os",
    "is_cuda_available",
)


# ---------------------------------------------------------------- matching rows


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """Rows by batch size, CPU first, then every other variant key: a total order, so two runs of the same
    comparison list their rows alike (without threads and compiled the order of such ties followed the
    hashing of a set, which changes from one process to the next)."""
    row = dict(zip(VARIANT_KEYS, key))
    return (
        row["batch_size"],
        row["device"] != "cpu",
        str(row["device"]),
        str(row["precision"]),
        str(row["placement"]),
        str(row["loader"]),
        row["threads"],
        row["compiled"],
    )


def choose_full_path_format(a: ResultsFolder, b: ResultsFolder) -> str | None:
    common = {r.format for r in a.full_path} & {r.format for r in b.full_path}
    if PREFERRED_FORMAT in common:
        return PREFERRED_FORMAT
    return min(common) if common else None


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not a or not math.isfinite(b / a):
        return None
    return b / a


def table_level(ta: TrainingCell, tb: TrainingCell) -> float:
    """Return the level the whole table's ratios hold at together.

    The level the whole table's ratios hold at together: the tables' `confidence` (the higher one where the
    sides differ)."""
    return max(ta.confidence, tb.confidence)


def family_size(a: ResultsFolder, b: ResultsFolder) -> int:
    """Count the ratios one comparison states with an interval.

    The ratios one comparison states with an interval: every time metric of every row measured on both
    sides. They are one family: at 95 % each, some row of a 20-row A/A table would "differ" most of the time."""
    both = {r.key for r in a.training} & {r.key for r in b.training}
    return max(1, len(both) * len(TIME_METRICS))


def row_floor(a: ResultsFolder, b: ResultsFolder, device: str) -> float:
    """Return the larger of the two sides' sentinel noise floors for a row of `device` (0 when neither has one)."""
    return max((floor for floor in (a.noise_floor(device), b.noise_floor(device)) if floor is not None), default=0.0)


def time_ratio(name: str, ta: TrainingCell, tb: TrainingCell, floor: float, level: float) -> tuple[Estimate, str]:
    """Return B/A of the geometric-mean job medians of `{name}_jobs` with its Welch t interval.

    B/A of the geometric-mean job medians of `{name}_jobs` with its Welch t interval (two runs, no job
    shared) at `level` (the row's share of the family's); and the outcome in words."""
    estimate = ratio_interval(getattr(ta, f"{name}_jobs"), getattr(tb, f"{name}_jobs"), level=level)
    return estimate, OUTCOME_WORDS[outcome(estimate, floor)]


def _rate_ratio(epoch: Estimate, ta: TrainingCell, tb: TrainingCell) -> Estimate:
    """samples/s B/A from the epoch-time ratio: samples/s is samples over the median epoch, so its ratio is the
    ratio of the samples over the epoch ratio, and the interval's ends swap."""
    return epoch.inverted(tb.samples / ta.samples)


def time_wording(a: float | None, b: float | None, label_a: str, label_b: str) -> str:
    """Which side is faster for a pair of times, as a sentence fragment without a ratio to invert."""
    if a is None or b is None:
        present = [label for label, value in ((label_a, a), (label_b, b)) if value is not None]
        return f"only in {present[0]}" if present else ""
    if a == b:
        return "same median"
    faster, slower, factor = (label_b, label_a, a / b) if b < a else (label_a, label_b, b / a)
    shown = f"{factor:.3g}" if factor >= 1.005 else f"{factor:.4f}"  # never "1× faster"
    return f"{faster} {shown}× faster than {slower}"


def comparison_rows(
    a: ResultsFolder, b: ResultsFolder, fmt: str | None, gate: float = 0.0, family: int | None = None
) -> list[ComparisonRow]:
    """Return one comparison row per training variant of either side.

    One row per training variant of either side; `gate`: the regression gate's percent (0 without one),
    which with the row's noise floor sets what a slowdown must exceed to be caught (`detectable_ratio`)."""
    train_a = {r.key: r for r in a.training}
    train_b = {r.key: r for r in b.training}
    path_a = {r.key: r for r in a.full_path if r.format == fmt}
    path_b = {r.key: r for r in b.full_path if r.format == fmt}
    keys = sorted(set(train_a) | set(train_b), key=_sort_key)
    family = family_size(a, b) if family is None else family
    in_job = in_job_quotients(train_a, train_b, [k for k in keys if k in train_a and k in train_b])
    rows = []
    for key in keys:
        ta, tb = train_a.get(key), train_b.get(key)
        variant = dict(zip(VARIANT_KEYS, key))
        floor = row_floor(a, b, variant["device"]) if ta and tb else None
        path = _full_path(path_a.get(key), path_b.get(key), fmt, a.label, b.label)
        rows.append(_row(variant, ta, tb, floor, family, path, a.label, b.label, gate, (key, in_job)))
    return rows


def in_job_quotients(
    train_a: dict[Any, TrainingCell], train_b: dict[Any, TrainingCell], both: list[Any]
) -> dict[tuple[str, str], row_relative.Quotients]:
    """Return, per time metric and device, the rows over the rest of their job.

    Per time metric and device, the rows over the rest of their job (analyze.row_relative): the cells grouped by
    the jobs that timed them on each side and by thread count (a CPU job times every thread count, batch size and
    loader, a GPU job every precision and placement of one batch size). Each job group's rows get their own prior
    (row_relative.fit): two threads spread unlike one, a GPU's cells unlike a CPU's. A group with an empty job on
    a side (a non-finite run left out) has no quotient."""
    groups: dict[tuple[Any, Any, str, int], list[Any]] = defaultdict(list)
    for key in both:
        ca, cb = train_a[key], train_b[key]
        if all(ca.epoch_s_jobs) and all(cb.epoch_s_jobs) and all(ca.eval_s_jobs) and all(cb.eval_s_jobs):
            groups[(ca.jobs, cb.jobs, ca.device, ca.threads)].append(key)
    found = {}
    for device in {device for _, _, device, _ in groups}:
        mine = [members for (_, _, d, _), members in groups.items() if d == device]
        for name in TIME_METRICS:
            found[(name, device)] = row_relative.fit(
                [
                    (
                        members,
                        same_jobs.job_times([train_a[k] for k in members], name),
                        same_jobs.job_times([train_b[k] for k in members], name),
                    )
                    for members in mine
                ]
            )
    return found


def _time(
    name: str,
    ta: TrainingCell | None,
    tb: TrainingCell | None,
    floor: float,
    level: float | None,
    gate: float,
    in_job: tuple[Any, row_relative.Quotients | None] = (None, None),
) -> TimeComparison:
    """One time of a row: the sides' estimates; where both sides have the cell, the ratio B/A with its interval
    and outcome, and the slowdown of B the row would catch with 80 % power beyond the noise floor and the gate,
    with the repeats a side that would catch one of SIZED_FOR. Then the same over the rest of its job (`in_job`:
    the row's key and its metric's quotients), decided against the gate alone: the machine's own change, which
    the noise floor stands for, cancels in it."""
    sides = {"a": getattr(ta, name) if ta else None, "b": getattr(tb, name) if tb else None}
    if ta is None or tb is None or level is None:
        return TimeComparison(**sides)
    estimate, words = time_ratio(name, ta, tb, floor, level)
    jobs = (getattr(ta, f"{name}_jobs"), getattr(tb, f"{name}_jobs"))
    beyond = 1 + max(floor, gate / 100)
    return TimeComparison(
        **sides,
        ratio=estimate,
        outcome=words,
        detectable_ratio=detectable_ratio(*jobs, beyond, level),
        jobs_to_catch=jobs_to_detect(*jobs, SIZED_FOR, beyond, level),
        **_in_job(*in_job, level, gate),
    )


def _in_job(key: Any, quotients: row_relative.Quotients | None, level: float, gate: float) -> dict[str, Any]:
    """TimeComparison's `in_job` fields for row `key` (none where its job group gives no quotient)."""
    ratio = quotients.ratio(key, level) if quotients else None
    if ratio is None:
        return {}
    moved = row_relative.REFERENCE_MOVED in ratio.flags
    return {
        "in_job": ratio,
        "in_job_outcome": REST_OF_JOB_MOVED if moved else OUTCOME_WORDS[outcome(ratio)],
        "in_job_detectable_ratio": quotients.detectable(key, 1 + gate / 100, level),  # type: ignore[union-attr]
    }


def _row(
    variant: dict[str, Any],
    ta: TrainingCell | None,
    tb: TrainingCell | None,
    floor: float | None,
    family: int,
    path: FullPathComparison,
    label_a: str,
    label_b: str,
    gate: float = 0.0,
    in_job: tuple[Any, dict[tuple[str, str], row_relative.Quotients]] | None = None,
) -> ComparisonRow:
    both = ta is not None and tb is not None
    joint = table_level(ta, tb) if both else None  # type: ignore[arg-type]
    level = simultaneous_level(joint, family) if joint else None
    key, quotients = in_job if in_job else (None, {})
    device = variant["device"]
    epoch = _time("epoch_s", ta, tb, floor or 0.0, level, gate, (key, quotients.get(("epoch_s", device))))
    rate = RateComparison(
        a=ta.samples_per_s if ta else None,
        b=tb.samples_per_s if tb else None,
        ratio=_rate_ratio(epoch.ratio, ta, tb) if both and epoch.ratio else None,  # type: ignore[arg-type]
    )
    return ComparisonRow(
        **variant,
        present="both" if both else "a_only" if ta else "b_only",
        confidence=level,
        family_confidence=joint,
        family=family if both else None,
        noise_floor=floor,
        epoch_s=epoch,
        eval_s=_time("eval_s", ta, tb, floor or 0.0, level, gate, (key, quotients.get(("eval_s", device)))),
        samples_per_s=rate,
        epoch_comparison=time_wording(
            ta.epoch_s.point if ta else None, tb.epoch_s.point if tb else None, label_a, label_b
        ),
        noisy_a=ta.noisy if ta else None,
        noisy_b=tb.noisy if tb else None,
        full_path=path,
    )


def _full_path(
    pa: FullPathRow | None, pb: FullPathRow | None, fmt: str | None, label_a: str, label_b: str
) -> FullPathComparison:
    """The full path per epoch: sums of medians with the sums of the parts' min–max, no per-job data, so its
    ratio has no interval and its outcome says so ("no interval") rather than deciding."""
    ratio = _ratio(pa.total_s if pa else None, pb.total_s if pb else None)
    return FullPathComparison(
        format=fmt,
        a=SecondsSpread(median=pa.total_s, min=pa.total_min_s, max=pa.total_max_s) if pa else None,
        b=SecondsSpread(median=pb.total_s, min=pb.total_min_s, max=pb.total_max_s) if pb else None,
        ratio=ratio,
        outcome=NO_INTERVAL if ratio is not None else None,
        startup_s_a=pa.startup_s if pa else None,
        startup_s_b=pb.startup_s if pb else None,
        comparison=time_wording(pa.total_s if pa else None, pb.total_s if pb else None, label_a, label_b),
    )


def fastest_full_path(a: ResultsFolder, b: ResultsFolder) -> dict[str, Any]:
    """Return each side's fastest full path per epoch over every format and variant (the laptop-vs-server question)."""
    best = {side: min(folder.full_path, key=lambda r: r.total_s, default=None) for side, folder in (("a", a), ("b", b))}
    summary: dict[str, Any] = {
        side: None
        if row is None
        else {
            "variant": row.name,
            "format": row.format,
            "batch_size": row.batch_size,
            "total_s": row.total_s,
            "startup_s": row.startup_s,
        }
        for side, row in best.items()
    }
    totals = [row.total_s if row else None for row in best.values()]
    summary["ratio_b_over_a"] = _ratio(*totals)
    summary["comparison"] = time_wording(*totals, a.label, b.label)
    return summary


# ---------------------------------------------------------------- differences


def environment_record(folder: ResultsFolder) -> dict[str, Any]:
    collected = folder.environment.collect_env
    return {
        "quick": {k: v for k, v in records.to_json(folder.environment.quick).items() if k not in records.HEADER},
        "collect_env": {key: collected.get(key) for key in COLLECT_ENV_KEYS} | {"cpu_model": _lscpu_model(collected)},
        "training_threads": sorted({row.threads for row in folder.training}),
    }


def _lscpu_model(collected: dict[str, Any]) -> str | None:
    for line in str(collected.get("cpu_info") or "").splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return None


def _difference_rows(records: tuple[dict[str, Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """Keys whose values differ, with each side's value (None where a side lacks the key)."""
    flat = [envinfo.flatten(record) for record in records]
    return [{"key": key, "a": flat[0].get(key), "b": flat[1].get(key)} for key in envinfo.differences(list(records))]


def environment_differences(a: ResultsFolder, b: ResultsFolder) -> list[dict[str, Any]]:
    return _difference_rows((environment_record(a), environment_record(b)))


def config_differences(a: ResultsFolder, b: ResultsFolder) -> list[dict[str, Any]]:
    return _difference_rows((a.config, b.config))
