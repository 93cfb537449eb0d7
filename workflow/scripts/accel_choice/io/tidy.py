"""Write every timed epoch as one row: a tidy table pandas reads as numbers, in Parquet and CSV.

The cell tables (tables/cpu_training.json and .csv) hold one row per cell, with each job's epochs packed
into one field. This table unpacks them: one row per job, variant and round. Plot one cell's epochs with:

    import pandas as pd
    epochs = pd.read_parquet("results/tables/cpu_epochs.parquet")
    epochs.query("loader == 'fastpath' and batch_size == 512 and threads == 1").plot.scatter("round", "epoch_s")
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from accel_choice.io import atomic, paths
from accel_choice.records.training import VARIANT_KEYS, TrainingJob, variant_fields

# The columns in order: the job, the variant's fields, the round, and what was timed in it.
COLUMNS = ("job", "repeat", *VARIANT_KEYS, "position_in_job", "round", "epoch_s", "eval_s")


def epoch_rows(jobs: Sequence[TrainingJob], table: str) -> list[dict[str, Any]]:
    """List one dict per timed epoch of `jobs` (`table`: "cpu" or "gpu", which names the jobs)."""
    rows = []
    for training_job in jobs:
        for record in training_job.records:
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


def write_epochs(
    parquet: str | os.PathLike[str], csv: str | os.PathLike[str], jobs: Sequence[TrainingJob], table: str
) -> int:
    """Write the epochs of `jobs` to `parquet` and `csv`, each atomically; return the number of rows."""
    rows = epoch_rows(jobs, table)
    if not rows:
        raise ValueError(f"{parquet}: refusing to write an empty epochs table")
    frame = pa.Table.from_pylist(rows).select(list(COLUMNS))
    buffer = pa.BufferOutputStream()
    pq.write_table(frame, buffer)
    atomic.write_bytes(parquet, buffer.getvalue().to_pybytes())
    text = io.BytesIO()
    pa_csv.write_csv(frame, text)
    atomic.write_bytes(csv, text.getvalue())
    return len(rows)
