"""Two archived results/ folders side by side: matched rows with ratios, differences, warnings, a figure.

Rows are matched on the training variant (`aggregate.VARIANT_KEYS`). Ratios are always B/A, so for a
time a ratio below 1 means B is faster and for a throughput a ratio above 1 means B is faster; every
row also says it in words. Nothing here runs a measurement: the inputs are the folders' own tables.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import archive, atomic, envinfo, tables  # noqa: E402
from . import compare_checks as checks  # noqa: E402
from .aggregate import VARIANT_KEYS  # noqa: E402
from .compare_checks import (FULL_PATH_METRIC, TRAINING_METRICS, DamagedRecord, NotAResultsFolder,  # noqa: E402,F401
                             incomplete, variant_name)
from .report import table  # noqa: E402

MANIFEST = archive.MANIFEST_NAME
CONFIG = "config.yaml"
CPU_TABLE = "tables/cpu_training.json"
GPU_TABLE = "tables/gpu_training.json"
DECISION = "tables/decision.json"
FULL_PATH_CSV = "tables/full_path.csv"
ENVIRONMENT = "env/collect_env.json"
PROVENANCE = "provenance.json"
OUTPUT_NAMES = ("comparison.md", "comparison.csv", "comparison.json", "comparison.png", "comparison.svg")

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
class ManifestCheck:
    """A folder against its MANIFEST.sha256, by `archive.verify`: absent, unreadable (`error`), or checked."""

    present: bool
    result: archive.Verification | None = None
    error: str | None = None  # a malformed or repeated line, or a manifest that cannot be read

    @property
    def verified(self) -> bool:
        return self.result is not None and self.result.matches


@dataclass(frozen=True)
class ResultsFolder:
    label: str
    path: Path
    config: dict[str, Any]
    training: list[dict[str, Any]]  # CPU rows, then GPU rows when the folder has them
    non_finite: list[dict[str, Any]]
    full_path: list[dict[str, Any]]
    environment: dict[str, Any]  # env/collect_env.json: {"collect_env", "quick", ...}
    table_environment: dict[str, Any] | None  # the aggregation job's quick record in cpu_training.json
    verdict: dict[str, Any] | None
    provenance: dict[str, Any] | None
    has_gpu_table: bool
    manifest: ManifestCheck

    @property
    def gpu_rows(self) -> list[dict[str, Any]]:
        return [row for row in self.training if row["device"] != "cpu"]


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


# ---------------------------------------------------------------- loading


def load_results(path: str | os.PathLike[str], label: str) -> ResultsFolder:
    """Read one results folder; raise NotAResultsFolder naming the first missing or bad file.

    Every value the comparison computes with is checked first (`compare_checks`): a bad one is a DamagedRecord,
    a NotAResultsFolder that names the file, the row and the field.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise NotAResultsFolder(f"{folder}: no such folder (expected an accel-choice results/ folder)")
    cpu = _json(folder, CPU_TABLE, checks.training_document)
    if not cpu["table"]:
        raise incomplete(folder, CPU_TABLE, "has no rows")
    has_gpu_table = (folder / GPU_TABLE).exists()
    gpu = _json(folder, GPU_TABLE, checks.training_document) if has_gpu_table else {"table": [], "non_finite": []}
    decision = _json(folder, DECISION, checks.decision_document) if (folder / DECISION).exists() else None
    return ResultsFolder(
        label=label,
        path=folder,
        config=_config(folder),
        training=cpu["table"] + gpu["table"],
        non_finite=list(cpu.get("non_finite") or []) + list(gpu.get("non_finite") or []),
        full_path=_full_path(folder, decision),
        environment=_json(folder, ENVIRONMENT, checks.environment_document),
        table_environment=cpu.get("environment") if isinstance(cpu.get("environment"), dict) else None,
        verdict=decision.get("verdict") if decision else None,
        provenance=_json(folder, PROVENANCE, checks.object_document) if (folder / PROVENANCE).exists() else None,
        has_gpu_table=has_gpu_table,
        manifest=verify_manifest(folder),
    )


