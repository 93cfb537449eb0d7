"""Bring your own table: a clear error for every unusable file before training starts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from accel_choice.io import usertable

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
    with pytest.raises(
        usertable.TableError, match="column\\(s\\) volume not found; the table has distance, weight, late"
    ):
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


def test_target_listed_as_a_feature(tmp_path):
    with pytest.raises(
        usertable.TableError, match="the target column 'late' is also listed in data.northstar.table.features"
    ):
        usertable.load_user_table(_write(tmp_path, good_frame()), "late", ["distance", "late"])


@pytest.mark.parametrize("copy", [[0, 1, 0, 1], [False, True, False, True], [0.0, 1.0, 0.0, 1.0]])
def test_a_copy_of_the_target_under_another_name(tmp_path, copy):
    frame = good_frame().assign(delivered_late=copy)
    with pytest.raises(
        usertable.TableError,
        match="feature column\\(s\\) 'delivered_late' \\(equal to it in every row\\) give the model the target column 'late'",
    ):
        usertable.load_user_table(_write(tmp_path, frame), "late", [*FEATURES, "delivered_late"])


@pytest.mark.parametrize(
    ("leak", "why"),
    [
        ([1, 0, 1, 0], "correlation -1.0000 with it"),  # notlate = 1 - late
        ([3.0, 5.0, 3.0, 5.0], "correlation \\+1.0000 with it"),  # 2 * late + 3
        ([0.1, 0.9, 0.2, 0.8], "alone separates its two classes"),  # a score that thresholds to the label
    ],
    ids=["one minus", "scaled", "separates"],
)
def test_a_transformed_copy_of_the_target_is_refused_naming_the_column(tmp_path, leak, why):
    frame = good_frame().assign(leak=leak)
    with pytest.raises(usertable.TableError, match=f"feature column\\(s\\) 'leak' \\({why}\\) give the model"):
        usertable.load_user_table(_write(tmp_path, frame), "late", [*FEATURES, "leak"])


def test_a_near_copy_of_a_numeric_target_is_refused_and_a_related_feature_kept():
    rng = np.random.default_rng(0)
    y = rng.normal(size=500)
    frame = pd.DataFrame({"copy": 2 * y + 1e-4 * rng.normal(size=500), "related": y + rng.normal(size=500)})
    assert list(usertable.label_leaks(frame, y, binary=False)) == ["copy"]
    assert usertable.label_leaks(frame[["related"]], y, binary=False) == {}


def test_a_feature_that_only_mostly_matches_the_target_is_kept(tmp_path):
    frame = good_frame().assign(hint=[0, 1, 1, 1])
    assert usertable.load_user_table(_write(tmp_path, frame), "late", [*FEATURES, "hint"]).features.shape == (4, 3)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_non_finite_values_are_counted_per_column(tmp_path, suffix):
    frame = good_frame().assign(distance=[1.0, np.inf, -np.inf, 4.0], weight=[2.0, 3.0, 4.0, np.inf])
    path = _write(tmp_path, frame, suffix)
    with pytest.raises(usertable.TableError) as error:
        usertable.load_user_table(path, "late", FEATURES)
    assert str(error.value).startswith(
        f"{path}: column(s) distance (2 rows), weight (1 row) hold values that are not "
        "finite as float32 (inf, -inf, or beyond ±3.4e+38, the largest float32)"
    )


def test_a_value_beyond_float32_is_refused_although_float64_holds_it(tmp_path):
    frame = good_frame().assign(weight=[2.0, 1e39, 4.0, 3.4e38])  # 3.4e38 still fits in float32
    with pytest.raises(usertable.TableError, match=r"column\(s\) weight \(1 row\) hold values that are not finite"):
        usertable.load_user_table(_write(tmp_path, frame), "late", FEATURES)


def test_a_directory_is_named_as_a_directory(tmp_path):
    folder = tmp_path / "orders.csv"
    folder.mkdir()
    with pytest.raises(usertable.TableError, match="orders.csv is a directory, not a file"):
        usertable.load_user_table(folder, "late", FEATURES)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty \\(0 bytes\\)"),
        ("\n\n", "is empty \\(no header, no rows\\)"),
        ("distance,weight,late\n", "has no rows \\(columns distance, weight, late\\)"),
    ],
)
def test_an_empty_csv_is_named(tmp_path, content, message):
    path = tmp_path / "orders.csv"
    path.write_text(content)
    with pytest.raises(usertable.TableError, match=f"data.northstar.table.path: {path} {message}"):
        usertable.load_user_table(path, "late", FEATURES)


def test_an_empty_parquet_file_is_named(tmp_path):
    path = _write(tmp_path, good_frame().iloc[:0], ".parquet")
    with pytest.raises(usertable.TableError, match=f"data.northstar.table.path: {path} has no rows"):
        usertable.load_user_table(path, "late", FEATURES)
    path.write_bytes(b"")
    with pytest.raises(usertable.TableError, match=f"data.northstar.table.path: {path} is empty \\(0 bytes\\)"):
        usertable.load_user_table(path, "late", FEATURES)
