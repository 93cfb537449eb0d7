"""Repeats -> medians with spread for the training cells, the exercise-2 JSON, and the contamination flags."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from accel_choice.records.training import VARIANT_KEYS
from accel_choice.analyze.stats import NOISE_IQR_RATIO, OUTLIER_FACTOR, summarize


def _group(records: Iterable[dict[str, Any]], keys: Sequence[str]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[tuple(record[k] for k in keys)].append(record)
    return dict(sorted(groups.items()))


TRAINING_KEYS = (*VARIANT_KEYS, "repeat", "samples", "steps", "epoch_s", "samples_per_s", "eval_s", "finite", "invariants",
                 "initial_weights_sha256", "loadavg_before", "loadavg_after")


def require_keys(record: Any, keys: Sequence[str], source: str) -> dict[str, Any]:
    """A record read from `source`, refused with the file named when it lacks a field."""
    if not isinstance(record, dict):
        raise ValueError(f"{source}: expected a JSON object, found {type(record).__name__}; delete it and re-run")
    missing = [key for key in keys if key not in record]
    if missing:
        raise ValueError(f"{source}: not a complete record (missing {', '.join(missing)}); delete it and re-run")
    return record
FOREIGN_CPU_SHARE = 0.25  # cores busy elsewhere, on average over the job
LOADAVG_RISE = 0.5


def contamination(record: dict[str, Any], foreign_cpu_share: float = FOREIGN_CPU_SHARE, loadavg_rise: float = LOADAVG_RISE) -> list[str]:
    """Why a measurement may have shared the machine: other processes' CPU during the job,
    or a rising load average. Empty when neither was seen."""
    reasons = []
    share = record.get("foreign_cpu_share")
    if share is not None and share > foreign_cpu_share:
        reasons.append(f"other processes used {share:.2f} cores during the job (> {foreign_cpu_share:g})")
    rise = record["loadavg_after"][0] - record["loadavg_before"][0]
    if rise > loadavg_rise:
        reasons.append(f"1-min load average rose by {rise:.2f} (> {loadavg_rise:g})")
    return reasons


def _contaminated(group: Sequence[dict[str, Any]], foreign_cpu_share: float, loadavg_rise: float) -> list[dict[str, Any]]:
    return [{"repeat": r["repeat"], "reasons": reasons} for r in group
            if (reasons := contamination(r, foreign_cpu_share, loadavg_rise))]


def read_training_records(paths: Sequence[str]) -> list[dict[str, Any]]:
    """Every record of the given timing-job files, each checked for its fields."""
    from accel_choice.io.atomic import read_json

    return [require_keys(r, TRAINING_KEYS, path) for path in paths for r in read_json(path)["records"]]


def check_training_records(records: Sequence[dict[str, Any]], rows: int) -> None:
    """Refuse a set of records that cannot be compared: different data, different start weights."""
    if not records:
        raise ValueError("no training records to aggregate")
    bad = [r for r in records if r["samples"] != rows or not all(r["invariants"].values())]
    if bad:
        raise ValueError(f"{len(bad)} record(s) break an invariant, e.g. batch_size={bad[0]['batch_size']} loader={bad[0]['loader']}")
    initial = {r["initial_weights_sha256"] for r in records}
    if len(initial) != 1:
        raise ValueError(f"records start from {len(initial)} different initial weights; all must share one seed")
    repeats = _group(records, (*VARIANT_KEYS, "repeat"))
    duplicated = [key for key, group in repeats.items() if len(group) > 1]
    if duplicated:
        raise ValueError(f"duplicate records for ({', '.join(VARIANT_KEYS)}, repeat) {duplicated[0]}")


def aggregate_training(
    records: Sequence[dict[str, Any]],
    rows: int,
    noise_iqr_ratio: float = NOISE_IQR_RATIO,
    outlier_factor: float = OUTLIER_FACTOR,
    foreign_cpu_share: float = FOREIGN_CPU_SHARE,
    loadavg_rise: float = LOADAVG_RISE,
) -> list[dict[str, Any]]:
    """One row per variant (device, precision, placement, loader, batch size): epoch and eval
    time summaries over the finite repeats, throughput from the median."""
    check_training_records(records, rows)
    finite = [r for r in records if r["finite"]]
    table = []
    for key, group in _group(finite, VARIANT_KEYS).items():
        group = sorted(group, key=lambda r: r["repeat"])
        epoch = summarize([r["epoch_s"] for r in group], noise_iqr_ratio, outlier_factor)
        evaluation = summarize([r["eval_s"] for r in group], noise_iqr_ratio, outlier_factor)
        samples = group[0]["samples"]
        peaks = [r["peak_memory_bytes"] for r in group if r["peak_memory_bytes"] is not None]
        startups = [r["context_startup_s"] for r in group if r["context_startup_s"] is not None]
        table.append(
            {
                **dict(zip(VARIANT_KEYS, key)),
                "grad_scaler": group[0]["grad_scaler"],
                "repeats": len(group),
                "samples": samples,
                "steps": group[0]["steps"],
                "epoch_s_runs": [r["epoch_s"] for r in group],
                "epoch_s_median": epoch["median"],
                "epoch_s_min": epoch["min"],
                "epoch_s_max": epoch["max"],
                "epoch_s_iqr": epoch["iqr"],
                "epoch_s_iqr_over_median": epoch["iqr_over_median"],
                "samples_per_s": samples / epoch["median"],
                "samples_per_s_min": samples / epoch["max"],
                "samples_per_s_max": samples / epoch["min"],
                "step_us_median": epoch["median"] / group[0]["steps"] * 1e6,
                "eval_s_median": evaluation["median"],
                "eval_s_min": evaluation["min"],
                "eval_s_max": evaluation["max"],
                "eval_s_iqr": evaluation["iqr"],
                "mean_train_loss_median": _median([r["mean_train_loss"] for r in group]),
                "eval_accuracy_median": _median([r["eval_accuracy"] for r in group]),
                "warmup_first_over_steady_median": _median([r["warmup_first_step_s"] / r["warmup_steady_step_s"] for r in group]),
                "threads": sorted({r["threads"] for r in group}),
                "loadavg_max": max(max(r["loadavg_before"][0], r["loadavg_after"][0]) for r in group),
                "noisy": epoch["noisy"],
                "noise_reasons": epoch["noise_reasons"],
                "eval_noisy": evaluation["noisy"],
                "same_final_weights_across_variants": all(r["same_final_weights_across_variants"] for r in group),
                "peak_memory_bytes_max": max(peaks) if peaks else None,
                "contaminated": _contaminated(group, foreign_cpu_share, loadavg_rise),
                "context_startup_s_median": _median(startups) if startups else None,
            }
        )
    _add_loader_overhead(table)
    return sorted(table, key=lambda r: (r["device"], r["precision"], r["placement"], r["batch_size"], r["loader"]))


def _median(values: Sequence[float]) -> float:
    return summarize(values)["median"]


def _add_loader_overhead(table: list[dict[str, Any]]) -> None:
    """Epoch time over the fast path's for the same device, precision, placement and batch
    size: for the DataLoader, its per-sample Python overhead as a ratio."""
    def peer(row: dict[str, Any]) -> tuple[Any, ...]:
        return (row["device"], row["precision"], row["placement"], row["batch_size"])

    fast = {peer(row): row["epoch_s_median"] for row in table if row["loader"] == "fastpath"}
    for row in table:
        base = fast.get(peer(row))
        row["epoch_s_over_fastpath"] = row["epoch_s_median"] / base if base else None


def training_summary(
    records: Sequence[dict[str, Any]],
    rows: int,
    noise_iqr_ratio: float = NOISE_IQR_RATIO,
    outlier_factor: float = OUTLIER_FACTOR,
    foreign_cpu_share: float = FOREIGN_CPU_SHARE,
    loadavg_rise: float = LOADAVG_RISE,
) -> dict[str, Any]:
    """The aggregated table and the non-finite runs left out of it, as the aggregation rules write them."""
    table = aggregate_training(records, rows, noise_iqr_ratio, outlier_factor, foreign_cpu_share, loadavg_rise)
    return {"table": table, "non_finite": non_finite_records(records)}


def non_finite_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: r[k] for k in (*VARIANT_KEYS, "grad_scaler", "repeat", "nonfinite_step", "final_loss", "mean_train_loss")}
        for r in records
        if not r["finite"]
    ]


def exercise2_json(table: Sequence[dict[str, Any]], loader: str = "dataloader") -> list[dict[str, Any]]:
    """The specification's exercise-2 record shape, for the DataLoader path."""
    return [
        {
            "batch_size": row["batch_size"],
            "samples": row["samples"],
            "epoch_s_runs": row["epoch_s_runs"],
            "epoch_s_median": row["epoch_s_median"],
            "samples_per_s": row["samples"] / row["epoch_s_median"],
        }
        for row in table
        if row["loader"] == loader
    ]