def _read_json(folder: Path, name: str) -> Any:
    if not (folder / name).is_file():
        raise incomplete(folder, name)
    try:
        return atomic.read_json(folder / name)
    except ValueError as err:
        raise NotAResultsFolder(str(err).replace("; delete it and re-run the workflow", "")) from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / name}: cannot be read ({err.strerror})") from err


def _json(folder: Path, name: str, check: Callable[[Any, Path, str], None]) -> Any:
    """A JSON document of the folder, after `check` (one of compare_checks' document checks) accepted it."""
    document = _read_json(folder, name)
    check(document, folder, name)
    return document


def _config(folder: Path) -> dict[str, Any]:
    if not (folder / CONFIG).is_file():
        raise incomplete(folder, CONFIG)
    try:
        config = yaml.safe_load((folder / CONFIG).read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise NotAResultsFolder(f"{folder / CONFIG}: not valid YAML ({' '.join(str(err).split())})") from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / CONFIG}: cannot be read ({err.strerror})") from err
    checks.object_document(config, folder, CONFIG)
    return config


def _full_path(folder: Path, decision: dict[str, Any] | None) -> list[dict[str, Any]]:
    if decision and isinstance(decision.get("full_path"), list):
        return decision["full_path"]  # checked with decision.json
    if not (folder / FULL_PATH_CSV).is_file():
        raise incomplete(folder, FULL_PATH_CSV, f"missing, and there is no full_path in {DECISION} either")
    rows = _read_csv(folder, FULL_PATH_CSV)
    checks.full_path_rows(rows, folder, FULL_PATH_CSV)
    return rows


def _read_csv(folder: Path, name: str) -> list[dict[str, Any]]:
    try:
        with open(folder / name, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (UnicodeDecodeError, csv.Error) as err:
        raise NotAResultsFolder(f"{folder / name}: not a valid CSV table ({err})") from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / name}: cannot be read ({err.strerror})") from err
    for number, row in enumerate(rows):
        if None in row:  # csv.DictReader's key for cells beyond the header
            raise incomplete(folder, name, f"row {number} has more cells than the header")
    return [{key: _csv_value(value) for key, value in row.items()} for row in rows]


def _csv_value(text: str | None) -> Any:
    if text is None:  # a row shorter than the header
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None if text == "" else text


# ---------------------------------------------------------------- manifest

def verify_manifest(folder: Path) -> ManifestCheck:
    """Check the folder against its MANIFEST.sha256 the way verify_results.py does (`archive.verify`):
    changed, missing, linked and added entries are reported; a malformed manifest is reported, not fatal."""
    if not (folder / MANIFEST).is_file():
        return ManifestCheck(present=False)
    try:
        return ManifestCheck(present=True, result=archive.verify(folder))
    except (OSError, archive.ManifestError) as error:
        return ManifestCheck(present=True, error=str(error))


# ---------------------------------------------------------------- matching rows


def variant_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[key] for key in VARIANT_KEYS)


def _sort_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    row = dict(zip(VARIANT_KEYS, key))
    return (row["batch_size"], row["device"] != "cpu", str(row["device"]), str(row["precision"]),
            str(row["placement"]), str(row["loader"]))


def choose_full_path_format(a: ResultsFolder, b: ResultsFolder) -> str | None:
    common = {r["format"] for r in a.full_path} & {r["format"] for r in b.full_path}
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


def _values(row: dict[str, Any] | None, keys: Sequence[str]) -> tuple[float, float, float] | None:
    return None if row is None else (row[keys[0]], row[keys[1]], row[keys[2]])


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
    path_a = {variant_key(r): r for r in a.full_path if r["format"] == fmt}
    path_b = {variant_key(r): r for r in b.full_path if r["format"] == fmt}
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
    row["startup_s_a"] = pa.get("startup_s") if pa else None
    row["startup_s_b"] = pb.get("startup_s") if pb else None
    row["epoch_comparison"] = time_wording(row["epoch_s_a"], row["epoch_s_b"], label_a, label_b)
    row["full_path_comparison"] = time_wording(row["full_path_s_a"], row["full_path_s_b"], label_a, label_b)
    row["noisy_a"] = bool(ta["noisy"]) if ta else None
    row["noisy_b"] = bool(tb["noisy"]) if tb else None
    return row


