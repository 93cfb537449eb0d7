"""Two archived results/ folders side by side: matched rows with ratios, differences and warnings.

Rows are matched on the training variant (`records.VARIANT_KEYS`). Ratios are always B/A, so for a
time a ratio below 1 means B is faster and for a throughput a ratio above 1 means B is faster; every
row also says it in words. Nothing here runs a measurement: the inputs are the folders' own tables,
read by io/results_folder.py; render/comparison.py writes the outputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from accel_choice.records.training import VARIANT_KEYS
from accel_choice import records
from accel_choice.io import envinfo, paths
from accel_choice.io.folder_checks import FULL_PATH_METRIC, TRAINING_METRICS, variant_name
from accel_choice.io.results_folder import ManifestCheck, ResultsFolder

PREFERRED_FORMAT = "parquet"

# Config keys whose difference makes timings incomparable, and why.
FAIRNESS_CONFIG = {
    "seed": "the data draws and initial weights differ",
    "data.benchmark.rows": "the two sides trained on different data",
    "data.benchmark.features": "the two sides trained on different data",
    "data.benchmark.noise": "the two sides trained on different data",
    "data.parquet_compression": "the Parquet files differ, so load times differ",
    "model.hidden": "the model differs",
    "model.lr": "the model's training differs",
    "timing.repeats": "the medians and spreads rest on different numbers of repeats",
    "timing.warmup_steps": "the timed epochs follow different warm-ups",
    "timing.threads": "the CPU jobs ran with different thread counts",
    "timing.loaders": "different loaders were measured",
    "timing.formats": "different file formats were measured",
    "timing.load_passes": "load times rest on different numbers of passes",
    "gpu.precisions": "different GPU precisions were measured",
    "gpu.placements": "different GPU placements were measured",
    "gpu.grad_scaler": "fp16 ran with and without GradScaler",
    "aggregate.noise_iqr_ratio": "cells were flagged noisy by different IQR/median thresholds",
    "aggregate.outlier_factor": "cells were flagged noisy by different outlier thresholds",
    "aggregate.foreign_cpu_share": "repeats were flagged busy by different foreign-CPU thresholds",
    "aggregate.loadavg_rise": "repeats were flagged busy by different load-average thresholds",
}
# collect_env fields worth a row of their own; the quick record covers the rest.
COLLECT_ENV_KEYS = ("torch_version", "cuda_compiled_version", "cuda_runtime_version", "nvidia_gpu_models",
                    "nvidia_driver_version", "cudnn_version", "os", "is_cuda_available")


@dataclass(frozen=True)
class Comparison:
    sides: tuple[dict[str, Any], dict[str, Any]]
    rows: list[dict[str, Any]]
    full_path_format: str | None
    fastest: dict[str, Any]
    environment_differences: list[dict[str, Any]]
    config_differences: list[dict[str, Any]]
    warnings: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "sides": {"a": self.sides[0], "b": self.sides[1]},
            "ratio": "B/A: for times below 1 means B is faster; for samples/s above 1 means B is faster",
            "full_path_format": self.full_path_format,
            "fastest_full_path": self.fastest,
            "rows": self.rows,
            "environment_differences": self.environment_differences,
            "config_differences": self.config_differences,
            "warnings": self.warnings,
        }


# ---------------------------------------------------------------- matching rows


def variant_key(row: Any) -> tuple[Any, ...]:
    """The VARIANT_KEYS values of a training cell, a full-path row or a comparison row."""
    return tuple(_get(row, key) for key in VARIANT_KEYS)


def _get(row: Any, key: str) -> Any:
    # Training cells and full-path rows are records; the comparison's own rows are dicts (comparison.json).
    return row[key] if isinstance(row, dict) else getattr(row, key)


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    row = dict(zip(VARIANT_KEYS, key))
    return (row["batch_size"], row["device"] != "cpu", str(row["device"]), str(row["precision"]),
            str(row["placement"]), str(row["loader"]))


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
    return [_row(key, train_a.get(key), train_b.get(key), path_a.get(key), path_b.get(key), fmt, a.label, b.label)
            for key in keys]


def _row(key: tuple[Any, ...], ta: dict[str, Any] | None, tb: dict[str, Any] | None, pa: dict[str, Any] | None,
         pb: dict[str, Any] | None, fmt: str | None, label_a: str, label_b: str) -> dict[str, Any]:
    row: dict[str, Any] = {**dict(zip(VARIANT_KEYS, key)), "present": "both" if ta and tb else "a_only" if ta else "b_only"}
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
    summary: dict[str, Any] = {side: None if row is None else {
        "variant": variant_name(row), "format": row.format, "batch_size": row.batch_size,
        "total_s": row.total_s, "startup_s": row.startup_s} for side, row in best.items()}
    totals = [row.total_s if row else None for row in best.values()]
    summary["ratio_b_over_a"] = _ratio(*totals)
    summary["comparison"] = time_wording(*totals, a.label, b.label)
    return summary


# ---------------------------------------------------------------- differences


def _environment_record(folder: ResultsFolder) -> dict[str, Any]:
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
    return _difference_rows((_environment_record(a), _environment_record(b)))


def config_differences(a: ResultsFolder, b: ResultsFolder) -> list[dict[str, Any]]:
    return _difference_rows((a.config, b.config))


# ---------------------------------------------------------------- warnings


def _cells(rows: Iterable[Any], limit: int = 4, with_format: bool = False) -> str:
    names = [f"{variant_name(r)} B={_get(r, 'batch_size')}" + (f" ({_get(r, 'format')})" if with_format else "")
             for r in rows]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def noise_warnings(side: ResultsFolder) -> list[str]:
    warnings = []
    noisy = [r for r in side.training if r.noisy]
    if noisy:
        warnings.append(f"{side.label}: {len(noisy)} of {len(side.training)} training cells are flagged noisy "
                        f"(repeats disagree: IQR/median or an outlier repeat): {_cells(noisy)}; their ratios are uncertain.")
    busy = [r for r in side.training if r.contaminated]
    if busy:
        repeats = sum(len(r.contaminated) for r in busy)
        warnings.append(f"{side.label}: {repeats} repeat(s) in {len(busy)} training cell(s) ran on a busy machine "
                        f"(other processes' CPU or a rising load average): {_cells(busy)}.")
    if side.non_finite:
        warnings.append(f"{side.label}: {len(side.non_finite)} training run(s) went NaN/inf and are left out of its medians: "
                        f"{_cells(side.non_finite)}.")
    # A full-path row is noisy when its training cell is; those cells are named above, so only the
    # full-path rows of cells whose training row is not flagged are warned about here.
    flagged = {variant_key(r) for r in noisy}
    noisy_paths = [r for r in side.full_path if r.noisy and variant_key(r) not in flagged]
    if noisy_paths:
        warnings.append(f"{side.label}: {len(noisy_paths)} full-path row(s) are flagged noisy although their training "
                        f"cell is not (load/convert repeats disagree): {_cells(noisy_paths, with_format=True)}.")
    return warnings


def shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return "absent" if value is None else str(value)


def config_warnings(differences: Sequence[dict[str, Any]], label_a: str, label_b: str) -> list[str]:
    return [f"Config {d['key']} differs ({label_a}: {shown(d['a'])}, {label_b}: {shown(d['b'])}): "
            f"{FAIRNESS_CONFIG[d['key']]}, so the comparison is not like for like."
            for d in differences if d["key"] in FAIRNESS_CONFIG]


def batch_size_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    sizes_a, sizes_b = ({r.batch_size for r in side.training} for side in (a, b))
    return [f"Batch size(s) {', '.join(map(str, sorted(only)))} were measured only in {label}: their rows have no ratios."
            for only, label in ((sizes_a - sizes_b, a.label), (sizes_b - sizes_a, b.label)) if only]


def one_sided_warnings(rows: Sequence[dict[str, Any]], a: ResultsFolder, b: ResultsFolder) -> list[str]:
    warnings = []
    for present, label, other in (("a_only", a.label, b.label), ("b_only", b.label, a.label)):
        only = [r for r in rows if r["present"] == present]
        if only:
            warnings.append(f"{len(only)} row(s) exist only in {label} and have no counterpart in {other} "
                            f"(listed with '—' for {other}): {_cells(only)}.")
    return warnings


def environment_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    warnings = []
    threads = [_environment_record(side)["training_threads"] for side in (a, b)]
    if threads[0] != threads[1]:
        warnings.append(f"The timing jobs ran with different torch thread counts ({a.label}: {shown(threads[0])}, "
                        f"{b.label}: {shown(threads[1])}): CPU times differ for that reason alone.")
    torch = [side.environment.quick.torch_version for side in (a, b)]
    if torch[0] != torch[1]:
        same_release = str(torch[0]).split("+")[0] == str(torch[1]).split("+")[0]
        kind = "the same release in different builds" if same_release else "different releases"
        warnings.append(f"torch differs ({a.label}: {torch[0]}, {b.label}: {torch[1]}; {kind}): part of any "
                        "difference may come from torch, not from the hardware.")
    return warnings


def manifest_warnings(side: ResultsFolder) -> list[str]:
    check = side.manifest
    if not check.present:
        return [f"{side.label} has no {paths.MANIFEST}: cannot verify that nothing was edited since the run."]
    if check.verified:
        return []
    if check.result is None:
        return [f"{side.label}: {paths.MANIFEST} cannot be checked ({check.error}); its results may have been edited."]
    found: dict[str, list[str]] = {}
    for what, name in check.result.problems():
        found.setdefault(what, []).append(name)
    problems = [f"{len(names)} {what} ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})"
                for what, names in found.items()]
    return [f"{side.label}: {paths.MANIFEST} does not verify: {'; '.join(problems)}; its results may have been edited."]


def gpu_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    without = [side for side in (a, b) if not side.gpu_rows]
    if len(without) == 2:
        return ["Neither side has GPU rows: the comparison covers CPU rows only."]
    return [f"{side.label} has no GPU rows ({'no ' + paths.GPU_TABLE if not side.has_gpu_table else 'its GPU table is empty'}): "
            "only CPU rows are matched across the two folders, and the other side's GPU rows are listed "
            "as present on one side only."
            for side in without]


def provenance_warnings(side: ResultsFolder) -> list[str]:
    provenance = side.provenance or {}
    warnings = []
    if (provenance.get("workflow") or {}).get("dirty"):
        warnings.append(f"{side.label}: the workflow had uncommitted changes when it ran, "
                        "so its commit does not fully identify the code.")
    commits = distinct_record_commits(provenance.get("record_commits"))
    if len(commits) > 1 or provenance.get("mixed_commits"):
        warnings.append(f"{side.label}: its records come from more than one workflow version "
                        f"({', '.join(commits) or paths.PROVENANCE + ' says mixed_commits'}): a mixed manifest.")
    return warnings


def distinct_record_commits(value: Any) -> list[str]:
    """The distinct commits in provenance's record_commits: a {commit: count} mapping or a list."""
    if isinstance(value, dict):
        return [str(key) for key in value]
    if isinstance(value, list):
        return list(dict.fromkeys(str(item) for item in value))
    return []


