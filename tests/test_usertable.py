"""Bring your own table: a clear error for every unusable file before training starts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel_choice import usertable

FEATURES = ["distance", "weight"]


def _write(tmp_path, frame, suffix=".csv"):
    path = tmp_path / f"orders{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return path


def good_frame():
    return pd.DataFrame({"distance": [1.0, 2.0, 3.0, 4.0], "weight": [2, 3, 4, 5], "late": [0, 1, 0, 1]})


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_good_table_loads_as_float32(tmp_path, suffix):
    dataset = usertable.load_user_table(_write(tmp_path, good_frame(), suffix), "late", FEATURES)
    assert dataset.matrix.dtype == np.float32
    assert dataset.feature_columns == tuple(FEATURES) and dataset.target_column == "late"
    assert dataset.target.tolist() == [0, 1, 0, 1]


def test_missing_file(tmp_path):
    with pytest.raises(usertable.TableError, match="data.northstar.table.path: .*nope.csv does not exist"):
        usertable.load_user_table(tmp_path / "nope.csv", "late", FEATURES)


def test_unknown_suffix(tmp_path):
    path = tmp_path / "orders.xlsx"
    path.write_text("x")
    with pytest.raises(usertable.TableError, match=r"must end in \.parquet or \.csv"):
        usertable.load_user_table(path, "late", FEATURES)


def test_missing_column(tmp_path):
    with pytest.raises(usertable.TableError, match="column\\(s\\) volume not found; the table has distance, weight, late"):
        usertable.load_user_table(_write(tmp_path, good_frame()), "late", ["distance", "volume"])


def test_non_binary_target(tmp_path):
    frame = good_frame().assign(late=[0, 1, 2, 1])
    with pytest.raises(usertable.TableError, match="target column 'late' must be binary 0/1"):
        usertable.load_user_table(_write(tmp_path, frame), "late", FEATURES)


def test_single_class_target(tmp_path):
    frame = good_frame().assign(late=[0, 0, 0, 0])
    with pytest.raises(usertable.TableError, match="both classes present"):
        usertable.load_user_table(_write(tmp_path, frame), "late", FEATURES)


def test_non_numeric_feature(tmp_path):
    frame = good_frame().assign(weight=["a", "b", "c", "d"])
    with pytest.raises(usertable.TableError, match="feature column\\(s\\) must be numeric: weight"):
        usertable.load_user_table(_write(tmp_path, frame), "late", FEATURES)


def test_missing_values(tmp_path):
    frame = good_frame().assign(distance=[1.0, None, 3.0, 4.0])
    with pytest.raises(usertable.TableError, match="distance have missing values"):
        usertable.load_user_table(_write(tmp_path, frame), "late", FEATURES)