def fastest_full_path(a: ResultsFolder, b: ResultsFolder) -> dict[str, Any]:
    """Each side's fastest full path per epoch over every format and variant (the laptop-vs-server question)."""
    best = {side: min(folder.full_path, key=lambda r: r["total_s"], default=None) for side, folder in (("a", a), ("b", b))}
    summary: dict[str, Any] = {side: None if row is None else {
        "variant": variant_name(row), "format": row["format"], "batch_size": row["batch_size"],
        "total_s": row["total_s"], "startup_s": row.get("startup_s")} for side, row in best.items()}
    totals = [row["total_s"] if row else None for row in best.values()]
    summary["ratio_b_over_a"] = _ratio(*totals)
    summary["comparison"] = time_wording(*totals, a.label, b.label)
    return summary


# ---------------------------------------------------------------- differences


def _environment_record(folder: ResultsFolder) -> dict[str, Any]:
    collected = folder.environment.get("collect_env") or {}
    return {
        "quick": folder.environment["quick"],
        "collect_env": {key: collected.get(key) for key in COLLECT_ENV_KEYS} | {"cpu_model": _lscpu_model(collected)},
        "training_threads": sorted({t for row in folder.training for t in _as_list(row.get("threads"))}),
    }


def _lscpu_model(collected: dict[str, Any]) -> str | None:
    for line in str(collected.get("cpu_info") or "").splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return None


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _difference_rows(records: tuple[dict[str, Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """Keys whose values differ, with each side's value (None where a side lacks the key)."""
    flat = [envinfo.flatten(record) for record in records]
    return [{"key": key, "a": flat[0].get(key), "b": flat[1].get(key)} for key in envinfo.differences(list(records))]


def environment_differences(a: ResultsFolder, b: ResultsFolder) -> list[dict[str, Any]]:
    return _difference_rows((_environment_record(a), _environment_record(b)))


def config_differences(a: ResultsFolder, b: ResultsFolder) -> list[dict[str, Any]]:
    return _difference_rows((a.config, b.config))


# ---------------------------------------------------------------- warnings


def _cells(rows: Iterable[dict[str, Any]], limit: int = 4, with_format: bool = False) -> str:
    names = [f"{variant_name(r)} B={r['batch_size']}" + (f" ({r['format']})" if with_format else "") for r in rows]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def noise_warnings(side: ResultsFolder) -> list[str]:
    warnings = []
    noisy = [r for r in side.training if r["noisy"]]
    if noisy:
        warnings.append(f"{side.label}: {len(noisy)} of {len(side.training)} training cells are flagged noisy "
                        f"(repeats disagree: IQR/median or an outlier repeat): {_cells(noisy)}; their ratios are uncertain.")
    busy = [r for r in side.training if r.get("contaminated")]
    if busy:
        repeats = sum(len(r["contaminated"]) for r in busy)
        warnings.append(f"{side.label}: {repeats} repeat(s) in {len(busy)} training cell(s) ran on a busy machine "
                        f"(other processes' CPU or a rising load average): {_cells(busy)}.")
    if side.non_finite:
        warnings.append(f"{side.label}: {len(side.non_finite)} training run(s) went NaN/inf and are left out of its medians: "
                        f"{_cells(side.non_finite)}.")
    # A full-path row is noisy when its training cell is; those cells are named above, so only the
    # full-path rows of cells whose training row is not flagged are warned about here.
    flagged = {variant_key(r) for r in noisy}
    noisy_paths = [r for r in side.full_path if r.get("noisy") and variant_key(r) not in flagged]
    if noisy_paths:
        warnings.append(f"{side.label}: {len(noisy_paths)} full-path row(s) are flagged noisy although their training "
                        f"cell is not (load/convert repeats disagree): {_cells(noisy_paths, with_format=True)}.")
    return warnings


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return "absent" if value is None else str(value)


def config_warnings(differences: Sequence[dict[str, Any]], label_a: str, label_b: str) -> list[str]:
    return [f"Config {d['key']} differs ({label_a}: {_shown(d['a'])}, {label_b}: {_shown(d['b'])}): "
            f"{FAIRNESS_CONFIG[d['key']]}, so the comparison is not like for like."
            for d in differences if d["key"] in FAIRNESS_CONFIG]


def batch_size_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    sizes_a, sizes_b = ({r["batch_size"] for r in side.training} for side in (a, b))
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
        warnings.append(f"The timing jobs ran with different torch thread counts ({a.label}: {_shown(threads[0])}, "
                        f"{b.label}: {_shown(threads[1])}): CPU times differ for that reason alone.")
    torch = [side.environment["quick"].get("torch_version") for side in (a, b)]
    if torch[0] != torch[1]:
        same_release = str(torch[0]).split("+")[0] == str(torch[1]).split("+")[0]
        kind = "the same release in different builds" if same_release else "different releases"
        warnings.append(f"torch differs ({a.label}: {torch[0]}, {b.label}: {torch[1]}; {kind}): part of any "
                        "difference may come from torch, not from the hardware.")
    return warnings


def manifest_warnings(side: ResultsFolder) -> list[str]:
    check = side.manifest
    if not check.present:
        return [f"{side.label} has no {MANIFEST}: cannot verify that nothing was edited since the run."]
    if check.verified:
        return []
    if check.result is None:
        return [f"{side.label}: {MANIFEST} cannot be checked ({check.error}); its results may have been edited."]
    found: dict[str, list[str]] = {}
    for what, name in check.result.problems():
        found.setdefault(what, []).append(name)
    problems = [f"{len(names)} {what} ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})"
                for what, names in found.items()]
    return [f"{side.label}: {MANIFEST} does not verify: {'; '.join(problems)}; its results may have been edited."]


def gpu_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    without = [side for side in (a, b) if not side.gpu_rows]
    if len(without) == 2:
        return ["Neither side has GPU rows: the comparison covers CPU rows only."]
    return [f"{side.label} has no GPU rows ({'no ' + GPU_TABLE if not side.has_gpu_table else 'its GPU table is empty'}): "
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
                        f"({', '.join(commits) or 'provenance.json says mixed_commits'}): a mixed archive.")
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
        or (side.environment["quick"].get("packages") or {}).get("snakemake"),
        "created": provenance.get("created"),
        "command_line": provenance.get("command_line"),
        "working_directory": provenance.get("working_directory"),
        "host": (provenance.get("invocation") or {}).get("host"),
        "verdict": (side.verdict or {}).get("device"),
        "verdict_claim": (side.verdict or {}).get("claim"),
        "cpu_rows": len(side.training) - len(side.gpu_rows),
        "gpu_rows": len(side.gpu_rows),
        "manifest": _manifest_status(side.manifest),
    }


def _fallback_workflow(side: ResultsFolder) -> dict[str, Any]:
    return (side.table_environment or {}).get("workflow") or side.environment["quick"].get("workflow") or {}


def _commit(side: ResultsFolder) -> tuple[str | None, str | None]:
    commit = ((side.provenance or {}).get("workflow") or {}).get("commit")
    if commit:
        return commit, PROVENANCE
    commit = _fallback_workflow(side).get("commit")
    return (commit, f"environment record in {CPU_TABLE}") if commit else (None, None)


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


# ---------------------------------------------------------------- markdown


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    value = seconds * 1e3
    # About three significant digits, never in exponent notation.
    decimals = 0 if value >= 100 else 1 if value >= 10 else 2 if value >= 0.1 else 4
    return f"{value:,.{decimals}f}"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _spread(row: dict[str, Any], name: str, side: str, show: Any) -> str:
    median = row[f"{name}_{side}"]
    if median is None:
        return "—"
    return f"{show(median)} ({show(row[f'{name}_{side}_min'])}–{show(row[f'{name}_{side}_max'])})"


def _ratio_cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _variant_cell(row: dict[str, Any], label_a: str, label_b: str) -> str:
    noisy = [label for label, flag in ((label_a, row["noisy_a"]), (label_b, row["noisy_b"])) if flag]
    return variant_name(row) + (f" (noisy: {', '.join(noisy)})" if noisy else "")


def _verdict_cell(row: dict[str, Any]) -> str:
    words = row["epoch_comparison"]
    return words + (" (spreads overlap)" if row["epoch_s_spreads_overlap"] else "")


def batch_size_table(rows: Sequence[dict[str, Any]], label_a: str, label_b: str) -> str:
    ratio = f"{label_b}/{label_a}"
    headers = ("variant", f"epoch ms {label_a} (min–max)", f"epoch ms {label_b} (min–max)", f"epoch {ratio}", "per epoch",
               f"samples/s {label_a} (min–max)", f"samples/s {label_b} (min–max)", f"samples/s {ratio}",
               f"full path ms {label_a} (min–max)", f"full path ms {label_b} (min–max)", f"full path {ratio}")
    cells = [(_variant_cell(r, label_a, label_b), _spread(r, "epoch_s", "a", _ms), _spread(r, "epoch_s", "b", _ms),
              _ratio_cell(r["epoch_s_ratio_b_over_a"]), _verdict_cell(r),
              _spread(r, "samples_per_s", "a", _rate), _spread(r, "samples_per_s", "b", _rate),
              _ratio_cell(r["samples_per_s_ratio_b_over_a"]),
              _spread(r, "full_path_s", "a", _ms), _spread(r, "full_path_s", "b", _ms),
              _ratio_cell(r["full_path_s_ratio_b_over_a"])) for r in rows]
    return table(headers, cells)


def _header_section(result: Comparison) -> str:
    a, b = result.sides
    fields = (("path", "path"), ("workflow commit", "workflow_commit"), ("uncommitted changes", "workflow_dirty"),
              ("commit read from", "commit_source"), ("Snakemake", "snakemake_version"), ("created", "created"),
              ("command line", "command_line"), ("host", "host"), ("verdict", "verdict"), ("CPU rows", "cpu_rows"), ("GPU rows", "gpu_rows"),
              (MANIFEST, "manifest"))
    rows = [(name, _md(a.get(key)), _md(b.get(key))) for name, key in fields]
    return f"# Comparison: {a['label']} (A) vs {b['label']} (B)\n\n" + table(("", f"A: {a['label']}", f"B: {b['label']}"), rows)


def _md(value: Any) -> str:
    text = "not recorded" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _reading_section(result: Comparison) -> str:
    a, b = (side["label"] for side in result.sides)
    fmt = result.full_path_format or "none in common"
    return (
        "## How to read this\n\n"
        f"Every ratio is **{b}/{a}** (B over A) of the medians. For times (epoch, full path) a ratio below 1 means "
        f"{b} is faster; for samples/s a ratio above 1 means {b} is faster. The 'per epoch' column says it in words. "
        "Min–max is over each side's repeats; 'spreads overlap' means the two ranges touch, so the repeats do not "
        f"resolve the difference. Full path = load + convert + transfer + train epoch + eval (medians), format `{fmt}`, "
        "fixed start-up (CUDA context) excluded. Rows are matched on "
        f"({', '.join(VARIANT_KEYS)}); a row measured on one side only shows '—' for the other. "
        "Absolute times of two runs also reflect each machine's state at the time (see the README: one machine, an "
        "hour apart, identical timing code, medians up to ~10 % apart), so differences inside the min–max spreads or "
        "below ~10 % are not evidence of a code or hardware difference."
    )


def _fastest_section(result: Comparison) -> str:
    fastest = result.fastest
    rows = []
    for side in ("a", "b"):
        best = fastest[side]
        label = result.sides[0 if side == "a" else 1]["label"]
        if best:
            startup = f", plus {_ms(best['startup_s'])} ms start-up" if best.get("startup_s") else ""
            variant = f"{best['variant']} B={best['batch_size']} ({best['format']})"
            rows.append((label, variant, f"{_ms(best['total_s'])}{startup}"))
    text = table(("side", "fastest full path", "ms per epoch"), rows)
    return (f"## Fastest full path on each side\n\n{text}\n\nAcross devices and formats, per epoch without the start-up: "
            f"{fastest['comparison'] or 'not comparable'} (ratio {_ratio_cell(fastest['ratio_b_over_a'])}).")


def _difference_section(title: str, differences: Sequence[dict[str, Any]], label_a: str, label_b: str) -> str:
    if not differences:
        return f"## {title}\n\nNone: the two records agree."
    rows = [(d["key"], _md(_shown(d["a"])), _md(_shown(d["b"]))) for d in differences]
    return f"## {title}\n\n" + table(("key", label_a, label_b), rows)


def markdown(result: Comparison) -> str:
    a, b = (side["label"] for side in result.sides)
    sections = [_header_section(result), _reading_section(result), _fastest_section(result)]
    for size in sorted({r["batch_size"] for r in result.rows}):
        rows = [r for r in result.rows if r["batch_size"] == size]
        sections.append(f"## Batch size {size}\n\n" + batch_size_table(rows, a, b))
    sections.append(_difference_section("Environment differences", result.environment_differences, a, b))
    sections.append(_difference_section("Configuration differences", result.config_differences, a, b))
    warnings = "\n".join(f"- {w}" for w in result.warnings) or "None."
    sections.append(f"## Warnings\n\n{warnings}\n\nFigure: `comparison.png` / `comparison.svg`.")
    return "\n\n".join(sections) + "\n"


# ---------------------------------------------------------------- figure


# Ratio panels: (title, y label with {a}/{b}, ((metric, line style, marker, legend text), ...)).
RATIO_PANELS = (
    ("Ratio of the medians: times", "time {b}/{a} (below 1: {b} faster)",
     (("epoch_s", "-", "o", "epoch time"), ("full_path_s", ":", "^", "full-path time"))),
    ("Ratio of the medians: throughput", "samples/s {b}/{a} (above 1: {b} faster)",
     (("samples_per_s", "-", "o", "samples/s"),)),
)
SIDE_STYLES = (("a", "-", "o"), ("b", "--", "s"))  # A solid circles, B dashed squares


def comparison_figure(result: Comparison, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> Any:
    """2×2 panels: each side's epoch time and full-path time (top), the ratios B/A of epoch time, full-path time
    and samples/s (bottom). Writes the PNG and SVG and returns the (closed) matplotlib Figure, for inspection."""
    figure, grid = plt.subplots(2, 2, figsize=(14, 10), layout="constrained")
    try:
        _draw(figure, grid, result)
        _save_figure(figure, png_path, svg_path)
    finally:
        plt.close(figure)
    return figure


def _draw(figure: Any, grid: Any, result: Comparison) -> None:
    a, b = (side["label"] for side in result.sides)
    (epoch, path), ratios = grid
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    variants = sorted({variant_name(r) for r in result.rows})
    for number, name in enumerate(variants):
        rows = sorted((r for r in result.rows if variant_name(r) == name), key=lambda r: r["batch_size"])
        color = colors[number % len(colors)]
        for side, line, marker in SIDE_STYLES:
            _time_series(epoch, rows, "epoch_s", side, f"{name} · {side}", color, line, marker)
            _time_series(path, rows, "full_path_s", side, f"{name} · {side}", color, line, marker)
        for axes, (_, _, metrics) in zip(ratios, RATIO_PANELS):
            for metric, line, marker, _ in metrics:
                _ratio_series(axes, rows, metric, f"{name} · {metric}", color, line, marker)
    fmt = result.full_path_format
    _style_times(epoch, result, "training epoch, ms (median, min–max)", "Epoch time", a, b)
    _style_times(path, result, f"full path per epoch ({fmt or 'no format'}), ms (median, min–max)",
                 f"Full-path time ({fmt or 'no file format in common'}): load + convert + transfer + epoch + eval", a, b)
    for axes, panel in zip(ratios, RATIO_PANELS):
        _style_ratios(axes, result, panel, a, b)
    figure.suptitle(f"{a} (A) vs {b} (B): medians per batch size; ratios B/A of rows measured on both sides")
    figure.legend(handles=[matplotlib.lines.Line2D([], [], color=colors[n % len(colors)], linewidth=2, label=name)
                           for n, name in enumerate(variants)],
                  loc="outside lower center", ncol=min(len(variants), 4) or 1, fontsize=8, title="variant (colour)")


def _time_series(axes: Any, rows: Sequence[dict[str, Any]], metric: str, side: str, label: str, color: str, line: str,
                 marker: str) -> None:
    shown = [r for r in rows if r[f"{metric}_{side}"] is not None]
    if not shown:
        return
    median = [r[f"{metric}_{side}"] * 1e3 for r in shown]
    low = [m - r[f"{metric}_{side}_min"] * 1e3 for m, r in zip(median, shown)]
    high = [r[f"{metric}_{side}_max"] * 1e3 - m for m, r in zip(median, shown)]
    axes.errorbar([r["batch_size"] for r in shown], median, yerr=[low, high], color=color, linestyle=line, marker=marker,
                  capsize=3, label=label)


def _ratio_series(axes: Any, rows: Sequence[dict[str, Any]], metric: str, label: str, color: str, line: str,
                  marker: str) -> None:
    shown = [r for r in rows if r[f"{metric}_ratio_b_over_a"] is not None]
    if shown:
        axes.plot([r["batch_size"] for r in shown], [r[f"{metric}_ratio_b_over_a"] for r in shown], color=color,
                  linestyle=line, marker=marker, label=label)


def _batch_axis(axes: Any, result: Comparison) -> None:
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted({r["batch_size"] for r in result.rows}))
    axes.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axes.get_xaxis().set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.set_xlabel("batch size B")
    axes.grid(True, which="both", alpha=0.3)


def _plain_log(axes: Any) -> None:
    """A log y axis labelled in plain numbers: every decade, and 2× and 5× in between."""
    axes.set_yscale("log")
    axes.get_yaxis().set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axes.get_yaxis().set_minor_formatter(
        matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}" if f"{value:.0e}"[0] in "25" else ""))


def _style_key(axes: Any, entries: Sequence[tuple[str, str, str]]) -> None:
    """A black legend of line styles; the colours are the figure's variant legend."""
    axes.legend(handles=[matplotlib.lines.Line2D([], [], color="black", linestyle=line, marker=marker, label=text)
                         for text, line, marker in entries], fontsize=8)


def _empty(axes: Any, text: str) -> None:
    axes.text(0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center")


def _style_times(axes: Any, result: Comparison, ylabel: str, title: str, a: str, b: str) -> None:
    _batch_axis(axes, result)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    if not axes.has_data():
        _empty(axes, "nothing to show")
        return
    _plain_log(axes)
    _style_key(axes, [(f"A: {a}", line, marker) if side == "a" else (f"B: {b}", line, marker)
                      for side, line, marker in SIDE_STYLES])


def _style_ratios(axes: Any, result: Comparison, panel: tuple[Any, ...], a: str, b: str) -> None:
    title, ylabel, metrics = panel
    _batch_axis(axes, result)
    axes.set_ylabel(ylabel.format(a=a, b=b))
    axes.set_title(title, fontsize=10)
    axes.axhline(1.0, color="black", linewidth=1)
    if not axes.get_legend_handles_labels()[0]:
        _empty(axes, "no row measured on both sides")
        return
    values = [value for line in axes.get_lines() for value in line.get_ydata()]
    if min(values) > 0 and max(values) / min(values) >= 10:
        _plain_log(axes)  # e.g. GPU against CPU: equal factors either side of 1 look equal
    else:
        axes.get_yaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter(useOffset=False))
    if len(metrics) > 1:
        _style_key(axes, [(text, line, marker) for _, line, marker, text in metrics])


def _save_figure(figure: Any, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> None:
    # Metadata without a date keeps the SVG identical for identical numbers.
    for path, fmt in ((png_path, "png"), (svg_path, "svg")):
        with atomic.atomic_path(path) as tmp:
            figure.savefig(tmp, format=fmt, dpi=130, metadata={"Date": None} if fmt == "svg" else None)


# ---------------------------------------------------------------- writing


def write_comparison(result: Comparison, out: str | os.PathLike[str]) -> list[Path]:
    """comparison.md/.csv/.json/.png/.svg in `out` (created), as a set.

    All five are written into a temporary folder beside `out` and moved in only when every one exists; a failure
    on the way (in the figure, say) leaves `out` as it was. Other files in `out` are not touched.
    """
    out = Path(out)
    with atomic.staged_folder(out, OUTPUT_NAMES) as staging:
        markdown_path, csv_path, json_path, png_path, svg_path = (staging / name for name in OUTPUT_NAMES)
        atomic.write_text(markdown_path, markdown(result))
        tables.write_csv(csv_path, result.rows)
        atomic.write_json(json_path, result.as_json())
        comparison_figure(result, png_path, svg_path)
    return [out / name for name in OUTPUT_NAMES]
