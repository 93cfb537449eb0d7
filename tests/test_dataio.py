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

from accel_choice import records
from accel_choice.io import atomic, dataio
from accel_choice.measure import datagen
from accel_choice.records import RecordError
from accel_choice.records.data import DatasetExport, DatasetMeta
from builders_data import (
    benchmark_generator,
    data_environment,
    dataset_export,
    dataset_meta,
    exported_file,
    northstar_generator,
)

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"


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
    record = dataio.export_dataset(dataset, pq_path, csv_path, compression, data_environment())
    return record, pq_path, csv_path


def _save(dataset, npy, meta_path, **generator):
    made = (
        benchmark_generator(rows=len(dataset.matrix), features=len(dataset.feature_columns), **generator)
        if dataset.name == "benchmark"
        else northstar_generator(rows=len(dataset.matrix), **generator)
    )
    return dataio.save_dataset(dataset, npy, meta_path, made, data_environment())


# --- canonical .npy + meta ---------------------------------------------------------------


def test_save_and_load_dataset_roundtrip(tmp_path, bench):
    npy, meta_path = tmp_path / "d" / "benchmark.npy", tmp_path / "d" / "benchmark.meta.json"
    meta = _save(bench, npy, meta_path, seed=20261020)
    assert meta == records.read(DatasetMeta, meta_path)
    assert meta.rows == 257
    assert meta.feature_columns == bench.feature_columns
    assert meta.target_column == "y"
    assert meta.dtype == "float32"
    assert meta.positive_rate == pytest.approx(float(bench.target.mean()))
    assert meta.matrix_sha256 == atomic.sha256_bytes(bench.matrix.tobytes())
    assert meta.file_sha256 == atomic.sha256_file(npy)
    assert meta.file_bytes == npy.stat().st_size
    assert meta.generator == benchmark_generator(rows=257, features=5, seed=20261020)
    written = atomic.read_json(meta_path)  # the file's JSON: the record's header, then its fields as before
    assert list(written)[:2] == ["schema", "schema_version"] and written["schema"] == "dataset-meta"
    assert written["feature_columns"] == list(bench.feature_columns)
    assert written["generator"] == {"rows": 257, "features": 5, "noise": 0.2, "seed": 20261020}

    loaded = dataio.load_dataset(npy, meta)
    assert loaded.matrix.dtype == np.float32
    assert np.array_equal(loaded.matrix, bench.matrix)
    assert loaded.columns == bench.columns
    assert loaded.name == "benchmark"
    # the metadata file's plain JSON, as prepare_northstar still reads it, is checked as the record
    assert np.array_equal(dataio.load_dataset(npy, atomic.read_json(meta_path)).matrix, bench.matrix)


def test_load_dataset_refuses_metadata_json_that_is_not_the_record(tmp_path, bench):
    npy, meta_path = tmp_path / "b.npy", tmp_path / "b.meta.json"
    _save(bench, npy, meta_path)
    damaged = atomic.read_json(meta_path)
    del damaged["file_sha256"]
    with pytest.raises(RecordError, match=r"the metadata of .*b\.npy: file_sha256: Field required"):
        dataio.load_dataset(npy, damaged)


def test_northstar_metadata_records_its_generator(tmp_path, north):
    meta = _save(north, tmp_path / "n.npy", tmp_path / "n.meta.json", late_rate=0.18, seed=7)
    assert records.read(DatasetMeta, tmp_path / "n.meta.json").generator == northstar_generator(rows=300, seed=7)
    assert atomic.read_json(tmp_path / "n.meta.json")["generator"] == {"rows": 300, "late_rate": 0.18, "seed": 7}
    assert meta.columns == north.columns


def test_load_dataset_refuses_edited_npy(tmp_path, bench):
    npy, meta_path = tmp_path / "b.npy", tmp_path / "b.meta.json"
    meta = _save(bench, npy, meta_path)
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
    assert record.files["parquet"].schema == expected
    assert record.files["csv"].schema == expected


