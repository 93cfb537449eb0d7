"""The tables the decision rule writes beside the verdict: the textbook's estimates per batch size (with the
achieved rate of the measured fast path) and one row per data set (size, balance, hashes, where it came from)."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze import theory
from accel_choice.analyze.figures import Figures
from accel_choice.io import data_warnings
from accel_choice.records.data import DatasetExport, DatasetMeta
from accel_choice.records.decision import DataRow, DataTable, TheoryRow, TheoryTable
from accel_choice.records.training import TrainingCell


def theory_table(
    train_table: Sequence[TrainingCell],
    figures: Figures,
    rows: int,
    batch_sizes: Sequence[int],
    bandwidth_gb_s: float,
) -> TheoryTable:
    """Build the estimates per batch size.

    The estimates per batch size (the textbook's formulas, or counts for a user's model), with the
    achieved rate of the measured fast-path epoch."""
    # Per batch size the fastest thread count's fast-path cell (timing.threads may hold several).
    measured: dict[tuple[int, str], TrainingCell] = {}
    for r in sorted((r for r in train_table if r.device == "cpu" and not r.compiled), key=lambda r: -r.epoch_s.point):
        measured[(r.batch_size, r.loader)] = r
    table = []
    for b in batch_sizes:
        fast = measured.get((b, "fastpath"))
        table.append(
            TheoryRow(
                batch_size=b,
                steps_per_epoch=theory.steps_per_epoch(rows, b),
                forward_flop_per_batch=figures.forward_flops(b),
                forward_backward_flop_per_batch_3x=figures.step_flops_3x(b),
                forward_backward_flop_per_batch_counted=figures.step_flops_counted(b),
                forward_backward_flop_per_epoch_3x=figures.epoch_flops_3x(rows, b),
                forward_activation_bytes_per_batch=figures.activation_bytes(b),
                batch_transfer_s_assumed=theory.transfer_seconds(b * figures.sample_bytes, bandwidth_gb_s),
                achieved_gflop_per_s_3x=figures.epoch_flops_3x(rows, b) / fast.epoch_s.point / 1e9 if fast else None,
            )
        )
    matrix_bytes = rows * figures.sample_bytes
    return TheoryTable(
        model=figures.model,
        figures=figures.source,
        widths=figures.widths,
        params=figures.params,
        adam_fp32_bytes=figures.state_bytes,
        input_bytes=matrix_bytes,
        rows=rows,
        bandwidth_gb_s=bandwidth_gb_s,
        input_transfer_s_assumed=theory.transfer_seconds(matrix_bytes, bandwidth_gb_s),
        table=tuple(table),
    )


def data_table(datasets: Sequence[tuple[DatasetMeta, DatasetExport]], batch_sizes: Sequence[int]) -> DataTable:
    """Build one row per data set, with its warnings.

    One row per data set from its generation metadata and export record (the pairs, in order), with its
    warnings: the metadata's, and for the benchmark an epoch of few steps at a batch size (timing.batch_sizes)."""
    rows = []
    for meta, export in datasets:
        parquet, csv = export.files["parquet"], export.files["csv"]
        few = data_warnings.few_steps(meta.rows, batch_sizes) if meta.name == "benchmark" else None
        rows.append(
            DataRow(
                dataset=meta.name,
                rows=meta.rows,
                features=len(meta.feature_columns),
                positive_rate=meta.positive_rate,
                matrix_sha256=meta.matrix_sha256,
                parquet_bytes=parquet.bytes,
                parquet_sha256=parquet.sha256,
                csv_bytes=csv.bytes,
                csv_sha256=csv.sha256,
                source=meta.generator,
                warnings=meta.warnings + ((few,) if few else ()),
            )
        )
    return DataTable(table=tuple(rows))
