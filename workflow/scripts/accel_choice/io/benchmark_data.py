"""Your own benchmark data in place of the generated matrix: a table (`data.benchmark.table`:
Parquet or CSV, a target and numeric feature columns) or arrays (`data.benchmark.arrays`: `x.npy`
of any sample shape, `y.npy` one target per sample).

`resolve` runs when the workflow is parsed: it reads only the files' shapes (Parquet metadata, the
`.npy` headers; a CSV is read whole), refuses what cannot work with a message naming the key, and
sets `data.benchmark.rows` and `.features` from the data, so every rule's params follow it.
`load` runs in the import job: every value checked, the data as a Dataset of flattened samples.
No pickle is ever loaded (`allow_pickle=False`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from accel_choice.io import atomic
from accel_choice.io.targets import DataError
from accel_choice.io.usertable import TableError, check_table, read_table
from accel_choice.records.data import Dataset, UserDataSource

TABLE, ARRAYS = "data.benchmark.table", "data.benchmark.arrays"


def source(config: dict[str, Any]) -> dict[str, Any] | None:
    """Return the user's data section ({"kind": "table"|"arrays", ...}), or None for the generated matrix."""
    bench = config["data"]["benchmark"]
    if bench.get("table") and bench.get("arrays"):
        raise DataError(f"config keys {TABLE} and {ARRAYS}: both are set; give one source of benchmark data")
    if bench.get("table"):
        return {"kind": "table", **bench["table"]}
    if bench.get("arrays"):
        return {"kind": "arrays", **bench["arrays"]}
    return None


def target_column(found: dict[str, Any]) -> str:
    """Return the target's column name: the table's `target`, or `y` for arrays."""
    return found["target"] if found["kind"] == "table" else "y"


def files(found: dict[str, Any] | None) -> list[str]:
    """Return the user's files, inputs of the import rule (editing one re-imports it and re-times)."""
    if found is None:
        return []
    return [found["path"]] if found["kind"] == "table" else [found["x"], found["y"]]


def _file(path: str, key: str, suffixes: Sequence[str]) -> Path:
    where = Path(path)
    allowed = " or ".join(suffixes)
    if where.is_dir():
        raise DataError(f"config key {key}: {path} is a directory, not a file; allowed: a {allowed} file")
    if not where.is_file():
        raise DataError(f"config key {key}: {path} does not exist; allowed: a {allowed} file")
    if where.suffix.lower() not in suffixes:
        raise DataError(f"config key {key}: {path} must end in {allowed}, not {where.suffix or '(no suffix)'}")
    if where.stat().st_size == 0:
        raise DataError(f"config key {key}: {path} is empty (0 bytes)")
    return where


def _npy_shape(path: Path, key: str) -> tuple[int, ...]:
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as error:  # an object array (pickles) or a damaged header
        raise DataError(f"config key {key}: {path} cannot be read as a plain .npy array ({error})") from None
    return tuple(int(n) for n in _real(array, path, key).shape)


def _real(array: np.ndarray, path: Any, key: str) -> np.ndarray:
    """`array`, refused unless it holds real numbers: complex values would be cut to their real part."""
    if array.dtype.kind not in "biuf":
        raise DataError(
            f"config key {key}: {path} holds {array.dtype} values; allowed: real numbers (bool, int, float)"
        )
    return array


def shape(found: dict[str, Any]) -> tuple[int, tuple[int, ...]]:
    """(rows, one sample's shape), from the files' metadata."""
    if found["kind"] == "table":
        path = _file(found["path"], f"{TABLE}.path", (".parquet", ".csv"))
        if path.suffix.lower() == ".parquet":
            try:
                rows = pq.read_metadata(path).num_rows
            except Exception as error:  # pyarrow's errors for a damaged or foreign file
                raise DataError(f"config key {TABLE}.path: {path} cannot be read as Parquet ({error})") from None
        else:
            rows = len(read_table(path, TABLE))
        if len(found["features"]) != len(set(found["features"])):
            raise DataError(f"config key {TABLE}.features: a column is listed twice: {found['features']}")
        if found["target"] in found["features"]:
            raise DataError(
                f"config key {TABLE}.features: lists the target column {found['target']!r}, which would give the "
                f"model the label it has to predict; allowed: feature columns other than {TABLE}.target"
            )
        return rows, (len(found["features"]),)
    x_shape = _npy_shape(_file(found["x"], f"{ARRAYS}.x", (".npy",)), f"{ARRAYS}.x")
    y_shape = _npy_shape(_file(found["y"], f"{ARRAYS}.y", (".npy",)), f"{ARRAYS}.y")
    if len(x_shape) < 2 or 0 in x_shape:
        raise DataError(
            f"config key {ARRAYS}.x: {found['x']} has shape {x_shape}; allowed: (rows, *one sample's shape), "
            "at least two dimensions, none empty"
        )
    if y_shape not in ((x_shape[0],), (x_shape[0], 1)):
        raise DataError(
            f"config key {ARRAYS}.y: {found['y']} has shape {y_shape}; allowed: one target per row of x, "
            f"({x_shape[0]},) or ({x_shape[0]}, 1)"
        )
    return x_shape[0], x_shape[1:]