def test_export_record_fields(tmp_path, bench):
    record, pq_path, csv_path = _export(bench, tmp_path)
    assert record.name == "benchmark"
    assert record.matrix_sha256 == dataio.matrix_sha256(bench.matrix)
    assert record.roundtrip_exact == {"parquet": True, "csv": True}
    assert record.parquet_compression == "zstd"
    for fmt, path in (("parquet", pq_path), ("csv", csv_path)):
        f = record.files[fmt]
        assert f.format == fmt
        assert f.file == path.name
        assert f.bytes == path.stat().st_size > 0
        assert f.sha256 == atomic.sha256_file(path)
        assert f.rows == 257
        assert f.columns == bench.columns
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


def test_the_parquet_matrix_is_what_pandas_reads_in_any_column_order(tmp_path):
    """Float, int8, int and boolean columns, nulls, row groups, a column asked for twice: pandas' matrix exactly."""
    path = tmp_path / "mixed.parquet"
    table = pa.table(
        {
            "f": pa.array([1.5, None, 3.25, -2.0], pa.float32()),
            "d": pa.array([0.1, 0.2, 0.3, 0.4], pa.float64()),
            "y": pa.array([1, 0, 1, 1], pa.int8()),
            "i": pa.array([7, None, 9, 10], pa.int64()),
            "b": pa.array([True, False, True, False]),
        }
    )
    pq.write_table(table, path, row_group_size=3)  # two row groups: a column of two chunks
    columns = ["y", "f", "d", "i", "b", "f"]
    expected = pq.read_table(path).to_pandas()[columns].to_numpy(dtype=np.float32)
    found = dataio.read_parquet_matrix(path, columns)
    assert found.dtype == np.float32 and found.shape == (4, 6)
    assert np.array_equal(found, expected, equal_nan=True)


