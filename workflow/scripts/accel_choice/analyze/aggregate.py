"""Repeats -> medians with spread for the training cells, the exercise-2 JSON, and the contamination flags."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from accel_choice import records
from accel_choice.analyze.stats import NoiseRules, summarize
from accel_choice.records.environment import Environment
from accel_choice.records.training import (
    VARIANT_KEYS,
    Contamination,
    NonFiniteRun,
    TrainingCell,
    TrainingJob,
    TrainingRecord,
    TrainingTable,
    variant_fields,
)


def group_by(rows: Iterable[Any], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Any]]:
    """Records grouped by the values of `keys`, the groups sorted by those values."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for row in rows:
        groups[tuple(getattr(row, k) for k in keys)].append(row)
    return dict(sorted(groups.items()))


def contamination(record: Any, rules: NoiseRules = NoiseRules()) -> list[str]:
    """Why a measurement (a training, grid or load/convert record) may have shared the machine: other
    processes' CPU during the job, or a rising load average. Empty when neither was seen."""
    reasons = []
    share = record.foreign_cpu_share
    if share is not None and share > rules.foreign_cpu_share:
        reasons.append(f"other processes used {share:.2f} cores during the job (> {rules.foreign_cpu_share:g})")
    rise = record.loadavg_after[0] - record.loadavg_before[0]
    if rise > rules.loadavg_rise:
        reasons.append(f"1-min load average rose by {rise:.2f} (> {rules.loadavg_rise:g})")
    return reasons


def contaminated_repeats(group: Sequence[Any], rules: NoiseRules) -> tuple[Contamination, ...]:
    """The repeats of a group that shared the machine, each with its reasons."""
    return tuple(
        Contamination(repeat=r.repeat, reasons=tuple(reasons)) for r in group if (reasons := contamination(r, rules))
    )


def read_training_records(paths: Sequence[str]) -> list[TrainingRecord]:
    """Every record of the given timing-job files (each file checked as a TrainingJob)."""
    return [record for path in paths for record in records.read(TrainingJob, path).records]


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
) -> list[TrainingCell]:
    """One cell per variant (device, precision, placement, loader, batch size): epoch and eval
    time summaries over the finite repeats, throughput from the median."""
    check_training_records(measured, rows)
    finite = [r for r in measured if r.finite]
    cells = {}
    for key, group in group_by(finite, VARIANT_KEYS).items():
        group = sorted(group, key=lambda r: r.repeat)
        epoch = summarize([r.epoch_s for r in group], rules)
        evaluation = summarize([r.eval_s for r in group], rules)
        first = group[0]
        peaks = [r.peak_memory_bytes for r in group if r.peak_memory_bytes is not None]
        startups = [r.context_startup_s for r in group if r.context_startup_s is not None]
        cells[key] = dict(
            **dict(zip(VARIANT_KEYS, key)),
            grad_scaler=first.grad_scaler,
            repeats=len(group),
            samples=first.samples,
            steps=first.steps,
            epoch_s_runs=tuple(r.epoch_s for r in group),
            epoch_s_median=epoch["median"],
            epoch_s_min=epoch["min"],
            epoch_s_max=epoch["max"],
            epoch_s_iqr=epoch["iqr"],
            epoch_s_iqr_over_median=epoch["iqr_over_median"],
            samples_per_s=first.samples / epoch["median"],
            samples_per_s_min=first.samples / epoch["max"],
            samples_per_s_max=first.samples / epoch["min"],
            step_us_median=epoch["median"] / first.steps * 1e6,
            eval_s_median=evaluation["median"],
            eval_s_min=evaluation["min"],
            eval_s_max=evaluation["max"],
            eval_s_iqr=evaluation["iqr"],
            mean_train_loss_median=_median_or_none([r.mean_train_loss for r in group]),
            eval_accuracy_median=_median_or_none([r.eval_accuracy for r in group]),
            warmup_first_over_steady_median=_median([r.warmup_first_step_s / r.warmup_steady_step_s for r in group]),
            threads=tuple(sorted({r.threads for r in group})),
            loadavg_max=max(max(r.loadavg_before[0], r.loadavg_after[0]) for r in group),
            noisy=epoch["noisy"],
            noise_reasons=tuple(epoch["noise_reasons"]),
            eval_noisy=evaluation["noisy"],
            same_final_weights_across_variants=all(r.same_final_weights_across_variants for r in group),
            peak_memory_bytes_max=max(peaks) if peaks else None,
            contaminated=contaminated_repeats(group, rules),
            context_startup_s_median=_median(startups) if startups else None,
        )
    # Epoch time over the fast path's for the same device, precision, placement and batch size:
    # for the DataLoader, its per-sample Python overhead as a ratio.
    fast = {
        (c["device"], c["precision"], c["placement"], c["batch_size"]): c["epoch_s_median"]
        for c in cells.values()
        if c["loader"] == "fastpath"
    }
    table = [
        TrainingCell(
            **c,
            epoch_s_over_fastpath=(
                c["epoch_s_median"] / base
                if (base := fast.get((c["device"], c["precision"], c["placement"], c["batch_size"])))
                else None
            ),
        )
        for c in cells.values()
    ]
    return sorted(table, key=lambda c: (c.device, c.precision, c.placement, c.batch_size, c.loader))


def _median(values: Sequence[float]) -> float:
    return summarize(values)["median"]


def _median_or_none(values: Sequence[float | None]) -> float | None:
    finite = [v for v in values if v is not None]
    return _median(finite) if finite else None


def training_table(
    measured: Sequence[TrainingRecord], rows: int, rules: NoiseRules, environment: Environment
) -> TrainingTable:
    """tables/{cpu,gpu}_training.json: the cells of the finite runs and the runs left out of them."""
    return TrainingTable(
        table=tuple(aggregate_training(measured, rows, rules)),
        non_finite=non_finite_runs(measured),
        environment=environment,
    )


def non_finite_runs(measured: Sequence[TrainingRecord]) -> tuple[NonFiniteRun, ...]:
    """The runs left out of the medians because a loss or the weights went NaN/inf."""
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
    """The specification's exercise-2 record shape, for the DataLoader path (the textbook's format, unversioned)."""
    return [
        {
            "batch_size": cell.batch_size,
            "samples": cell.samples,
            "epoch_s_runs": list(cell.epoch_s_runs),
            "epoch_s_median": cell.epoch_s_median,
            "samples_per_s": cell.samples / cell.epoch_s_median,
        }
        for cell in table
        if cell.loader == loader
    ]
