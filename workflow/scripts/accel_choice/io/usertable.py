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

from accel_choice.records import UserInputError
from accel_choice.records.data import Dataset


class TableError(UserInputError):
    """The user's table cannot be used as it is; the message says what to change."""


def read_table(path: str | os.PathLike[str], key: str = "data.northstar.table") -> pd.DataFrame:
    path = Path(path)
    if path.is_dir():
        raise TableError(f"{key}.path: {path} is a directory, not a file; give the Parquet or CSV file itself")
    if not path.is_file():
        raise TableError(f"{key}.path: {path} does not exist (or is not a file)")
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise TableError(f"{key}.path: {path} must end in .parquet or .csv, not {suffix or '(no suffix)'}")
    if path.stat().st_size == 0:
        raise TableError(f"{key}.path: {path} is empty (0 bytes)")
    if suffix == ".parquet":
        frame = pq.read_table(path).to_pandas()
    else:
        try:
            frame = pd.read_csv(path)
        except pd.errors.EmptyDataError:
            raise TableError(f"{key}.path: {path} is empty (no header, no rows)") from None
    if len(frame) == 0:
        raise TableError(f"{key}.path: {path} has no rows (columns {', '.join(map(str, frame.columns))})")
    return frame


def check_table(
    frame: pd.DataFrame,
    path: str,
    target: str,
    features: Sequence[str],
    key: str = "data.northstar.table",
    binary: bool = True,
) -> None:
    """Check the user's table.

    Columns present, numeric, complete and finite; the target not among the features nor carried by
    one (label_leaks); with `binary`, a 0/1 target with both classes (the loss checks any other target)."""
    missing = [column for column in (*features, target) if column not in frame.columns]
    if missing:
        raise TableError(
            f"{path}: column(s) {', '.join(missing)} not found; the table has {', '.join(map(str, frame.columns))}"
        )
    if target in features:
        raise TableError(
            f"{path}: the target column {target!r} is also listed in {key}.features: the model "
            "would be given the label it has to predict (test AUC 1.000); remove it from the features"
        )
    non_numeric = [
        c for c in features if not (pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c]))
    ]
    if non_numeric:
        kinds = ", ".join(f"{c} ({frame[c].dtype})" for c in non_numeric)
        raise TableError(f"{path}: feature column(s) must be numeric: {kinds}; encode them as numbers first")
    missing_values = [c for c in (*features, target) if frame[c].isna().any()]
    if missing_values:
        raise TableError(
            f"{path}: column(s) {', '.join(missing_values)} have missing values; fill or drop those rows first"
        )
    if binary:
        values = set(pd.unique(frame[target]).tolist())
        if not values <= {0, 1, True, False} or len(values) < 2:
            shown = ", ".join(map(str, sorted(values, key=str)[:6]))
            raise TableError(
                f"{path}: target column {target!r} must be binary 0/1 with both classes present; it holds {shown}"
            )
    with np.errstate(over="ignore"):  # a value beyond float32's range becomes inf, which is what is counted
        non_finite = {c: int(np.count_nonzero(~np.isfinite(frame[c].to_numpy(dtype=np.float32)))) for c in features}
    non_finite = {c: n for c, n in non_finite.items() if n}
    if non_finite:
        counts = ", ".join(f"{c} ({n} row{'s' if n != 1 else ''})" for c, n in non_finite.items())
        raise TableError(
            f"{path}: column(s) {counts} hold values that are not finite as float32 (inf, -inf, or beyond "
            f"±{float(np.finfo(np.float32).max):.1e}, the largest float32); fix or drop those rows first"
        )
    leaks = label_leaks(frame[list(features)], frame[target].to_numpy(dtype=np.float64), binary)
    if leaks:
        raise TableError(
            f"{path}: feature column(s) {'; '.join(f'{c!r} ({why})' for c, why in leaks.items())} give the model the "
            f"target column {target!r} (test AUC 1.000): remove them from the features"
        )


# |Pearson correlation| from which a feature counts as a copy of the target (1 − late, 2 × late, late + noise
# far below its spread): no honest feature of a table a person wants a model for comes this close.
NEAR_COPY_CORRELATION = 0.999


def label_leaks(features: pd.DataFrame, labels: np.ndarray, binary: bool) -> dict[str, str]:
    """Return the features that carry the label, with why.

    The features that carry the label, with why: a copy or near-copy (|correlation| >= NEAR_COPY_CORRELATION,
    or equal in every row), and, for a 0/1 target, a feature that alone separates the classes (every value
    of one class below every value of the other)."""
    found = {}
    for column in features.columns:
        values = features[column].to_numpy(dtype=np.float64)
        if np.array_equal(values, labels):
            found[column] = "equal to it in every row"
            continue
        if values.std() > 0 and labels.std() > 0:
            correlation = float(np.corrcoef(values, labels)[0, 1])
            if abs(correlation) >= NEAR_COPY_CORRELATION:
                found[column] = f"correlation {correlation:+.4f} with it"
                continue
        if binary and len(np.unique(labels)) == 2:
            low, high = values[labels == 0], values[labels == 1]
            if low.max() < high.min() or high.max() < low.min():
                found[column] = "alone separates its two classes"
    return found


def load_user_table(path: str | os.PathLike[str], target: str, features: Sequence[str]) -> Dataset:
    frame = read_table(path)
    check_table(frame, str(path), target, features)
    matrix = np.column_stack(
        [frame[list(features)].to_numpy(dtype=np.float32), frame[target].to_numpy(dtype=np.float32)]
    )
    return Dataset("northstar", np.ascontiguousarray(matrix, dtype=np.float32), tuple(features), target)