def format_warnings(fmt: str | None) -> list[str]:
    if fmt is None:
        return ["The two sides share no file format in their full-path tables: full-path times are not compared."]
    return []


# ---------------------------------------------------------------- the comparison


def side_summary(side: ResultsFolder) -> dict[str, Any]:
    provenance = side.provenance or {}
    commit, source = _commit(side)
    return {
        "label": side.label,
        "path": str(side.path.resolve()),
        "workflow_commit": commit,
        "workflow_dirty": (provenance.get("workflow") or _fallback_workflow(side)).get("dirty"),
        "commit_source": source,
        "snakemake_version": provenance.get("snakemake_version")
        or side.environment.quick.packages.get("snakemake"),
        "created": provenance.get("created"),
        "command_line": provenance.get("command_line"),
        "working_directory": provenance.get("working_directory"),
        "host": (provenance.get("invocation") or {}).get("host"),
        "verdict": side.verdict.device if side.verdict else None,
        "verdict_outcome": side.verdict.outcome if side.verdict else None,
        "cpu_rows": len(side.training) - len(side.gpu_rows),
        "gpu_rows": len(side.gpu_rows),
        "manifest": _manifest_status(side.manifest),
    }


def _fallback_workflow(side: ResultsFolder) -> dict[str, Any]:
    """The workflow record of the aggregation job (or, failing a commit there, of the environment job)."""
    for environment in (side.table_environment, side.environment.quick):
        if environment.workflow.commit:
            return records.to_json(environment.workflow)
    return records.to_json(side.table_environment.workflow)


