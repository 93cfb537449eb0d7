"""Matching two results folders' rows: the training variant as the key, ratios B/A with each
side's spread, which side is faster in words, and the keys where environments and configs differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from accel_choice import records
from accel_choice.io import envinfo
from accel_choice.io.folder_checks import FULL_PATH_METRIC, TRAINING_METRICS, variant_name
from accel_choice.io.results_folder import ResultsFolder
from accel_choice.records.training import VARIANT_KEYS

PREFERRED_FORMAT = "parquet"
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


def variant_key(row: Any) -> tuple[Any, ...]:
    """The VARIANT_KEYS values of a training cell, a full-path row or a comparison row."""
    return tuple(field(row, key) for key in VARIANT_KEYS)


def field(row: Any, key: str) -> Any:
    # Training cells and full-path rows are records; the comparison's own rows are dicts (comparison.json).
    return row[key] if isinstance(row, dict) else getattr(row, key)


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    row = dict(zip(VARIANT_KEYS, key))
    return (
        row["batch_size"],
        row["device"] != "cpu",
        str(row["device"]),
        str(row["precision"]),
        str(row["placement"]),
        str(row["loader"]),
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


def _overlap(low_a: float, high_a: float, low_b: float, high_b: float) -> bool:
    return low_a <= high_b and low_b <= high_a


def _metric_columns(name: str, a: Sequence[float] | None, b: Sequence[float] | None) -> dict[str, Any]:
    """median/min/max of each side, the ratio B/A of the medians, and whether the min–max spreads overlap."""
    columns: dict[str, Any] = {}
    for side, values in (("a", a), ("b", b)):
        median, low, high = values if values else (None, None, None)
        columns.update({f"{name}_{side}": median, f"{name}_{side}_min": low, f"{name}_{side}_max": high})
    columns[f"{name}_ratio_b_over_a"] = _ratio(a[0] if a else None, b[0] if b else None)
    columns[f"{name}_spreads_overlap"] = _overlap(a[1], a[2], b[1], b[2]) if a and b else None
    return columns


def _values(row: Any | None, keys: Sequence[str]) -> tuple[float, float, float] | None:
    return None if row is None else (getattr(row, keys[0]), getattr(row, keys[1]), getattr(row, keys[2]))


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


def comparison_rows(a: ResultsFolder, b: ResultsFolder, fmt: str | None) -> list[dict[str, Any]]:
    train_a = {variant_key(r): r for r in a.training}
    train_b = {variant_key(r): r for r in b.training}
    path_a = {variant_key(r): r for r in a.full_path if r.format == fmt}
    path_b = {variant_key(r): r for r in b.full_path if r.format == fmt}
    keys = sorted(set(train_a) | set(train_b), key=_sort_key)
    return [
        _row(key, train_a.get(key), train_b.get(key), path_a.get(key), path_b.get(key), fmt, a.label, b.label)
        for key in keys
    ]


def _row(
    key: tuple[Any, ...],
    ta: dict[str, Any] | None,
    tb: dict[str, Any] | None,
    pa: dict[str, Any] | None,
    pb: dict[str, Any] | None,
    fmt: str | None,
    label_a: str,
    label_b: str,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        **dict(zip(VARIANT_KEYS, key)),
        "present": "both" if ta and tb else "a_only" if ta else "b_only",
    }
    for name, *keys in TRAINING_METRICS:
        row.update(_metric_columns(name, _values(ta, keys), _values(tb, keys)))
    name, *keys = FULL_PATH_METRIC
    row["full_path_format"] = fmt
    row.update(_metric_columns(name, _values(pa, keys), _values(pb, keys)))
    row["startup_s_a"] = pa.startup_s if pa else None
    row["startup_s_b"] = pb.startup_s if pb else None
    row["epoch_comparison"] = time_wording(row["epoch_s_a"], row["epoch_s_b"], label_a, label_b)
    row["full_path_comparison"] = time_wording(row["full_path_s_a"], row["full_path_s_b"], label_a, label_b)
    row["noisy_a"] = ta.noisy if ta else None
    row["noisy_b"] = tb.noisy if tb else None
    return row


def fastest_full_path(a: ResultsFolder, b: ResultsFolder) -> dict[str, Any]:
    """Each side's fastest full path per epoch over every format and variant (the laptop-vs-server question)."""
    best = {side: min(folder.full_path, key=lambda r: r.total_s, default=None) for side, folder in (("a", a), ("b", b))}
    summary: dict[str, Any] = {
        side: None
        if row is None
        else {
            "variant": variant_name(row),
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
        "training_threads": sorted({t for row in folder.training for t in row.threads}),
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
