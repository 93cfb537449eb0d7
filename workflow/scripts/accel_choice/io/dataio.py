"""Canonical data files, Parquet/CSV export, and integrity checks against recorded hashes.

Generation writes `<name>.npy` (float32; last column is the target) and `<name>.meta.json`
(a DatasetMeta record: columns, sha256 of the array bytes and of the file). Export writes Parquet
with an explicit schema (fp32 features, int8 target) and CSV, and records each file's bytes,
sha256 and schema (a DatasetExport record) so a later reader can tell an intact file from an
edited one.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from accel_choice import records
from accel_choice.io import atomic, data_warnings
from accel_choice.records.data import (
    BenchmarkGenerator,
    Dataset,
    DatasetExport,
    DatasetMeta,
    ExportedFile,
    NorthstarGenerator,
    UserDataSource,
)
from accel_choice.records.environment import Environment

TARGET_TYPE = pa.int8()


def matrix_sha256(matrix: np.ndarray) -> str:
    return atomic.sha256_bytes(np.ascontiguousarray(matrix, dtype=np.float32).tobytes())


def positive_rate(target: np.ndarray) -> float | None:
    """Return the share of 1s of a 0/1 target; None for a target that is not 0/1 (class indices, values)."""
    return float(target.mean()) if bool(np.isin(target, (0.0, 1.0)).all()) else None


def save_dataset(
    dataset: Dataset,
    npy_path: str | os.PathLike[str],
    meta_path: str | os.PathLike[str],
    generator: BenchmarkGenerator | NorthstarGenerator | UserDataSource,
    environment: Environment,
    sample_shape: Sequence[int] | None = None,
) -> DatasetMeta:
    """Write the canonical `.npy` file and its metadata record.

    Write the canonical `.npy` file and its metadata record; return the record. `sample_shape`:
    one sample's shape for the model (default: its feature columns, one dimension). Each warning about
    its columns (io.data_warnings) goes into the record and, as a WARNING line, into the job's log."""
    buffer = io.BytesIO()
    np.save(buffer, dataset.matrix, allow_pickle=False)
    atomic.write_bytes(npy_path, buffer.getvalue())
    meta = DatasetMeta(
        name=dataset.name,
        rows=int(dataset.matrix.shape[0]),
        feature_columns=tuple(dataset.feature_columns),
        target_column=dataset.target_column,
        sample_shape=tuple(sample_shape or (len(dataset.feature_columns),)),
        dtype="float32",
        positive_rate=positive_rate(dataset.target),
        matrix_sha256=matrix_sha256(dataset.matrix),
        file_sha256=atomic.sha256_file(npy_path),
        file_bytes=Path(npy_path).stat().st_size,
        generator=generator,
        warnings=data_warnings.columns(dataset),
        environment=environment,
    )
    for warning in meta.warnings:
        logging.getLogger("accel_choice").warning("data warning: %s: %s", dataset.name, warning.line)
    atomic.write_record(meta_path, meta)
    return meta


def load_dataset(npy_path: str | os.PathLike[str], meta: DatasetMeta | Mapping[str, Any]) -> Dataset:
    """Load the canonical array and refuse it unless its bytes match the recorded hash.

    `meta` may still be the metadata file's plain JSON (prepare_northstar reads it so); it is checked
    as a DatasetMeta record first.
    """
    if not isinstance(meta, DatasetMeta):
        meta = records.from_json(DatasetMeta, meta, f"the metadata of {npy_path}")
    verify_file(npy_path, meta.file_sha256, regenerate_hint="the data generation rule")
    matrix = np.load(npy_path, allow_pickle=False)
    return Dataset(meta.name, matrix, meta.feature_columns, meta.target_column)


def verify_file(path: str | os.PathLike[str], expected_sha256: str, regenerate_hint: str) -> None:
    actual = atomic.sha256_file(path)
    if actual != expected_sha256:
        raise ValueError(
            f"{path} has sha256 {actual[:16]}…, but {expected_sha256[:16]}… was recorded when it was written: "
            f"the file was changed or damaged. Delete it and re-run the workflow to regenerate it with {regenerate_hint}."
        )


def target_type(dataset: Dataset) -> pa.DataType:
    """int8 for a 0/1 target or class indices up to 127 (the textbook's), float32 for values."""
    target = dataset.target
    whole = bool((target == np.round(target)).all()) and target.size > 0
    return TARGET_TYPE if whole and target.min() >= -128 and target.max() <= 127 else pa.float32()


def arrow_schema(dataset: Dataset) -> pa.Schema:
    fields = [pa.field(name, pa.float32(), nullable=False) for name in dataset.feature_columns]
    fields.append(pa.field(dataset.target_column, target_type(dataset), nullable=False))
    return pa.schema(fields)


def to_arrow(dataset: Dataset) -> pa.Table:
    schema = arrow_schema(dataset)
    arrays = [pa.array(dataset.matrix[:, i], type=pa.float32()) for i in range(len(dataset.feature_columns))]
    kind = schema.field(dataset.target_column).type
    arrays.append(pa.array(dataset.target.astype(np.int8 if kind == TARGET_TYPE else np.float32), type=kind))
    return pa.Table.from_arrays(arrays, schema=schema)


