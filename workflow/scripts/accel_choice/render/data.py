"""The data path in the report: the environment and device probe, the datasets, load and convert."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from accel_choice import records
from accel_choice.records.data import DatasetExport, DatasetMeta
from accel_choice.records.loads import LoadCell, VisibleDevices
from accel_choice.render.formatting import cell_flags, ms, table

R = TypeVar("R")

# A data set as the report shows it: its metadata and the record of its exports.
DataFiles = tuple[DatasetMeta, DatasetExport]


# Transitional: make_report.py (and tests of the report) still hand these sections the files' plain JSON.
# The three helpers below check that JSON as the records it was written as; once the report reads records
# they only pass records through and can go.


def _typed(cls: type[R], value: R | Mapping[str, Any], source: str) -> R:
    """`value` as a record of `cls`; the report (make_report.py) may still hand over the file's plain JSON,
    which is checked here as the record it was written as."""
    return value if isinstance(value, cls) else records.from_json(cls, value, source)


def _data_files(value: DataFiles | Mapping[str, Any]) -> DataFiles:
    if isinstance(value, Mapping):  # the metadata's JSON with the export's JSON under "export"
        meta = {key: item for key, item in value.items() if key != "export"}
        return (records.from_json(DatasetMeta, meta, f"data/{value.get('name')}.meta.json"),
                records.from_json(DatasetExport, value["export"], f"data/{value.get('name')}.export.json"))
    return value


def _visible_devices(probe: VisibleDevices | Mapping[str, Any]) -> VisibleDevices:
    """What the probe saw; from plain JSON (the probe file, or a GPU job's embedded probe) only those fields."""
    if isinstance(probe, VisibleDevices):
        return probe
    seen = {field.name: probe[field.name] for field in dataclasses.fields(VisibleDevices) if field.name in probe}
    return records.from_json(VisibleDevices, seen, "env/devices.json")


def environment_section(env: dict[str, Any], probe: VisibleDevices | Mapping[str, Any] | None, accelerator: str) -> str:
    """The environment record (env/collect_env.json, plain JSON) and the device probe (a DeviceProbe, or
    any VisibleDevices)."""
    quick = env["quick"]
    collected = env["collect_env"]
    workflow = quick["workflow"]
    commit = workflow["commit"] or "not a git checkout"
    if workflow["dirty"]:
        commit += " (uncommitted changes)"
    rows = [
        ("CPU", f"{quick['cpu_model']}, {quick['logical_cores']} logical cores ({quick['affinity_cores']} usable)"),
        ("OS", collected.get("os") or quick["os"]),
        ("Python", quick["python_version"]),
        ("torch", f"{quick['torch_version']} (CUDA build: {quick['cuda_compiled_version'] or 'none'})"),
        ("CUDA available", str(quick["is_cuda_available"])),
        ("GPU", ", ".join(quick["nvidia_gpu_models"]) or "none"),
        ("key packages", ", ".join(f"{k} {v}" for k, v in quick["packages"].items())),
        ("workflow commit when this record was taken", commit),
        ("accelerator setting", accelerator),
    ]
    if probe is not None:
        seen = _visible_devices(probe)
        devices = "; ".join(f"{d.name} (sm {d.capability}, {d.total_memory_bytes / 2**30:.1f} GiB)" for d in seen.cuda_devices)
        rows.append(("device probe", devices or ("MPS" if seen.mps_available else "no accelerator visible")))
    return "## Environment\n\n" + table(("", ""), rows) + (
        "\n\nThe complete `torch.utils.collect_env` record is `env/collect_env.txt`; every job's own record "
        "is inside its JSON output. Absolute times hold only for this machine; compare ratios within one run."
    )


def data_table(datasets: Sequence[DataFiles | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per generated data set, for the report and for tables/data.csv."""
    rows = []
    for meta, export in map(_data_files, datasets):
        parquet, csv = export.files["parquet"], export.files["csv"]
        rows.append({
            "dataset": meta.name, "rows": meta.rows, "features": len(meta.feature_columns),
            "positive_rate": meta.positive_rate, "matrix_sha256": meta.matrix_sha256,
            "parquet_bytes": parquet.bytes, "parquet_sha256": parquet.sha256,
            "csv_bytes": csv.bytes, "csv_sha256": csv.sha256,
        })
    return rows


def data_section(datasets: Sequence[DataFiles | Mapping[str, Any]]) -> str:
    rows = [
        (r["dataset"], f"{r['rows']:,} × {r['features']}", f"{r['positive_rate']:.3f}", f"`{r['matrix_sha256'][:16]}…`",
         f"{r['parquet_bytes']:,}", f"{r['csv_bytes']:,}")
        for r in data_table(datasets)
    ]
    return "## Data\n\n" + table(("dataset", "rows × features", "positive rate", "sha256 of fp32 matrix", "Parquet bytes", "CSV bytes"), rows)


def load_section(load_table: Sequence[LoadCell | Mapping[str, Any]]) -> str:
    cells = [_typed(LoadCell, cell, f"tables/load_convert.json table[{i}]") for i, cell in enumerate(load_table)]
    rows = [
        (
            c.dataset, c.format, f"{c.file_bytes:,}", ms(c.read_s_median), ms(c.to_pandas_s_median),
            ms(c.to_numpy_s_median), ms(c.to_torch_s_median), ms(c.total_s_median),
            f"{ms(c.total_s_min)}–{ms(c.total_s_max)}", f"{c.mb_per_s:.0f}", cell_flags(records.to_json(c)),
        )
        for c in cells
    ]
    return "## Load and convert (ms, medians over repeats)\n\n" + table(
        ("dataset", "format", "file bytes", "read", "to pandas", "to numpy fp32", "to torch", "total", "total min–max", "MB/s", "flag"),
        rows,
    ) + (
        "\n\n`to torch` is `torch.from_numpy`, which shares the numpy buffer: the copy is in `to numpy fp32`. "
        "Each stage is the median over repeats of the per-job median over passes; `total` is the median of the "
        "per-pass totals, so it need not equal the sum of the stage columns (the full-path table adds the stages)."
    )
