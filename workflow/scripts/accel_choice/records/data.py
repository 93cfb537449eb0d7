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


# An epoch of fewer steps than this at a batch size times a step or two and the epoch's own costs (FewSteps).
MIN_STEPS = 4
SHOWN = 4  # constant feature columns named in a warning; a sample with many (an image's empty border) is counted


@record
class ConstantTarget:
    """The target holds one value in every row: nothing to learn, so the loss and accuracy mean nothing."""

    column: str
    value: float
    rows: PositiveCount

    @property
    def line(self) -> str:
        """Word the warning in one line, the one way it is worded (job log, parse time, report)."""
        return f"target {self.column!r} is {self.value:g} in all {self.rows:,} rows: loss and accuracy mean nothing"


@record
class ConstantFeatures:
    """Feature columns that hold one value in every row: each carries nothing to learn from."""

    columns: tuple[str, ...]
    values: tuple[float, ...]  # each column's one value
    features: PositiveCount  # the data set's feature columns, of which these are constant

    def __post_init__(self) -> None:
        if not self.columns or len(self.columns) != len(self.values) or len(self.columns) > self.features:
            raise ValueError(
                f"{len(self.columns)} constant columns, {len(self.values)} values, {self.features} features"
            )

    @property
    def line(self) -> str:
        """Word the warning in one line: the first columns named with their value, the rest counted."""
        named = ", ".join(f"{c!r} = {v:g}" for c, v in zip(self.columns[:SHOWN], self.values[:SHOWN]))
        more = f" and {len(self.columns) - SHOWN} more" if len(self.columns) > SHOWN else ""
        return f"{len(self.columns)} of {self.features} feature columns are constant: {named}{more}; they carry nothing"


@record
class FewSteps:
    """timing.batch_sizes whose epoch over the benchmark's rows is fewer than MIN_STEPS steps: such a cell
    times a few steps and the epoch's own costs, not the throughput its batch size names."""

    batch_sizes: tuple[PositiveCount, ...]  # ascending
    steps: tuple[PositiveCount, ...]  # ⌈rows / B⌉ of each
    rows: PositiveCount

    def __post_init__(self) -> None:
        if not self.batch_sizes or len(self.steps) != len(self.batch_sizes):
            raise ValueError(f"{len(self.batch_sizes)} batch sizes but {len(self.steps)} step counts")
        if any(s != math.ceil(self.rows / b) or s >= MIN_STEPS for b, s in zip(self.batch_sizes, self.steps)):
            raise ValueError(f"steps {self.steps} are not ⌈{self.rows} / B⌉ < {MIN_STEPS} for B in {self.batch_sizes}")

    @property
    def line(self) -> str:
        """Word the warning in one line, naming the key, each batch size and its steps."""
        steps = ", ".join(f"{s} at B={b}" for b, s in zip(self.batch_sizes, self.steps))
        return (
            f"timing.batch_sizes: an epoch of {self.rows:,} rows is {steps} (fewer than {MIN_STEPS} steps): "
            "those cells time a few steps, not a throughput"
        )


# What the data themselves warn of (DatasetMeta), and with the batch sizes (the report's DataRow).
ColumnWarning = ConstantTarget | ConstantFeatures
DataWarning = ColumnWarning | FewSteps


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
    warnings: tuple[ColumnWarning, ...]  # constant columns (io.data_warnings.columns); empty for usable data
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
