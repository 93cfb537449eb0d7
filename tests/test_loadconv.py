"""Load and convert timing on a small exported dataset: stages, sizes, and the data check."""

from __future__ import annotations

import json
import re

import pytest

from accel_choice import records
from accel_choice.measure import datagen, loadconv
from accel_choice.io import atomic, dataio
from accel_choice.records import RecordError
from accel_choice.records.loads import LoadConvertJob, PassStages
from accel_choice.measure.job import Envelope
from builders_data import data_environment, load_job

ROWS, FEATURES = 300, 6
STAGES = ("read_s", "to_pandas_s", "to_numpy_s", "to_torch_s", "total_s")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("export")
    dataset = datagen.make_benchmark(ROWS, FEATURES, 0.2, 20261020)
    paths = {"parquet": directory / "benchmark.parquet", "csv": directory / "benchmark.csv"}
    record = dataio.export_dataset(dataset, paths["parquet"], paths["csv"], "zstd", data_environment())
    return dataset, paths, record


def _spec(exported, fmt, sha=None, path=None):
    dataset, paths, record = exported
    return loadconv.FileToLoad(
        paths[fmt] if path is None else path,
        "benchmark",
        fmt,
        dataset.feature_columns,
        dataset.target_column,
        record.matrix_sha256 if sha is None else sha,
    )


def _job(exported, formats=("csv", "parquet"), passes=3, repeat=2):
    files = [_spec(exported, fmt) for fmt in formats]
    return loadconv.measure_load_convert(files, passes=passes, repeat=repeat, envelope=Envelope(seed=7))


def _measure(exported, fmt, passes=3, sha=None):
    job = loadconv.measure_load_convert([_spec(exported, fmt, sha)], passes=passes, repeat=2, envelope=Envelope(seed=7))
    assert len(job.loads) == 1
    return job.loads[0]


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
    assert r.dataset == "benchmark"


def test_one_job_loads_every_file_with_the_job_readings(exported):
    job = _job(exported, passes=2)
    assert [(load.dataset, load.format) for load in job.loads] == [("benchmark", "csv"), ("benchmark", "parquet")]
    assert all(load.passes == 2 for load in job.loads)
    assert len(job.loadavg_before) == 3 and len(job.loadavg_after) == 3
    assert job.threads >= 1 and job.repeat == 2
    assert job.wall_interval[0] <= job.wall_interval[1]


def test_rounds_alternate_direction_and_odd_repeats_start_reversed(exported):
    files = [_spec(exported, "csv"), _spec(exported, "parquet")]
    formats = [[spec.format for spec in loadconv.round_order(files, k, 0)] for k in range(3)]
    assert formats == [["csv", "parquet"], ["parquet", "csv"], ["csv", "parquet"]]
    assert [spec.format for spec in loadconv.round_order(files, 0, 1)] == ["parquet", "csv"]


def test_the_passes_of_the_files_are_interleaved(exported, monkeypatch):
    order = []
    real = loadconv._one_pass

    def spy(path, fmt, feature_columns, target_column):
        order.append(fmt)
        return real(path, fmt, feature_columns, target_column)

    monkeypatch.setattr(loadconv, "_one_pass", spy)
    _job(exported, passes=3, repeat=0)
    # one warm-up pass per file, then rounds A B, B A, A B
    assert order == ["csv", "parquet", "csv", "parquet", "parquet", "csv", "csv", "parquet"]


def test_a_file_listed_twice_is_refused(exported):
    with pytest.raises(ValueError, match="listed twice"):
        loadconv.measure_load_convert(
            [_spec(exported, "csv"), _spec(exported, "csv")], passes=1, repeat=0, envelope=Envelope(seed=7)
        )


def test_no_file_is_refused():
    with pytest.raises(ValueError, match="no file to load"):
        loadconv.measure_load_convert([], passes=1, repeat=0, envelope=Envelope(seed=7))


def test_the_record_round_trips_through_its_file(exported, tmp_path):
    r = _job(exported, passes=2)
    atomic.write_record(tmp_path / "rep0.json", r)
    assert records.read(LoadConvertJob, tmp_path / "rep0.json") == r


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
    other = datagen.make_benchmark(ROWS, FEATURES, 0.2, 1)
    dataio.export_dataset(other, tmp_path / "o.parquet", tmp_path / "o.csv", "zstd", data_environment())
    with pytest.raises(ValueError, match="differs from the generated"):
        loadconv.measure_load_convert(
            [_spec(exported, "csv", path=tmp_path / "o.csv")], passes=1, repeat=0, envelope=Envelope(seed=7)
        )


def test_unknown_format_raises(exported):
    with pytest.raises(ValueError, match="unknown format 'feather'"):
        _spec(exported, "feather", path=exported[1]["csv"])


def test_zero_passes_raises(exported):
    with pytest.raises(ValueError, match="passes"):
        _measure(exported, "csv", passes=0)


# --- the record's invariants, and a damaged file ----------------------------------------------


def test_load_record_invariants():
    with pytest.raises(ValueError, match="total_s 1.0 is not the sum of the stages"):
        PassStages(read_s=0.004, to_pandas_s=0.0, to_numpy_s=0.001, to_torch_s=0.0, total_s=1.0)
    with pytest.raises(ValueError, match="1 pass_stages for 3 passes"):
        load_job(passes=3)
    runs = (load_job(read_s=0.004).loads[0].pass_stages[0], load_job(read_s=0.006).loads[0].pass_stages[0])
    with pytest.raises(ValueError, match=r"min\(pass_stages.read_s\) 0.004 <= read_s 0.009"):
        load_job(pass_stages=runs, read_s=0.009, total_s=runs[0].total_s)
    with pytest.raises(ValueError, match="wall_interval .* ends before it starts"):
        load_job(wall_interval=(2.0, 1.0))
    with pytest.raises(ValueError, match="loaded no file"):
        load_job(loads=())
    twice = load_job().loads * 2
    with pytest.raises(ValueError, match="a file loaded twice in one job"):
        load_job(loads=twice)


def test_a_damaged_load_record_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "rep0.json"
    data = records.to_json(load_job())
    data["loads"][0]["pass_stages"][0]["read_s"] = -0.001
    path.write_text(json.dumps(data))
    with pytest.raises(
        RecordError,
        match=rf"^{re.escape(str(path))}: loads\[0\]\.pass_stages\[0\]\.read_s: Input should be greater than 0",
    ):
        records.read(LoadConvertJob, path)
