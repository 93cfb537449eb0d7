"""Write tidy tables pandas reads as numbers, in Parquet and CSV: every timed epoch, and every cell's estimates.

The cell tables (tables/cpu_training.json and .csv) hold one row per cell, with each job's epochs packed
into one field and each estimate spread over three columns. The epochs table unpacks the epochs: one row
per job, variant and round. The estimates table has one row per cell and statistic: point, low, high,
level, method, jobs. Plot one cell's epochs with:

    import pandas as pd
    epochs = pd.read_parquet("results/tables/cpu_epochs.parquet")
    epochs.query("loader == 'fastpath' and batch_size == 512 and threads == 1").plot.scatter("round", "epoch_s")
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from accel_choice.io import atomic, paths
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import VARIANT_KEYS, TrainingCell, variant_fields
from accel_choice.records.training_job import TrainingJob

# The columns in order: the job, the variant's fields, the round, and what was timed in it.
COLUMNS = ("job", "repeat", *VARIANT_KEYS, "position_in_job", "round", "epoch_s", "eval_s")
# The estimates table's: the variant's fields, the statistic, and the estimate's fields (records.estimate.Estimate).
ESTIMATE_FIELDS = tuple(field.name for field in dataclasses.fields(Estimate))
ESTIMATE_COLUMNS = (*VARIANT_KEYS, "statistic", *ESTIMATE_FIELDS)


def epoch_rows(jobs: Sequence[TrainingJob], table: str) -> list[dict[str, Any]]:
    """List one dict per timed epoch of `jobs` (`table`: "cpu" or "gpu", which names the jobs)."""
    rows = []
    for training_job in jobs:
        for record in (*training_job.records, *training_job.beside):  # a GPU job's CPU epochs too
            name = paths.training_job(table, record.batch_size, record.threads, record.repeat)
            for index, (epoch, evaluation) in enumerate(zip(record.epoch_s_each, record.eval_s_each, strict=True)):
                rows.append(
                    {"job": name, "repeat": record.repeat}
                    | variant_fields(record)
                    | {
                        "position_in_job": record.position_in_job,
                        "round": index,
                        "epoch_s": epoch,
                        "eval_s": evaluation,
                    }
                )
    return rows


def estimate_rows(cells: Sequence[TrainingCell]) -> list[dict[str, Any]]:
    """List one dict per cell and statistic: every Estimate field of each cell (epoch_s, eval_s, samples_per_s, ...)."""
    rows = []
    for cell in cells:
        for name in (f.name for f in dataclasses.fields(cell)):
            value = getattr(cell, name)
            if isinstance(value, Estimate):
                rows.append(
                    variant_fields(cell)
                    | {"statistic": name}
                    | {field: getattr(value, field) for field in ESTIMATE_FIELDS}
                    | {"flags": "; ".join(value.flags)}  # one text cell: Parquet and CSV alike
                )
    return rows


def write_epochs(
    parquet: str | os.PathLike[str], csv: str | os.PathLike[str], jobs: Sequence[TrainingJob], table: str
) -> int:
    """Write the epochs of `jobs` to `parquet` and `csv`, each atomically; return the number of rows."""
    return _write(parquet, csv, epoch_rows(jobs, table), COLUMNS, "epochs")


def write_estimates(parquet: str | os.PathLike[str], csv: str | os.PathLike[str], cells: Sequence[TrainingCell]) -> int:
    """Write every cell's estimates to `parquet` and `csv`, each atomically; return the number of rows."""
    return _write(parquet, csv, estimate_rows(cells), ESTIMATE_COLUMNS, "estimates")


def _write(
    parquet: str | os.PathLike[str],
    csv: str | os.PathLike[str],
    rows: list[dict[str, Any]],
    columns: Sequence[str],
    what: str,
) -> int:
    if not rows:
        raise ValueError(f"{parquet}: refusing to write an empty {what} table")
    frame = pa.Table.from_pylist(rows).select(list(columns))
    buffer = pa.BufferOutputStream()
    pq.write_table(frame, buffer)
    atomic.write_bytes(parquet, buffer.getvalue().to_pybytes())
    text = io.BytesIO()
    pa_csv.write_csv(frame, text)
    atomic.write_bytes(csv, text.getvalue())
    return len(rows)
