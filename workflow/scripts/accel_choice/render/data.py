"""The data path in the report: the environment and device probe, the datasets, load and convert."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.io import paths
from accel_choice.records.data import BenchmarkGenerator, NorthstarGenerator, UserDataSource
from accel_choice.records.decision import DataTable
from accel_choice.records.environment import EnvironmentReport
from accel_choice.records.loads import LoadCell, VisibleDevices
from accel_choice.render.formatting import cell_flags, ms, table


def environment_section(env: EnvironmentReport, probe: VisibleDevices | None, accelerator: str) -> str:
    """Render the environment record (env/collect_env.json) and what the device probe saw."""
    quick = env.quick
    workflow = quick.workflow
    commit = workflow.commit or "not a git checkout"
    if workflow.dirty:
        commit += " (uncommitted changes)"
    rows = [
        ("CPU", f"{quick.cpu_model}, {quick.logical_cores} logical cores ({quick.affinity_cores} usable)"),
        ("OS", env.collect_env.get("os") or quick.os),
        ("Python", quick.python_version),
        ("torch", f"{quick.torch_version} (CUDA build: {quick.cuda_compiled_version or 'none'})"),
        ("CUDA available", str(quick.is_cuda_available)),
        ("GPU", ", ".join(quick.nvidia_gpu_models) or "none"),
        ("key packages", ", ".join(f"{k} {v}" for k, v in quick.packages.items())),
        ("workflow commit when this record was taken", commit),
        ("accelerator setting", accelerator),
    ]
    if probe is not None:
        devices = "; ".join(
            f"{d.name} (sm {d.capability}, {d.total_memory_bytes / 2**30:.1f} GiB)" for d in probe.cuda_devices
        )
        rows.append(("device probe", devices or ("MPS" if probe.mps_available else "no accelerator visible")))
    return (
        "## Environment\n\n"
        + table(("", ""), rows)
        + (
            f"\n\nThe complete `torch.utils.collect_env` record is `{paths.ENVIRONMENT_TXT}`; every job's own record "
            "is inside its JSON output. Absolute times hold only for this machine; compare ratios within one run."
        )
    )


def warning_lines(data: DataTable) -> list[str]:
    """Return one line per warning about the data, each led by its data set's name."""
    return [f"{row.dataset}: {warning.line}" for row in data.table for warning in row.warnings]


def warnings_banner(data: DataTable) -> str:
    """Render the first screen's word on the data: each warning, above the verdict; nothing where there is none."""
    lines = warning_lines(data)
    if not lines:
        return ""
    return (
        f"**Warnings about the data ({len(lines)}):** each line says what it makes meaningless "
        "(docs/own-model.md, Warnings about your data).\n\n" + "\n".join(f"- {line}" for line in lines)
    )


def data_section(data: DataTable) -> str:
    rows = [
        (
            r.dataset,
            f"{r.rows:,} × {r.features}",
            f"{r.positive_rate:.3f}" if r.positive_rate is not None else "—",
            f"`{r.matrix_sha256[:16]}…`",
            f"{r.parquet_bytes:,}",
            f"{r.csv_bytes:,}",
            source_words(r.source),
        )
        for r in data.table
    ]
    lines = warning_lines(data)
    return (
        "## Data\n\n"
        + table(
            (
                "dataset",
                "rows × features",
                "positive rate",
                "sha256 of fp32 matrix",
                "Parquet bytes",
                "CSV bytes",
                "source",
            ),
            rows,
        )
        + ("\n\nWarnings about the data:\n\n" + "\n".join(f"- {line}" for line in lines) if lines else "")
    )


def source_words(source: BenchmarkGenerator | NorthstarGenerator | UserDataSource) -> str:
    """Where a data set came from: generated with its settings, or your own files, each with its sha256."""
    if isinstance(source, UserDataSource):
        files = ", ".join(f"`{name}` (sha256 `{digest[:16]}…`)" for name, digest in zip(source.files, source.sha256))
        return f"your {source.kind}: {files}"
    if isinstance(source, BenchmarkGenerator):
        return f"generated: seed {source.seed}, noise {source.noise:g}"
    return f"generated: seed {source.seed}, late rate {source.late_rate:g}"


def load_section(load_table: Sequence[LoadCell]) -> str:
    rows = [
        (
            c.dataset,
            c.format,
            f"{c.file_bytes:,}",
            ms(c.read_s_median),
            ms(c.to_pandas_s_median),
            ms(c.to_numpy_s_median),
            ms(c.to_torch_s_median),
            ms(c.total_s.point),
            f"{ms(c.total_s.low)}–{ms(c.total_s.high)}",
            f"{ms(c.total_s_min)}–{ms(c.total_s_max)}",
            f"{c.mb_per_s:.0f}",
            cell_flags(c),
        )
        for c in load_table
    ]
    return (
        "## Load and convert (ms, medians over repeats)\n\n"
        + table(
            (
                "dataset",
                "format",
                "file bytes",
                "read",
                "to pandas",
                "to numpy fp32",
                "to torch",
                "total",
                "interval",
                "jobs min–max",
                "MB/s",
                "flag",
            ),
            rows,
        )
        + (
            "\n\n`to torch` is `torch.from_numpy`, which shares the numpy buffer: the copy is in `to numpy fp32`. "
            "Each stage is the median over repeats of the per-job median over passes; `total` is the geometric mean of "
            "the jobs' median per-pass totals, so it need not equal the sum of the stage columns (the full-path table "
            "adds the stages); `interval` its t interval on the logarithms of the job medians (the jobs are the "
            "repeats; see docs/statistics.md)."
        )
    )
