"""Your own benchmark data (data.benchmark.table / .arrays): the parse-time shape and its errors, the
import's checks, and the way through the canonical matrix, the export and back to the sample shape."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders_training import environment

from accel_choice import records
from accel_choice.io import atomic, benchmark_data, dataio, targets
from accel_choice.io.targets import DataError
from accel_choice.records.data import DatasetMeta


def config(**benchmark) -> dict:
    return {"data": {"benchmark": {"rows": 8192, "features": 32, "noise": 0.2, **benchmark}}}


def table_file(tmp_path: Path, suffix: str = ".parquet", **columns) -> str:
    frame = pd.DataFrame(columns or {"a": [0.5, 1.5, 2.5, 3.5], "b": [1, 2, 3, 4], "late": [0, 1, 0, 1]})
    path = tmp_path / f"t{suffix}"
    frame.to_parquet(path) if suffix == ".parquet" else frame.to_csv(path, index=False)
    return str(path)


def arrays(tmp_path: Path, x: np.ndarray, y: np.ndarray) -> dict:
    np.save(tmp_path / "x.npy", x, allow_pickle=False)
    np.save(tmp_path / "y.npy", y, allow_pickle=False)
    return {"x": str(tmp_path / "x.npy"), "y": str(tmp_path / "y.npy")}


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_table_sets_rows_and_features(tmp_path: Path, suffix: str) -> None:
    made = config(table={"path": table_file(tmp_path, suffix), "target": "late", "features": ["a", "b"]})
    assert benchmark_data.resolve(made) == (2,)
    assert made["data"]["benchmark"]["rows"] == 4 and made["data"]["benchmark"]["features"] == 2


def test_arrays_keep_the_sample_shape_and_features_are_its_size(tmp_path: Path) -> None:
    made = config(arrays=arrays(tmp_path, np.zeros((6, 2, 5), np.float16), np.arange(6) % 2))
    assert benchmark_data.resolve(made) == (2, 5)
    assert made["data"]["benchmark"]["rows"] == 6 and made["data"]["benchmark"]["features"] == 10


def test_generated_data_keeps_its_config() -> None:
    made = config()
    assert benchmark_data.resolve(made) == (32,) and made["data"]["benchmark"]["rows"] == 8192


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("both", "config keys data.benchmark.table and data.benchmark.arrays: both are set"),
        ("missing", "config key data.benchmark.arrays.x: {tmp}/none.npy does not exist"),
        ("directory", "config key data.benchmark.arrays.x: {tmp} is a directory, not a file"),
        ("suffix", "config key data.benchmark.table.path: {tmp}/t.txt must end in .parquet or .csv, not .txt"),
        ("target as a feature", "config key data.benchmark.table.features: lists the target column 'a', which"),
        ("empty", "config key data.benchmark.table.path: {tmp}/t.csv is empty (0 bytes)"),
        ("one dimension", "config key data.benchmark.arrays.x: {tmp}/x.npy has shape (6,); allowed: (rows,"),
        ("y rows", "config key data.benchmark.arrays.y: {tmp}/y.npy has shape (5,); allowed: one target per row"),
        ("pickle", "config key data.benchmark.arrays.x: {tmp}/x.npy cannot be read as a plain .npy array"),
        ("strings", "config key data.benchmark.arrays.x: {tmp}/x.npy holds <U1 values; allowed: real numbers"),
        ("complex", "config key data.benchmark.arrays.x: {tmp}/x.npy holds complex64 values; allowed: real numbers"),
        ("complex y", "config key data.benchmark.arrays.y: {tmp}/y.npy holds complex128 values; allowed: real numbers"),
        ("one row", "config key data.benchmark.arrays: 1 row(s); at least 2"),
    ],
)
def test_data_that_cannot_work_is_named_when_the_workflow_is_parsed(tmp_path: Path, case: str, words: str) -> None:
    y = np.zeros(6)
    sources = {
        "both": lambda: config(table={"path": "t.csv", "target": "y", "features": ["a"]}, arrays={"x": "x", "y": "y"}),
        "missing": lambda: config(arrays={"x": str(tmp_path / "none.npy"), "y": str(tmp_path / "none.npy")}),
        "directory": lambda: config(arrays={"x": str(tmp_path), "y": str(tmp_path)}),
        "suffix": lambda: (
            (tmp_path / "t.txt").write_text("a\n1\n")
            and config(table={"path": str(tmp_path / "t.txt"), "target": "a", "features": ["a"]})
        ),
        "target as a feature": lambda: (
            (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4\n")
            and config(table={"path": str(tmp_path / "t.csv"), "target": "a", "features": ["b", "a"]})
        ),
        "empty": lambda: (
            (tmp_path / "t.csv").touch()
            or config(table={"path": str(tmp_path / "t.csv"), "target": "a", "features": ["b"]})
        ),
        "one dimension": lambda: config(arrays=arrays(tmp_path, np.zeros(6), y)),
        "y rows": lambda: config(arrays=arrays(tmp_path, np.zeros((6, 3)), np.zeros(5))),
        "pickle": lambda: (
            np.save(tmp_path / "x.npy", np.array([{"a": 1}] * 6), allow_pickle=True)
            or np.save(tmp_path / "y.npy", y)
            or config(arrays={"x": str(tmp_path / "x.npy"), "y": str(tmp_path / "y.npy")})
        ),
        "strings": lambda: config(arrays=arrays(tmp_path, np.array([["a"]] * 6), y)),
        "complex": lambda: config(arrays=arrays(tmp_path, np.ones((6, 3), np.complex64), y)),
        "complex y": lambda: config(arrays=arrays(tmp_path, np.zeros((6, 3)), y + 1j)),
        "one row": lambda: config(arrays=arrays(tmp_path, np.zeros((1, 3)), np.zeros(1))),
    }
    with pytest.raises(DataError) as raised:
        benchmark_data.resolve(sources[case]())
    assert words.format(tmp=tmp_path) in str(raised.value)


def test_the_import_checks_every_value_naming_the_key(tmp_path: Path) -> None:
    text = table_file(tmp_path, a=[0.5, 1.0], kind=["x", "y"], late=[0, 1])
    found = {"kind": "table", "path": text, "target": "late", "features": ["a", "kind"]}
    with pytest.raises(
        DataError, match=r"config key data.benchmark.table: .*feature column\(s\) must be numeric: kind"
    ):
        benchmark_data.load(found, 0)
    gaps = table_file(tmp_path, ".csv", a=[0.5, None], late=[0, 1])
    with pytest.raises(DataError, match="column\\(s\\) a have missing values"):
        benchmark_data.load({"kind": "table", "path": gaps, "target": "late", "features": ["a"]}, 0)
    bad = arrays(tmp_path, np.array([[1.0, np.inf], [0.0, 1e39]]), np.zeros(2))
    with pytest.raises(
        DataError, match="config key data.benchmark.arrays.x: .* holds 2 value\\(s\\) that are not finite"
    ):
        benchmark_data.load({"kind": "arrays", **bad}, 0)


def test_a_target_that_does_not_fit_the_loss_is_named() -> None:
    with pytest.raises(DataError, match="bce needs targets in \\[0, 1\\]; the target ranges from 0 to 3"):
        targets.check_target_values(np.array([0, 3]), "bce", None, "the target")
    with pytest.raises(DataError, match="ce needs class indices 0 .. 2; the target ranges from -1 to 2"):
        targets.check_target_values(np.array([-1, 2]), "ce", 3, "the target")
    # Finite in float64, inf in float32: refused before any job; float64 that only loses precision passes.
    with pytest.raises(DataError, match=r"the target holds 1 value\(s\) beyond the largest float32 \(3.403e\+38\)"):
        targets.check_target_values(np.array([0.5, 1e39]), "mse", None, "the target")
    targets.check_target_values(np.array([0.1, 3e38, np.pi]), "mse", None, "the target")


def test_arrays_go_through_the_export_and_come_back_in_their_shape(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 2, 3)).astype(np.float16)
    y = rng.standard_normal(10).astype(np.float32)  # regression targets: exported as float32, exactly
    found = {"kind": "arrays", **arrays(tmp_path, x, y)}
    dataset, sample, source = benchmark_data.load(found, 7)
    assert sample == (2, 3) and dataset.feature_columns == tuple(f"x{i}" for i in range(6))
    assert source.sha256 == (atomic.sha256_file(found["x"]), atomic.sha256_file(found["y"]))
    meta = dataio.save_dataset(
        dataset, tmp_path / "b.npy", tmp_path / "b.meta.json", source, environment(), sample_shape=sample
    )
    assert meta.positive_rate is None and meta.sample_shape == (2, 3)
    export = dataio.export_dataset(dataset, tmp_path / "b.parquet", tmp_path / "b.csv", "zstd", environment())
    assert export.roundtrip_exact == {"parquet": True, "csv": True}
    assert export.files["parquet"].schema["y"] == "float"
    atomic.write_record(tmp_path / "b.export.json", export)
    xt, yt, read = dataio.load_benchmark_tensors(
        tmp_path / "b.parquet", tmp_path / "b.meta.json", tmp_path / "b.export.json"
    )
    assert xt.shape == (10, 2, 3) and np.array_equal(xt.numpy(), x.astype(np.float32))
    assert np.array_equal(yt.numpy(), y) and read == meta
    assert json.loads((tmp_path / "b.meta.json").read_text())["generator"]["kind"] == "arrays"
    assert records.read(DatasetMeta, tmp_path / "b.meta.json").generator.files == (found["x"], found["y"])


def test_a_table_keeps_its_column_names_and_its_0_1_target(tmp_path: Path) -> None:
    found = {"kind": "table", "path": table_file(tmp_path), "target": "late", "features": ["b", "a"]}
    dataset, sample, source = benchmark_data.load(found, 0)
    assert dataset.feature_columns == ("b", "a") and dataset.target_column == "late" and sample == (2,)
    assert np.array_equal(dataset.features[:, 0], [1, 2, 3, 4]) and source.kind == "table"
    assert dataio.positive_rate(dataset.target) == 0.5


def test_a_target_column_that_is_not_numbers_or_has_gaps_is_named(tmp_path: Path) -> None:
    text = table_file(tmp_path, a=[0.5, 1.0, 2.0], late=["no", "yes", "no"])
    found = {"kind": "table", "path": text, "target": "late", "features": ["a"]}
    with pytest.raises(DataError, match="config key model.loss: the target is not numeric"):
        targets.check_target_values(benchmark_data.targets(found), "bce", None, "the target")
    gaps = table_file(tmp_path, ".csv", a=[0.5, 1.0, 2.0], late=[0, None, 1])
    with pytest.raises(DataError, match="config key data.benchmark.table.target: column 'late' of .* 1 missing value"):
        benchmark_data.targets({"kind": "table", "path": gaps, "target": "late", "features": ["a"]})


def test_a_damaged_parquet_file_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "t.parquet"
    broken.write_bytes(b"PAR1 not really parquet")
    found = config(table={"path": str(broken), "target": "late", "features": ["a"]})
    with pytest.raises(DataError, match="config key data.benchmark.table.path: .* cannot be read as Parquet"):
        benchmark_data.resolve(found)


def test_the_import_refuses_complex_values_it_would_cut_to_their_real_part(tmp_path: Path) -> None:
    found = {"kind": "arrays", **arrays(tmp_path, np.full((4, 2), 1 + 2j, np.complex64), np.arange(4) % 2)}
    with pytest.raises(DataError, match=r"arrays\.x: .*x\.npy holds complex64 values; allowed: real numbers"):
        benchmark_data.load(found, seed=0)