def _exported_file(path: Path, fmt: str, table: pa.Table) -> ExportedFile:
    return ExportedFile(
        format=fmt,
        file=path.name,
        bytes=path.stat().st_size,
        sha256=atomic.sha256_file(path),
        rows=table.num_rows,
        columns=tuple(table.column_names),
        schema={field.name: str(field.type) for field in table.schema},
    )


def export_dataset(
    dataset: Dataset,
    parquet_path: str | os.PathLike[str],
    csv_path: str | os.PathLike[str],
    compression: str,
    environment: Environment,
) -> DatasetExport:
    """Write Parquet and CSV, check that both read back to the same float32 matrix, record both."""
    table = to_arrow(dataset)
    with atomic.atomic_path(parquet_path) as tmp:
        pq.write_table(table, tmp, compression=compression)
    with atomic.atomic_path(csv_path) as tmp:
        pa_csv.write_csv(table, tmp)
    expected = matrix_sha256(dataset.matrix)
    roundtrip = {
        "parquet": matrix_sha256(read_parquet_matrix(parquet_path, dataset.columns)) == expected,
        "csv": matrix_sha256(read_csv_matrix(csv_path, dataset.columns)) == expected,
    }
    if not all(roundtrip.values()):
        raise ValueError(f"export of {dataset.name} does not read back to the generated matrix: {roundtrip}")
    return DatasetExport(
        name=dataset.name,
        matrix_sha256=expected,
        roundtrip_exact=roundtrip,
        files={
            "parquet": _exported_file(Path(parquet_path), "parquet", table),
            "csv": _exported_file(Path(csv_path), "csv", table),
        },
        parquet_compression=compression,
        environment=environment,
    )


def read_parquet_matrix(path: str | os.PathLike[str], columns: Sequence[str]) -> np.ndarray:
    """Read `columns` of a Parquet file as one float32 matrix, a row a sample, in the order given.

    Untimed: the jobs' data and the export's check. The timed load goes through pandas (measure/loadconv.py).
    `pq.read_table(...).to_pandas()` imported pandas and pyarrow.dataset here, about 0.5 s of each training
    job's start. The values are the same (the layout C-ordered); nulls read as NaN, as pandas reads them."""
    return table_matrix(read_parquet_columns(path, columns), columns)


def read_parquet_columns(path: str | os.PathLike[str], columns: Sequence[str]) -> pa.Table:
    """Read `columns` of a Parquet file as an Arrow table, each column once, nothing else read."""
    with pq.ParquetFile(path) as parquet:
        return parquet.read(columns=list(dict.fromkeys(columns)))


def table_matrix(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Return `columns` of an Arrow table as one float32 matrix, a row a sample, in the order given."""
    matrix = np.empty((table.num_rows, len(columns)), dtype=np.float32)
    for index, name in enumerate(columns):
        matrix[:, index] = _column_array(table.column(name))
    return matrix


def _column_array(column: pa.ChunkedArray) -> np.ndarray:
    """Return a Parquet column as a NumPy array: numbers without nulls through DLPack, the rest through to_numpy.

    pyarrow's to_numpy imports pandas (pyarrow 26); DLPack does not, and copies nothing. DLPack takes no nulls
    and no booleans (bit-packed): those columns, never the workflow's own, take the slower way."""
    array = column.combine_chunks()
    if array.null_count == 0 and (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        return np.from_dlpack(array)
    return array.to_numpy(zero_copy_only=False)


def read_csv_matrix(path: str | os.PathLike[str], columns: Sequence[str]) -> np.ndarray:
    import pandas as pd

    frame = pd.read_csv(path)
    return frame[list(columns)].to_numpy(dtype=np.float32, copy=True)


def load_exported_parquet(path: str | os.PathLike[str], meta: DatasetMeta, export: DatasetExport) -> Dataset:
    """Load the exported Parquet file as a Dataset, refused unless it is the file export recorded."""
    verify_file(path, export.files["parquet"].sha256, regenerate_hint="the export_data rule")
    matrix = read_parquet_matrix(path, meta.columns)
    return Dataset(meta.name, matrix, meta.feature_columns, meta.target_column)


def load_benchmark_tensors(
    data_path: str | os.PathLike[str], meta_path: str | os.PathLike[str], export_path: str | os.PathLike[str]
) -> tuple[Any, Any, DatasetMeta]:
    """Load the exported benchmark Parquet as owned float32 torch tensors and its metadata.

    The exported benchmark Parquet as owned float32 torch tensors (features in the samples' shape,
    target) and its metadata, refused unless the file is the one export recorded."""
    import torch

    meta, export = records.read(DatasetMeta, meta_path), records.read(DatasetExport, export_path)
    dataset = load_exported_parquet(data_path, meta, export)
    features = dataset.features.reshape(-1, *meta.sample_shape).copy()
    return torch.from_numpy(features), torch.from_numpy(dataset.target.copy()), meta
