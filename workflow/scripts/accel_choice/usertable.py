"""Bring your own table: a user's Parquet or CSV file in place of the generated Northstar data.

Every problem is reported before any training starts, naming the file and the column.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from .datagen import Dataset


class TableError(ValueError):
    """The user's table cannot be used as it is; the message says what to change."""


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise TableError(f"data.northstar.table.path: {path} does not exist (or is not a file)")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pq.read_table(path).to_pandas()
    if suffix == ".csv":
        return pd.read_csv(path)
    raise TableError(f"data.northstar.table.path: {path} must end in .parquet or .csv, not {suffix or '(no suffix)'}")


def check_table(frame: pd.DataFrame, path: str, target: str, features: Sequence[str]) -> None:
    missing = [column for column in (*features, target) if column not in frame.columns]
    if missing:
        raise TableError(f"{path}: column(s) {', '.join(missing)} not found; the table has {', '.join(map(str, frame.columns))}")
    non_numeric = [c for c in features if not (pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]))]
    if non_numeric:
        kinds = ", ".join(f"{c} ({frame[c].dtype})" for c in non_numeric)
        raise TableError(f"{path}: feature column(s) must be numeric: {kinds}; encode them as numbers first")
    missing_values = [c for c in (*features, target) if frame[c].isna().any()]
    if missing_values:
        raise TableError(f"{path}: column(s) {', '.join(missing_values)} have missing values; fill or drop those rows first")
    values = set(pd.unique(frame[target]).tolist())
    if not values <= {0, 1, True, False} or len(values) < 2:
        shown = ", ".join(map(str, sorted(values, key=str)[:6]))
        raise TableError(f"{path}: target column {target!r} must be binary 0/1 with both classes present; it holds {shown}")


def load_user_table(path: str | os.PathLike[str], target: str, features: Sequence[str]) -> Dataset:
    frame = read_table(path)
    check_table(frame, str(path), target, features)
    matrix = np.column_stack([frame[list(features)].to_numpy(dtype=np.float32), frame[target].to_numpy(dtype=np.float32)])
    return Dataset("northstar", np.ascontiguousarray(matrix, dtype=np.float32), tuple(features), target)