def _commit(side: ResultsFolder) -> tuple[str | None, str | None]:
    commit = ((side.provenance or {}).get("workflow") or {}).get("commit")
    if commit:
        return commit, paths.PROVENANCE
    commit = _fallback_workflow(side).get("commit")
    return (commit, f"environment record in {paths.CPU_TABLE}") if commit else (None, None)


def _manifest_status(check: ManifestCheck) -> str:
    if not check.present:
        return "absent"
    return f"verified ({check.result.listed} files)" if check.verified else "does not verify"


def compare(a: ResultsFolder, b: ResultsFolder, full_path_format: str | None = None) -> Comparison:
    fmt = full_path_format or choose_full_path_format(a, b)
    rows = comparison_rows(a, b, fmt)
    configs = config_differences(a, b)
    warnings = [
        *manifest_warnings(a), *manifest_warnings(b),
        *provenance_warnings(a), *provenance_warnings(b),
        *config_warnings(configs, a.label, b.label),
        *environment_warnings(a, b),
        *gpu_warnings(a, b),
        *batch_size_warnings(a, b),
        *one_sided_warnings(rows, a, b),
        *format_warnings(fmt),
        *noise_warnings(a), *noise_warnings(b),
    ]
    return Comparison(
        sides=(side_summary(a), side_summary(b)),
        rows=rows,
        full_path_format=fmt,
        fastest=fastest_full_path(a, b),
        environment_differences=environment_differences(a, b),
        config_differences=configs,
        warnings=warnings,
    )
