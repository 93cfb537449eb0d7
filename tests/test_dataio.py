"""Canonical files, Parquet/CSV export, integrity checks; atomic writes and JSON reading."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from accel_choice.io import atomic, dataio
from accel_choice.measure import datagen


@pytest.fixture(scope="module")
def bench():
    return datagen.make_benchmark(257, 5, 0.2, 20261020)


@pytest.fixture(scope="module")
def north():
    return datagen.make_northstar(300, 0.18, 20261020)


def _flip_byte(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    i = len(data) // 2 if offset is None else offset
    data[i] ^= 0x01
    path.write_bytes(bytes(data))


def _truncate(path: Path, keep: int | None = None) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10 if keep is None else keep])


def _export(dataset, directory: Path, compression: str = "zstd"):
    directory.mkdir(parents=True, exist_ok=True)
    pq_path, csv_path = directory / f"{dataset.name}.parquet", directory / f"{dataset.name}.csv"
    record = dataio.export_dataset(dataset, pq_path, csv_path, compression)
    return record, pq_path, csv_path


# --- canonical .npy + meta ---------------------------------------------------------------


def test_save_and_load_dataset_roundtrip(tmp_path, bench):
    npy, meta_path = tmp_path / "d" / "benchmark.npy", tmp_path / "d" / "benchmark.meta.json"
    meta = dataio.save_dataset(bench, npy, meta_path, {"generator": {"seed": 20261020}})
    assert meta == atomic.read_json(meta_path)
    assert meta["rows"] == 257
    assert meta["feature_columns"] == list(bench.feature_columns)
    assert meta["target_column"] == "y"
    assert meta["dtype"] == "float32"
    assert meta["positive_rate"] == pytest.approx(float(bench.target.mean()))
    assert meta["matrix_sha256"] == atomic.sha256_bytes(bench.matrix.tobytes())
    assert meta["file_sha256"] == atomic.sha256_file(npy)
    assert meta["file_bytes"] == npy.stat().st_size
    assert meta["generator"] == {"seed": 20261020}

    loaded = dataio.load_dataset(npy, meta)
    assert loaded.matrix.dtype == np.float32
    assert np.array_equal(loaded.matrix, bench.matrix)
    assert loaded.columns == bench.columns
    assert loaded.name == "benchmark"


def test_load_dataset_refuses_edited_npy(tmp_path, bench):
    npy, meta_path = tmp_path / "b.npy", tmp_path / "b.meta.json"
    meta = dataio.save_dataset(bench, npy, meta_path, {})
    _flip_byte(npy, offset=npy.stat().st_size - 3)  # inside the data, the header stays valid
    with pytest.raises(ValueError, match=re.escape(str(npy))):
        dataio.load_dataset(npy, meta)


def test_matrix_sha256_independent_of_layout(bench):
    fortran = np.asfortranarray(bench.matrix)
    assert dataio.matrix_sha256(fortran) == dataio.matrix_sha256(bench.matrix)
    changed = bench.matrix.copy()
    changed[0, 0] = np.nextafter(changed[0, 0], np.float32(np.inf))
    assert dataio.matrix_sha256(changed) != dataio.matrix_sha256(bench.matrix)


# --- export ---------------------------------------------------------------------------


def test_parquet_schema_is_float32_features_and_int8_target(tmp_path, north):
    record, pq_path, _ = _export(north, tmp_path)
    schema = pq.read_schema(pq_path)
    assert schema.names == list(north.columns)
    for name in north.feature_columns:
        assert schema.field(name).type == pa.float32()
        assert not schema.field(name).nullable
    assert schema.field(north.target_column).type == pa.int8()
    expected = {name: "float" for name in north.feature_columns} | {north.target_column: "int8"}
    assert record["files"]["parquet"]["schema"] == expected
    assert record["files"]["csv"]["schema"] == expected


def test_export_record_fields(tmp_path, bench):
    record, pq_path, csv_path = _export(bench, tmp_path)
    assert record["name"] == "benchmark"
    assert record["matrix_sha256"] == dataio.matrix_sha256(bench.matrix)
    assert record["roundtrip_exact"] == {"parquet": True, "csv": True}
    assert record["parquet_compression"] == "zstd"
    for fmt, path in (("parquet", pq_path), ("csv", csv_path)):
        f = record["files"][fmt]
        assert f["format"] == fmt
        assert f["file"] == path.name
        assert f["bytes"] == path.stat().st_size > 0
        assert f["sha256"] == atomic.sha256_file(path)
        assert f["rows"] == 257
        assert f["columns"] == list(bench.columns)
    # nothing but the two exports in the folder: no temporary files left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["benchmark.csv", "benchmark.parquet"]


@pytest.mark.parametrize("which", ["bench", "north"])
def test_csv_and_parquet_read_back_exactly(tmp_path, which, request):
    dataset = request.getfixturevalue(which)
    _, pq_path, csv_path = _export(dataset, tmp_path)
    from_parquet = dataio.read_parquet_matrix(pq_path, dataset.columns)
    from_csv = dataio.read_csv_matrix(csv_path, dataset.columns)
    assert from_parquet.dtype == from_csv.dtype == np.float32
    assert np.array_equal(from_parquet, dataset.matrix)
    assert np.array_equal(from_csv, dataset.matrix)
    # the CSV is plain text with a header and the int8 target written as an integer
    frame = pd.read_csv(csv_path)
    assert list(frame.columns) == list(dataset.columns)
    assert set(frame[dataset.target_column].unique()) <= {0, 1}
    assert frame[dataset.target_column].dtype.kind == "i"


def test_two_exports_are_byte_identical(tmp_path, bench):
    rec1, pq1, csv1 = _export(bench, tmp_path / "one")
    rec2, pq2, csv2 = _export(bench, tmp_path / "two")
    assert atomic.sha256_file(pq1) == atomic.sha256_file(pq2)
    assert atomic.sha256_file(csv1) == atomic.sha256_file(csv2)
    assert rec1["files"] == rec2["files"]


def test_parquet_compression_is_recorded_and_used(tmp_path, bench):
    _, pq_path, _ = _export(bench, tmp_path, compression="snappy")
    assert pq.ParquetFile(pq_path).metadata.row_group(0).column(0).compression == "SNAPPY"


# --- verify_file / load_exported_parquet ---------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("damage", [_flip_byte, _truncate])
def test_verify_file_names_the_edited_file(tmp_path, bench, fmt, damage):
    record, pq_path, csv_path = _export(bench, tmp_path)
    path = pq_path if fmt == "parquet" else csv_path
    dataio.verify_file(path, record["files"][fmt]["sha256"], regenerate_hint="the export_data rule")  # intact: no error
    damage(path)
    with pytest.raises(ValueError, match=re.escape(str(path))) as err:
        dataio.verify_file(path, record["files"][fmt]["sha256"], regenerate_hint="the export_data rule")
    assert "the export_data rule" in str(err.value)
    assert record["files"][fmt]["sha256"][:16] in str(err.value)


def test_load_exported_parquet_intact(tmp_path, north):
    meta = dataio.save_dataset(north, tmp_path / "n.npy", tmp_path / "n.meta.json", {})
    record, pq_path, _ = _export(north, tmp_path)
    loaded = dataio.load_exported_parquet(pq_path, meta, record)
    assert np.array_equal(loaded.matrix, north.matrix)
    assert loaded.feature_columns == north.feature_columns
    assert loaded.target_column == north.target_column


def test_load_exported_parquet_refuses_edited_file(tmp_path, north):
    meta = dataio.save_dataset(north, tmp_path / "n.npy", tmp_path / "n.meta.json", {})
    record, pq_path, _ = _export(north, tmp_path)
    _flip_byte(pq_path)
    with pytest.raises(ValueError, match=re.escape(str(pq_path))):
        dataio.load_exported_parquet(pq_path, meta, record)


def test_load_exported_parquet_refuses_other_valid_file(tmp_path, north):
    """A readable Parquet file that is not the one export recorded is refused too."""
    meta = dataio.save_dataset(north, tmp_path / "n.npy", tmp_path / "n.meta.json", {})
    record, pq_path, _ = _export(north, tmp_path)
    other = datagen.make_northstar(300, 0.18, 1)
    pq.write_table(dataio.to_arrow(other), pq_path, compression="zstd")
    with pytest.raises(ValueError, match="changed or damaged"):
        dataio.load_exported_parquet(pq_path, meta, record)


# --- atomic --------------------------------------------------------------------------


def test_atomic_path_on_exception_leaves_target_and_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic.atomic_path(target) as tmp:
            assert tmp.parent == target.parent
            assert tmp != target
            tmp.write_text("half-written new content")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_path_on_exception_creates_nothing(tmp_path):
    target = tmp_path / "sub" / "new.bin"
    with pytest.raises(KeyError):
        with atomic.atomic_path(target) as tmp:
            tmp.write_bytes(b"x")
            raise KeyError("k")
    assert not target.exists()
    assert list((tmp_path / "sub").iterdir()) == []


def test_atomic_path_success_replaces_target(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with atomic.atomic_path(target) as tmp:
        tmp.write_text("new")
        assert target.read_text() == "old"  # not visible before the block ends
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_write_json_then_read_json(tmp_path):
    obj = {"a": 1, "b": [1.5, "x", None, True], "c": {"nested": "ü"}}
    path = tmp_path / "deep" / "er" / "obj.json"
    atomic.write_json(path, obj)
    assert atomic.read_json(path) == obj
    assert path.read_text(encoding="utf-8").endswith("\n")


def test_write_json_refuses_nan(tmp_path):
    path = tmp_path / "nan.json"
    with pytest.raises(ValueError):
        atomic.write_json(path, {"x": float("nan")})
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_write_bytes_and_sha256(tmp_path):
    path = tmp_path / "b.bin"
    atomic.write_bytes(path, b"abc")
    assert path.read_bytes() == b"abc"
    sha_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert atomic.sha256_file(path) == sha_abc
    assert atomic.sha256_bytes(b"abc") == sha_abc
    assert atomic.sha256_file(path, chunk_size=1) == sha_abc


@pytest.mark.parametrize("keep", [0, 1, 12])
def test_read_json_on_truncated_file_names_path(tmp_path, keep):
    path = tmp_path / "record.json"
    atomic.write_json(path, {"records": [{"batch_size": 32, "epoch_s": 0.04}]})
    _truncate(path, keep=keep)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        atomic.read_json(path)


def test_read_json_on_non_utf8_bytes_names_path(tmp_path):
    path = tmp_path / "record.json"
    path.write_bytes(json.dumps({"a": "b"}).encode().replace(b"b", b"\xff"))
    with pytest.raises(ValueError, match=re.escape(str(path))):
        atomic.read_json(path)