def test_reading_the_parquet_matrix_imports_neither_pandas_nor_pyarrow_dataset(tmp_path, bench):
    """The training jobs' data: pandas and pyarrow.dataset were about 0.5 s of each job's start (2026-12-07)."""
    import subprocess
    import sys

    _, pq_path, _ = _export(bench, tmp_path)
    code = (
        f"import sys; sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "from accel_choice.io import dataio\n"
        f"dataio.read_parquet_matrix({str(pq_path)!r}, {list(bench.columns)!r})\n"
        "print(sorted(name for name in ('pandas', 'pyarrow.dataset') if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_two_exports_are_byte_identical(tmp_path, bench):
    rec1, pq1, csv1 = _export(bench, tmp_path / "one")
    rec2, pq2, csv2 = _export(bench, tmp_path / "two")
    assert atomic.sha256_file(pq1) == atomic.sha256_file(pq2)
    assert atomic.sha256_file(csv1) == atomic.sha256_file(csv2)
    assert rec1.files == rec2.files


def test_parquet_compression_is_recorded_and_used(tmp_path, bench):
    _, pq_path, _ = _export(bench, tmp_path, compression="snappy")
    assert pq.ParquetFile(pq_path).metadata.row_group(0).column(0).compression == "SNAPPY"


# --- verify_file / load_exported_parquet ---------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("damage", [_flip_byte, _truncate])
def test_verify_file_names_the_edited_file(tmp_path, bench, fmt, damage):
    record, pq_path, csv_path = _export(bench, tmp_path)
    path = pq_path if fmt == "parquet" else csv_path
    dataio.verify_file(path, record.files[fmt].sha256, regenerate_hint="the export_data rule")  # intact: no error
    damage(path)
    with pytest.raises(ValueError, match=re.escape(str(path))) as err:
        dataio.verify_file(path, record.files[fmt].sha256, regenerate_hint="the export_data rule")
    assert "the export_data rule" in str(err.value)
    assert record.files[fmt].sha256[:16] in str(err.value)


def test_load_exported_parquet_intact(tmp_path, north):
    meta = _save(north, tmp_path / "n.npy", tmp_path / "n.meta.json")
    record, pq_path, _ = _export(north, tmp_path)
    loaded = dataio.load_exported_parquet(pq_path, meta, record)
    assert np.array_equal(loaded.matrix, north.matrix)
    assert loaded.feature_columns == north.feature_columns
    assert loaded.target_column == north.target_column


def test_load_exported_parquet_refuses_edited_file(tmp_path, north):
    meta = _save(north, tmp_path / "n.npy", tmp_path / "n.meta.json")
    record, pq_path, _ = _export(north, tmp_path)
    _flip_byte(pq_path)
    with pytest.raises(ValueError, match=re.escape(str(pq_path))):
        dataio.load_exported_parquet(pq_path, meta, record)


def test_load_exported_parquet_refuses_other_valid_file(tmp_path, north):
    """A readable Parquet file that is not the one export recorded is refused too."""
    meta = _save(north, tmp_path / "n.npy", tmp_path / "n.meta.json")
    record, pq_path, _ = _export(north, tmp_path)
    other = datagen.make_northstar(300, 0.18, 1)
    pq.write_table(dataio.to_arrow(other), pq_path, compression="zstd")
    with pytest.raises(ValueError, match="changed or damaged"):
        dataio.load_exported_parquet(pq_path, meta, record)


def test_load_benchmark_tensors_reads_the_records(tmp_path, bench):
    meta = _save(bench, tmp_path / "benchmark.npy", tmp_path / "benchmark.meta.json")
    record, pq_path, _ = _export(bench, tmp_path)
    atomic.write_record(tmp_path / "benchmark.export.json", record)
    x, y, read_meta = dataio.load_benchmark_tensors(
        pq_path, tmp_path / "benchmark.meta.json", tmp_path / "benchmark.export.json"
    )
    assert read_meta == meta
    assert np.array_equal(x.numpy(), bench.features) and np.array_equal(y.numpy(), bench.target)
    assert records.read(DatasetExport, tmp_path / "benchmark.export.json") == record


# --- the records' invariants, and damaged files -----------------------------------------


def test_metadata_invariants():
    with pytest.raises(ValueError, match="column names repeat"):
        dataset_meta(feature_columns=("x00", "y"))
    with pytest.raises(ValueError, match="rows 100 but the generator made 8192"):
        dataset_meta(rows=100, generator=benchmark_generator())
    with pytest.raises(ValueError, match="less than or equal to 1"):
        dataset_meta(positive_rate=1.5)


def test_export_invariants():
    with pytest.raises(ValueError, match=r"files holds \['parquet'\]; expected \['csv', 'parquet'\]"):
        dataset_export(files={"parquet": exported_file("parquet")})
    with pytest.raises(ValueError, match="files.csv is a parquet file"):
        dataset_export(files={"parquet": exported_file("parquet"), "csv": exported_file("parquet")})
    with pytest.raises(ValueError, match="different row counts"):
        dataset_export(files={"parquet": exported_file("parquet"), "csv": exported_file("csv", rows=1)})
    with pytest.raises(ValueError, match="schema names"):
        exported_file(schema={"x00": "float"})


@pytest.mark.parametrize(
    ("cls", "build", "edit", "message"),
    [
        (
            DatasetMeta,
            dataset_meta,
            lambda d: d.update(matrix_sha256="f00d"),
            r"matrix_sha256: String should match pattern",
        ),
        (
            DatasetMeta,
            dataset_meta,
            lambda d: d["generator"].pop("seed"),
            r"generator\.BenchmarkGenerator\.seed: Field required",
        ),
        (
            DatasetExport,
            dataset_export,
            lambda d: d["files"]["csv"].update(bytes=-1),
            r"files\.csv\.bytes: Input should be greater than or equal to 0",
        ),
    ],
    ids=["meta hash", "meta generator", "export bytes"],
)
def test_a_damaged_data_record_is_refused_naming_the_field(tmp_path, cls, build, edit, message):
    path = tmp_path / "damaged.json"
    data = records.to_json(build())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=rf"^{re.escape(str(path))}: {message}"):
        records.read(cls, path)


def test_metadata_of_an_older_workflow_is_refused(tmp_path):
    path = tmp_path / "benchmark.meta.json"
    old = {key: value for key, value in records.to_json(dataset_meta()).items() if key not in records.HEADER}
    path.write_text(json.dumps(old))
    with pytest.raises(RecordError, match="has no schema .* this workflow reads dataset-meta version 4"):
        records.read(DatasetMeta, path)


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