def resolve(config: dict[str, Any]) -> tuple[int, ...]:
    """Return one sample's shape; with your own data, data.benchmark.rows and .features are set from it."""
    bench = config["data"]["benchmark"]
    found = source(config)
    if found is None:
        return (bench["features"],)
    rows, sample = shape(found)
    if rows < 2:
        raise DataError(f"config key {TABLE if found['kind'] == 'table' else ARRAYS}: {rows} row(s); at least 2")
    bench["rows"], bench["features"] = rows, math.prod(sample)
    return sample


def load(found: dict[str, Any], seed: int) -> tuple[Dataset, tuple[int, ...], UserDataSource]:
    """Load the user's data, every value checked, as a Dataset of flattened float32 samples (target last)."""
    if found["kind"] == "table":
        path, target, features = found["path"], found["target"], list(found["features"])
        try:
            frame = read_table(path, TABLE)
            check_table(frame, path, target, features, key=TABLE, binary=False)
        except TableError as error:
            raise DataError(f"config key {TABLE}: {error}") from None
        x = frame[features].to_numpy(dtype=np.float32)
        y = frame[target].to_numpy(dtype=np.float32)
        paths, columns = [path], tuple(features)
    else:
        x = _real(np.load(found["x"], allow_pickle=False), found["x"], f"{ARRAYS}.x")
        y = _real(np.load(found["y"], allow_pickle=False), found["y"], f"{ARRAYS}.y").reshape(-1)
        with np.errstate(over="ignore"):
            x, y = x.astype(np.float32), y.astype(np.float32)
        bad = int(np.count_nonzero(~np.isfinite(x)))
        if bad:
            raise DataError(
                f"config key {ARRAYS}.x: {found['x']} holds {bad} value(s) that are not finite as float32 "
                "(nan, inf or beyond the largest float32)"
            )
        paths, columns = [found["x"], found["y"]], tuple(f"x{i}" for i in range(math.prod(x.shape[1:])))
    sample = tuple(int(n) for n in x.shape[1:])
    matrix = np.ascontiguousarray(np.column_stack([x.reshape(len(x), -1), y]), dtype=np.float32)
    made = UserDataSource(
        kind=found["kind"],
        files=tuple(str(p) for p in paths),
        sha256=tuple(atomic.sha256_file(p) for p in paths),
        rows=len(matrix),
        sample_shape=sample,
        seed=seed,
    )
    return Dataset("benchmark", matrix, columns, target_column(found)), sample, made


def targets(found: dict[str, Any]) -> np.ndarray:
    """Return the target column alone (for the parse-time check against the loss): numeric, no missing value."""
    if found["kind"] == "arrays":
        return np.load(found["y"], allow_pickle=False).reshape(-1)
    path, name, key = Path(found["path"]), found["target"], f"{TABLE}.target"
    if path.suffix.lower() == ".parquet":
        try:
            names = pq.read_schema(path).names
            column = pq.read_table(path, columns=[name]).column(0) if name in names else None
        except Exception as error:  # pyarrow's errors for a damaged or foreign file
            raise DataError(f"config key {TABLE}.path: {path} cannot be read as Parquet ({error})") from None
        if column is None:
            raise DataError(f"config key {key}: column {name!r} not found in {path}; it has {', '.join(names)}")
        series = column.to_pandas()
    else:
        frame = read_table(path, TABLE)
        if name not in frame.columns:
            raise DataError(f"config key {key}: column {name!r} not found in {path}")
        series = frame[name]
    if series.isna().any():
        raise DataError(f"config key {key}: column {name!r} of {path} has {int(series.isna().sum())} missing value(s)")
    return series.to_numpy()
