"""Load and convert timing on a small exported dataset: stages, sizes, and the data check."""

from __future__ import annotations

import json
import re

import pytest

from accel_choice import records
from accel_choice.measure import datagen, loadconv
from accel_choice.io import atomic, dataio
from accel_choice.records import RecordError
from accel_choice.records.loads import LoadConvertRecord, PassStages
from builders_data import data_environment, load_record

ROWS, FEATURES = 300, 6
STAGES = ("read_s", "to_pandas_s", "to_numpy_s", "to_torch_s", "total_s")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("export")
    dataset = datagen.make_benchmark(ROWS, FEATURES, 0.2, 20261020)
    paths = {"parquet": directory / "benchmark.parquet", "csv": directory / "benchmark.csv"}
    record = dataio.export_dataset(dataset, paths["parquet"], paths["csv"], "zstd", data_environment())
    return dataset, paths, record


def _measure(exported, fmt, passes=3, sha=None):
    dataset, paths, record = exported
    return loadconv.measure_load_convert(
        paths[fmt],
        fmt,
        dataset.feature_columns,
        dataset.target_column,
        record.matrix_sha256 if sha is None else sha,
        passes=passes,
        dataset="benchmark",
        repeat=2,
        environment=data_environment(),
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_record_shape_and_sizes(exported, fmt):
    _, paths, _ = exported
    r = _measure(exported, fmt)
    assert r.format == fmt
    assert r.file == paths[fmt].name
    assert r.file_bytes == paths[fmt].stat().st_size
    assert r.rows == ROWS
    assert r.features == FEATURES
    assert r.tensor_bytes == ROWS * FEATURES * 4 + ROWS * 4
    assert r.tensor_dtype == "torch.float32"
    assert r.torch_shares_numpy_buffer is True
    assert r.matches_generated_data is True
    assert len(r.loadavg_before) == 3 and len(r.loadavg_after) == 3
    assert r.threads >= 1
    assert (r.dataset, r.repeat) == ("benchmark", 2)
    assert r.wall_interval[0] <= r.wall_interval[1]


def test_the_record_round_trips_through_its_file(exported, tmp_path):
    r = _measure(exported, "parquet", passes=2)
    atomic.write_record(tmp_path / "rep0.json", r)
    assert records.read(LoadConvertRecord, tmp_path / "rep0.json") == r


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_stages_non_negative_and_passes_recorded(exported, fmt):
    r = _measure(exported, fmt, passes=3)
    assert r.passes == 3
    assert len(r.pass_stages) == 3
    for stage in STAGES:
        assert getattr(r, stage) >= 0
    assert r.read_s > 0 and r.total_s > 0
    for run in r.pass_stages:
        assert all(getattr(run, stage) >= 0 for stage in STAGES)
        assert run.total_s == pytest.approx(run.read_s + run.to_pandas_s + run.to_numpy_s + run.to_torch_s)
    # each stage in the record is the median over the passes
    for stage in STAGES:
        assert getattr(r, stage) == sorted(getattr(run, stage) for run in r.pass_stages)[1]


def test_csv_has_no_to_pandas_stage(exported):
    r = _measure(exported, "csv", passes=2)
    assert r.to_pandas_s == 0.0
    assert all(run.to_pandas_s == 0.0 for run in r.pass_stages)


def test_single_pass(exported):
    r = _measure(exported, "parquet", passes=1)
    assert r.passes == 1 and len(r.pass_stages) == 1
    assert r.total_s == r.pass_stages[0].total_s


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_wrong_expected_sha_raises(exported, fmt):
    _, paths, _ = exported
    with pytest.raises(ValueError, match=re.escape(str(paths[fmt]))):
        _measure(exported, fmt, passes=1, sha="0" * 64)


def test_other_data_is_detected(exported, tmp_path):
    """A file whose content differs from the generated matrix fails the data check."""
    dataset, _, record = exported
    other = datagen.make_benchmark(ROWS, FEATURES, 0.2, 1)
    dataio.export_dataset(other, tmp_path / "o.parquet", tmp_path / "o.csv", "zstd", data_environment())
    with pytest.raises(ValueError, match="differs from the generated"):
        loadconv.measure_load_convert(
            tmp_path / "o.csv",
            "csv",
            dataset.feature_columns,
            dataset.target_column,
            record.matrix_sha256,
            passes=1,
            dataset="benchmark",
            repeat=0,
            environment=data_environment(),
        )


def test_unknown_format_raises(exported):
    _, paths, _ = exported
    with pytest.raises(ValueError, match="unknown format 'feather'"):
        loadconv.measure_load_convert(
            paths["csv"],
            "feather",
            ["x00"],
            "y",
            "0" * 64,
            dataset="benchmark",
            repeat=0,
            environment=data_environment(),
        )


def test_zero_passes_raises(exported):
    with pytest.raises(ValueError, match="passes"):
        _measure(exported, "csv", passes=0)


# --- the record's invariants, and a damaged file ----------------------------------------------


def test_load_record_invariants():
    with pytest.raises(ValueError, match="total_s 1.0 is not the sum of the stages"):
        PassStages(read_s=0.004, to_pandas_s=0.0, to_numpy_s=0.001, to_torch_s=0.0, total_s=1.0)
    with pytest.raises(ValueError, match="1 pass_stages for 3 passes"):
        load_record(passes=3)
    runs = (load_record(read_s=0.004).pass_stages[0], load_record(read_s=0.006).pass_stages[0])
    with pytest.raises(ValueError, match=r"min\(pass_stages.read_s\) 0.004 <= read_s 0.009"):
        load_record(pass_stages=runs, read_s=0.009, total_s=runs[0].total_s)
    with pytest.raises(ValueError, match="wall_interval .* ends before it starts"):
        load_record(wall_interval=(2.0, 1.0))


def test_a_damaged_load_record_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "benchmark.csv.rep0.json"
    data = records.to_json(load_record())
    data["pass_stages"][0]["read_s"] = -0.001
    path.write_text(json.dumps(data))
    with pytest.raises(
        RecordError, match=rf"^{re.escape(str(path))}: pass_stages\[0\]\.read_s: Input should be greater than 0"
    ):
        records.read(LoadConvertRecord, path)
