"""Load and convert timing on a small exported dataset: stages, sizes, and the data check."""

from __future__ import annotations

import re

import pytest

from accel_choice.measure import datagen, loadconv
from accel_choice.io import dataio

ROWS, FEATURES = 300, 6
STAGES = ("read_s", "to_pandas_s", "to_numpy_s", "to_torch_s", "total_s")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    directory = tmp_path_factory.mktemp("export")
    dataset = datagen.make_benchmark(ROWS, FEATURES, 0.2, 20261020)
    paths = {"parquet": directory / "benchmark.parquet", "csv": directory / "benchmark.csv"}
    record = dataio.export_dataset(dataset, paths["parquet"], paths["csv"], "zstd")
    return dataset, paths, record


def _measure(exported, fmt, passes=3, sha=None):
    dataset, paths, record = exported
    return loadconv.measure_load_convert(
        paths[fmt], fmt, list(dataset.feature_columns), dataset.target_column,
        record["matrix_sha256"] if sha is None else sha, passes=passes,
    )


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_record_shape_and_sizes(exported, fmt):
    _, paths, _ = exported
    r = _measure(exported, fmt)
    assert r["format"] == fmt
    assert r["file"] == paths[fmt].name
    assert r["file_bytes"] == paths[fmt].stat().st_size
    assert r["rows"] == ROWS
    assert r["features"] == FEATURES
    assert r["tensor_bytes"] == ROWS * FEATURES * 4 + ROWS * 4
    assert r["tensor_dtype"] == "torch.float32"
    assert r["torch_shares_numpy_buffer"] is True
    assert r["matches_generated_data"] is True
    assert len(r["loadavg_before"]) == 3 and len(r["loadavg_after"]) == 3
    assert r["threads"] >= 1


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_stages_non_negative_and_passes_recorded(exported, fmt):
    r = _measure(exported, fmt, passes=3)
    assert r["passes"] == 3
    assert len(r["pass_stages"]) == 3
    for stage in STAGES:
        assert r[stage] >= 0
    assert r["read_s"] > 0 and r["total_s"] > 0
    for run in r["pass_stages"]:
        assert set(run) == set(STAGES)
        assert all(run[stage] >= 0 for stage in STAGES)
        assert run["total_s"] == pytest.approx(run["read_s"] + run["to_pandas_s"] + run["to_numpy_s"] + run["to_torch_s"])
    # each stage in the record is the median over the passes
    for stage in STAGES:
        assert r[stage] == sorted(run[stage] for run in r["pass_stages"])[1]


def test_csv_has_no_to_pandas_stage(exported):
    r = _measure(exported, "csv", passes=2)
    assert r["to_pandas_s"] == 0.0
    assert all(run["to_pandas_s"] == 0.0 for run in r["pass_stages"])


def test_single_pass(exported):
    r = _measure(exported, "parquet", passes=1)
    assert r["passes"] == 1 and len(r["pass_stages"]) == 1
    assert r["total_s"] == r["pass_stages"][0]["total_s"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_wrong_expected_sha_raises(exported, fmt):
    _, paths, _ = exported
    with pytest.raises(ValueError, match=re.escape(str(paths[fmt]))):
        _measure(exported, fmt, passes=1, sha="0" * 64)


def test_other_data_is_detected(exported, tmp_path):
    """A file whose content differs from the generated matrix fails the data check."""
    dataset, _, record = exported
    other = datagen.make_benchmark(ROWS, FEATURES, 0.2, 1)
    dataio.export_dataset(other, tmp_path / "o.parquet", tmp_path / "o.csv", "zstd")
    with pytest.raises(ValueError, match="differs from the generated"):
        loadconv.measure_load_convert(
            tmp_path / "o.csv", "csv", list(dataset.feature_columns), dataset.target_column, record["matrix_sha256"], passes=1
        )


def test_unknown_format_raises(exported):
    _, paths, _ = exported
    with pytest.raises(ValueError, match="unknown format 'feather'"):
        loadconv.measure_load_convert(paths["csv"], "feather", ["x00"], "y", "0" * 64)


def test_zero_passes_raises(exported):
    with pytest.raises(ValueError, match="passes"):
        _measure(exported, "csv", passes=0)
