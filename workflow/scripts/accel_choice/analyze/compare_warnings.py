"""What makes a comparison of two results folders unsafe to read at face value, as sentences:
an unverified manifest, mixed provenance, config or environment differences that affect timing,
missing GPU rows or batch sizes, one-sided rows, noisy or busy cells, a run without a noise floor,
intervals at different levels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from accel_choice.analyze.compare_match import environment_record
from accel_choice.io import paths
from accel_choice.io.results_folder import ResultsFolder
from accel_choice.records.comparison import ComparisonRow

# Config keys whose difference makes timings incomparable, and why.
FAIRNESS_CONFIG = {
    "seed": "the data draws and initial weights differ",
    "data.benchmark.rows": "the two sides trained on different data",
    "data.benchmark.features": "the two sides trained on different data",
    "data.benchmark.noise": "the two sides trained on different data",
    "data.parquet_compression": "the Parquet files differ, so load times differ",
    "model.hidden": "the model differs",
    "model.lr": "the model's training differs",
    "timing.repeats": "the medians and intervals rest on different numbers of repeats (jobs)",
    "timing.epochs_per_job": "the medians and intervals rest on different numbers of epochs per job",
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
    "aggregate.sentinel_tolerance": "jobs were flagged for a changed machine speed by different thresholds",
    "aggregate.steal_share": "jobs were flagged for hypervisor steal by different thresholds",
    "aggregate.confidence": "the two sides' intervals are at different levels",
}


def _cells(rows: Iterable[Any], limit: int = 4, with_format: bool = False) -> str:
    names = [f"{r.name} B={r.batch_size}" + (f" ({r.format})" if with_format else "") for r in rows]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def noise_warnings(side: ResultsFolder) -> list[str]:
    warnings = []
    noisy = [r for r in side.training if r.noisy]
    if noisy:
        warnings.append(
            f"{side.label}: {len(noisy)} of {len(side.training)} training cells are flagged noisy "
            f"(repeats disagree: IQR/median or an outlier repeat): {_cells(noisy)}; their ratios are uncertain."
        )
    busy = [r for r in side.training if r.contaminated]
    if busy:
        repeats = sum(len(r.contaminated) for r in busy)
        warnings.append(
            f"{side.label}: {repeats} repeat(s) in {len(busy)} training cell(s) ran on a busy machine "
            f"(other processes' CPU, a rising load average, or a sentinel that saw the machine's speed change, "
            f"the hypervisor steal or GPU clocks held down): {_cells(busy)}."
        )
    if side.non_finite:
        warnings.append(
            f"{side.label}: {len(side.non_finite)} training run(s) went NaN/inf and are left out of its medians: "
            f"{_cells(side.non_finite)}."
        )
    # A full-path row is noisy when its training cell is; those cells are named above, so only the
    # full-path rows of cells whose training row is not flagged are warned about here.
    flagged = {r.key for r in noisy}
    noisy_paths = [r for r in side.full_path if r.noisy and r.key not in flagged]
    if noisy_paths:
        warnings.append(
            f"{side.label}: {len(noisy_paths)} full-path row(s) are flagged noisy although their training "
            f"cell is not (load/convert repeats disagree): {_cells(noisy_paths, with_format=True)}."
        )
    return warnings


def shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return "absent" if value is None else str(value)


def config_warnings(differences: Sequence[dict[str, Any]], label_a: str, label_b: str) -> list[str]:
    return [
        f"Config {d['key']} differs ({label_a}: {shown(d['a'])}, {label_b}: {shown(d['b'])}): "
        f"{FAIRNESS_CONFIG[d['key']]}, so the comparison is not like for like."
        for d in differences
        if d["key"] in FAIRNESS_CONFIG
    ]


def batch_size_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    sizes_a, sizes_b = ({r.batch_size for r in side.training} for side in (a, b))
    return [
        f"Batch size(s) {', '.join(map(str, sorted(only)))} were measured only in {label}: their rows have no ratios."
        for only, label in ((sizes_a - sizes_b, a.label), (sizes_b - sizes_a, b.label))
        if only
    ]


def rehearsal_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    """Warn where matched cells' epochs followed different untimed rehearsals (measure.rehearsal)."""
    steps_b = {cell.key: cell.rehearsal_steps for cell in b.training}
    differ = [cell for cell in a.training if steps_b.get(cell.key, cell.rehearsal_steps) != cell.rehearsal_steps]
    if not differ:
        return []
    return [
        f"{len(differ)} row(s) timed their epochs after different untimed rehearsals ({a.label}: "
        f"{_counts(c.rehearsal_steps for c in differ)} updates, {b.label}: {_counts(steps_b[c.key] for c in differ)}): "
        "an epoch rehearsed less starts colder: without any, a short one ran up to 15 % slower (docs/statistics.md, "
        f'"Warm epochs in interleaved rounds"): {_cells(differ)}.'
    ]


def _counts(values: Iterable[int]) -> str:
    return " or ".join(str(v) for v in sorted(set(values)))


def one_sided_warnings(rows: Sequence[ComparisonRow], a: ResultsFolder, b: ResultsFolder) -> list[str]:
    warnings = []
    for present, label, other in (("a_only", a.label, b.label), ("b_only", b.label, a.label)):
        only = [r for r in rows if r.present == present]
        if only:
            warnings.append(
                f"{len(only)} row(s) exist only in {label} and have no counterpart in {other} "
                f"(listed with '—' for {other}): {_cells(only)}."
            )
    return warnings


