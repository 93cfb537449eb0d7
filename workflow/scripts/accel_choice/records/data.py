"""The data a run works on: the in-memory dataset (the matrix and its columns), the metadata of its
canonical file (`data/{dataset}.meta.json`) and the record of its Parquet and CSV exports
(`data/{dataset}.export.json`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from accel_choice.records import Count, Fraction, NonNegative, PositiveCount, Sha256, record
from accel_choice.records.environment import Environment

# The export formats, in the order the export writes them.
EXPORT_FORMATS = ("parquet", "csv")


@dataclass(frozen=True)
class Dataset:
    name: str
    matrix: np.ndarray  # float32, shape (rows, features + 1); last column is the target
    feature_columns: tuple[str, ...]
    target_column: str

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.feature_columns, self.target_column)

    @property
    def features(self) -> np.ndarray:
        return self.matrix[:, :-1]

    @property
    def target(self) -> np.ndarray:
        return self.matrix[:, -1]


def _check_columns(feature_columns: tuple[str, ...], target_column: str) -> None:
    columns = (*feature_columns, target_column)
    if len(set(columns)) != len(columns):
        raise ValueError(f"column names repeat: {list(columns)}")


@record
class BenchmarkGenerator:
    """The settings the benchmark matrix was generated with (data.benchmark and the seed)."""

    rows: PositiveCount
    features: PositiveCount
    noise: NonNegative
    seed: Count


@record
class NorthstarGenerator:
    """The settings the Northstar-like table was generated with (data.northstar and the seed)."""

    rows: PositiveCount
    late_rate: Fraction
    seed: Count


@record
class UserDataSource:
    """Your own data (data.benchmark.table or .arrays, data.northstar.table): the files it was read from, with
    their sha256, and the shape of one sample (the flattened columns are reshaped to it for the model)."""

    kind: Literal["table", "arrays"]
    files: tuple[str, ...]  # the table; or x.npy, y.npy
    sha256: tuple[Sha256, ...]  # of each file, in that order
    rows: PositiveCount
    sample_shape: tuple[PositiveCount, ...]
    seed: Count  # the run's seed (shuffling, initial weights), as a generator's

    def __post_init__(self) -> None:
        if len(self.files) != len(self.sha256):
            raise ValueError(f"{len(self.files)} files but {len(self.sha256)} hashes")


@record(schema="dataset-meta", version=4)
class DatasetMeta:
    """data/{dataset}.meta.json: the canonical `.npy` file of a data set (generated, or imported from
    your own files), its columns and hashes. The matrix holds one flattened sample per row and the
    target last; `sample_shape` is a sample's shape for the model (the features' count for a table)."""

    name: str
    rows: Count
    feature_columns: tuple[str, ...]
    target_column: str
    sample_shape: tuple[PositiveCount, ...]
    dtype: Literal["float32"]
    positive_rate: Fraction | None  # null: the target is not 0/1 (a class index or a value)
    matrix_sha256: Sha256  # of the float32 matrix's bytes, C order: the same for every file holding the data
    file_sha256: Sha256  # of the .npy file
    file_bytes: Count
    generator: BenchmarkGenerator | NorthstarGenerator | UserDataSource
    environment: Environment

    def __post_init__(self) -> None:
        _check_columns(self.feature_columns, self.target_column)
        if self.generator.rows != self.rows:
            raise ValueError(f"rows {self.rows} but the generator made {self.generator.rows}")
        if math.prod(self.sample_shape) != len(self.feature_columns):
            raise ValueError(
                f"sample_shape {self.sample_shape} does not hold the {len(self.feature_columns)} feature columns"
            )

    @property
    def columns(self) -> tuple[str, ...]:
        return (*self.feature_columns, self.target_column)


@record
class ExportedFile:
    """One exported file: its size, hash, and the columns and Arrow types it holds."""

    format: str
    file: str
    bytes: Count
    sha256: Sha256
    rows: Count
    columns: tuple[str, ...]
    schema: dict[str, str]  # column -> Arrow type, e.g. "float", "int8"

    def __post_init__(self) -> None:
        if tuple(self.schema) != self.columns:
            raise ValueError(f"schema names {list(self.schema)}, not the columns {list(self.columns)}")


@record(schema="dataset-export", version=3)
class DatasetExport:
    """data/{dataset}.export.json: the Parquet and CSV files of a data set, each checked to read back exactly."""

    name: str
    matrix_sha256: Sha256
    roundtrip_exact: dict[str, bool]  # per format: reads back to the generated float32 matrix
    files: dict[str, ExportedFile]  # per format (EXPORT_FORMATS)
    parquet_compression: str
    environment: Environment

    def __post_init__(self) -> None:
        for what, keys in (("files", self.files), ("roundtrip_exact", self.roundtrip_exact)):
            if sorted(keys) != sorted(EXPORT_FORMATS):
                raise ValueError(f"{what} holds {sorted(keys)}; expected {sorted(EXPORT_FORMATS)}")
        for fmt, exported in self.files.items():
            if exported.format != fmt:
                raise ValueError(f"files.{fmt} is a {exported.format} file")
        if len({exported.rows for exported in self.files.values()}) != 1:
            raise ValueError(f"the exports hold different row counts: {[f.rows for f in self.files.values()]}")