def environment_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    warnings = []
    threads = [environment_record(side)["training_threads"] for side in (a, b)]
    if threads[0] != threads[1]:
        warnings.append(
            f"The timing jobs ran with different torch thread counts ({a.label}: {shown(threads[0])}, "
            f"{b.label}: {shown(threads[1])}): CPU times differ for that reason alone."
        )
    torch = [side.environment.quick.torch_version for side in (a, b)]
    if torch[0] != torch[1]:
        same_release = str(torch[0]).split("+")[0] == str(torch[1]).split("+")[0]
        kind = "the same release in different builds" if same_release else "different releases"
        warnings.append(
            f"torch differs ({a.label}: {torch[0]}, {b.label}: {torch[1]}; {kind}): part of any "
            "difference may come from torch, not from the hardware."
        )
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
    problems = [
        f"{len(names)} {what} ({', '.join(names[:3])}{', …' if len(names) > 3 else ''})"
        for what, names in found.items()
    ]
    return [f"{side.label}: {paths.MANIFEST} does not verify: {'; '.join(problems)}; its results may have been edited."]


def gpu_warnings(a: ResultsFolder, b: ResultsFolder) -> list[str]:
    without = [side for side in (a, b) if not side.gpu_rows]
    if len(without) == 2:
        return ["Neither side has GPU rows: the comparison covers CPU rows only."]
    return [
        f"{side.label} has no GPU rows ({'no ' + paths.GPU_TABLE if not side.has_gpu_table else 'its GPU table is empty'}): "
        "only CPU rows are matched across the two folders, and the other side's GPU rows are listed "
        "as present on one side only."
        for side in without
    ]


def provenance_warnings(side: ResultsFolder) -> list[str]:
    provenance = side.provenance or {}
    warnings = []
    if (provenance.get("workflow") or {}).get("dirty"):
        warnings.append(
            f"{side.label}: the workflow had uncommitted changes when it ran, "
            "so its commit does not fully identify the code."
        )
    commits = distinct_record_commits(provenance.get("record_commits"))
    if len(commits) > 1 or provenance.get("mixed_commits"):
        warnings.append(
            f"{side.label}: its records come from more than one workflow version "
            f"({', '.join(commits) or paths.PROVENANCE + ' says mixed_commits'}): a mixed manifest."
        )
    return warnings


def distinct_record_commits(value: Any) -> list[str]:
    """Return the distinct commits in provenance's record_commits: a {commit: count} mapping or a list."""
    if isinstance(value, dict):
        return [str(key) for key in value]
    if isinstance(value, list):
        return list(dict.fromkeys(str(item) for item in value))
    return []


def sentinel_warnings(side: ResultsFolder) -> list[str]:
    """Warn of a table whose run has no noise floor.

    A table whose run has no noise floor (fewer than three unflagged sentinel jobs): its rows are decided
    by their intervals alone, against the other side's floor where that has one."""
    return [
        f"{side.label}: its {table.upper()} jobs have no noise floor ({len(sentinel.jobs)} sentinel job(s), "
        f"{sentinel.flagged} flagged; three unflagged are needed): the run's own drift is not known, so its rows "
        "are decided by their intervals and the other side's floor alone."
        for table, sentinel in side.sentinels.items()
        if sentinel.noise_floor is None
    ]


def level_warnings(rows: Sequence[ComparisonRow], a: ResultsFolder, b: ResultsFolder) -> list[str]:
    levels = [sorted({cell.confidence for cell in side.training}) for side in (a, b)]
    if levels[0] == levels[1]:
        return []
    mixed = sorted({r.confidence for r in rows if r.confidence is not None})
    return [
        f"The two sides' intervals are at different levels ({a.label}: {shown(levels[0])}, "
        f"{b.label}: {shown(levels[1])}): each row's ratio interval is at the higher of its two cells' "
        f"levels ({shown(mixed)})."
    ]


def format_warnings(fmt: str | None) -> list[str]:
    if fmt is None:
        return ["The two sides share no file format in their full-path tables: full-path times are not compared."]
    return []


def copy_warnings(copy: str | None, label_a: str, label_b: str) -> list[str]:
    """B a byte-identical copy of A (io.results_folder.copy_of): "folder" or "tables", first of all warnings."""
    if copy is None:
        return []
    what = (
        f"{label_b} is a byte-identical copy of {label_a} (the same files, the same bytes)"
        if copy == "folder"
        else f"{label_b}'s training tables are byte-identical copies of {label_a}'s"
    )
    return [f"{what}: every ratio is 1 by construction: compare two runs."]


def warnings(
    a: ResultsFolder,
    b: ResultsFolder,
    rows: Sequence[ComparisonRow],
    configs: Sequence[dict[str, Any]],
    fmt: str | None,
) -> list[str]:
    """Return every warning about comparing a with b: integrity first, then fairness, coverage and noise."""
    return [
        *manifest_warnings(a),
        *manifest_warnings(b),
        *provenance_warnings(a),
        *provenance_warnings(b),
        *config_warnings(configs, a.label, b.label),
        *rehearsal_warnings(a, b),
        *environment_warnings(a, b),
        *gpu_warnings(a, b),
        *batch_size_warnings(a, b),
        *one_sided_warnings(rows, a, b),
        *format_warnings(fmt),
        *level_warnings(rows, a, b),
        *noise_warnings(a),
        *noise_warnings(b),
        *sentinel_warnings(a),
        *sentinel_warnings(b),
    ]
