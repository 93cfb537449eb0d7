"""Issue 44 item 6: warnings where a number of the data means nothing (io.data_warnings). A constant
target or feature column, an epoch of few steps: each found, carried in the data's records, logged
and shown on the report's first screen; none on the generated data of the default or tiny config."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import yaml
from builders_data import dataset_export, dataset_meta
from builders_training import environment
from workflow_runs import REPO, SCHEMA, TINY

from accel_choice import records
from accel_choice.analyze import decision_tables
from accel_choice.io import benchmark_data, data_warnings, dataio
from accel_choice.measure import datagen
from accel_choice.records.data import ConstantFeatures, ConstantTarget, Dataset, DatasetMeta, FewSteps
from accel_choice.records.decision import DataTable
from accel_choice.render import data as data_words


def dataset(matrix: list[list[float]], features: tuple[str, ...], target: str = "y") -> Dataset:
    return Dataset("benchmark", np.asarray(matrix, dtype=np.float32), features, target)


@pytest.mark.parametrize(
    ("loss", "values", "line"),
    [
        ("bce", [0, 0, 0, 0], "target 'late' is 0 in all 4 rows: loss and accuracy mean nothing"),
        ("ce", [2, 2, 2, 2], "target 'late' is 2 in all 4 rows: loss and accuracy mean nothing"),
        ("mse", [3.25] * 4, "target 'late' is 3.25 in all 4 rows: loss and accuracy mean nothing"),
    ],
)
def test_a_constant_target_is_named_with_its_value(loss: str, values: list[float], line: str) -> None:
    found = data_warnings.columns(dataset([[i, v] for i, v in enumerate(values)], ("a",), "late"))
    assert found == (ConstantTarget(column="late", value=float(values[0]), rows=4),)
    assert found[0].line == line
    assert data_warnings.constant_target(np.array([0, 1, 0]), "late") is None


def test_constant_feature_columns_are_named_and_many_are_counted() -> None:
    found = data_warnings.columns(dataset([[1, 12.5, 0], [2, 12.5, 1], [3, 12.5, 0]], ("a", "distance_km")))
    assert found == (ConstantFeatures(columns=("distance_km",), values=(12.5,), features=2),)
    assert found[0].line == "1 of 2 feature columns are constant: 'distance_km' = 12.5; they carry nothing"
    border = np.zeros((3, 11), np.float32)  # an image's empty border: many constant pixels, one line
    border[:, 4] = [1, 2, 3]
    border[:, -1] = [0, 1, 1]
    many = data_warnings.columns(Dataset("benchmark", border, tuple(f"x{i}" for i in range(10)), "y"))
    assert many[0].line == (
        "9 of 10 feature columns are constant: 'x0' = 0, 'x1' = 0, 'x2' = 0, 'x3' = 0 and 5 more; they carry nothing"
    )


def test_few_steps_at_a_batch_size_name_the_key_and_the_steps() -> None:
    few = data_warnings.few_steps(1000, [32, 256, 512, 1000])
    assert few == FewSteps(batch_sizes=(512, 1000), steps=(2, 1), rows=1000)  # 256: 4 steps, not fewer
    assert few.line == (
        "timing.batch_sizes: an epoch of 1,000 rows is 2 at B=512, 1 at B=1000 (fewer than 4 steps): "
        "those cells time a few steps, not a throughput"
    )
    assert data_warnings.few_steps(1024, [32, 256]) is None
    with pytest.raises(ValueError, match="are not"):
        FewSteps(batch_sizes=(256,), steps=(4,), rows=1000)


def test_generated_data_of_the_default_and_tiny_configs_warn_of_nothing() -> None:
    for path in (REPO / "config" / "config.yaml", REPO / ".test" / "config" / "config.yaml"):
        config = yaml.safe_load(path.read_text())
        bench = config["data"]["benchmark"]
        assert data_warnings.few_steps(bench["rows"], config["timing"]["batch_sizes"]) is None, path
        made = datagen.make_benchmark(bench["rows"], bench["features"], bench.get("noise", 0.2), config["seed"])
        assert data_warnings.columns(made) == (), path


def test_an_imported_constant_target_is_in_the_record_and_the_job_log(tmp_path: Path, caplog) -> None:
    np.save(tmp_path / "x.npy", np.arange(12, dtype=np.float32).reshape(6, 2), allow_pickle=False)
    np.save(tmp_path / "y.npy", np.ones(6, np.int64), allow_pickle=False)
    found = {"kind": "arrays", "x": str(tmp_path / "x.npy"), "y": str(tmp_path / "y.npy")}
    made, sample, source = benchmark_data.load(found, 7)
    with caplog.at_level(logging.WARNING, logger="accel_choice"):
        meta = dataio.save_dataset(made, tmp_path / "b.npy", tmp_path / "b.meta.json", source, environment())
    assert meta.positive_rate == 1.0 and meta.warnings == (ConstantTarget(column="y", value=1.0, rows=6),)
    assert "data warning: benchmark: target 'y' is 1 in all 6 rows" in caplog.text
    assert records.read(DatasetMeta, tmp_path / "b.meta.json") == meta


def test_every_kind_of_warning_survives_the_data_table_round_trip(tmp_path: Path) -> None:
    target = ConstantTarget(column="y", value=0.0, rows=100)
    features = ConstantFeatures(columns=("x01",), values=(1.0,), features=32)
    table = decision_tables.data_table(
        [(dataset_meta(rows=100, warnings=(target, features)), dataset_export())], [32, 64]
    )
    assert table.table[0].warnings == (target, features, FewSteps(batch_sizes=(64,), steps=(2,), rows=100))
    path = tmp_path / "data.json"
    path.write_text(json.dumps(records.to_json(table)))
    assert records.read(DataTable, path) == table


def test_the_report_shows_each_warning_first_and_in_the_data_section() -> None:
    meta = dataset_meta(rows=100, warnings=(ConstantTarget(column="y", value=0.0, rows=100),))
    table = decision_tables.data_table([(meta, dataset_export())], [32, 64])
    banner = data_words.warnings_banner(table)
    assert banner.startswith("**Warnings about the data (2):**")
    assert "\n- benchmark: target 'y' is 0 in all 100 rows: loss and accuracy mean nothing\n" in banner
    assert banner.endswith(
        "- benchmark: timing.batch_sizes: an epoch of 100 rows is 2 at B=64 (fewer than 4 steps): "
        "those cells time a few steps, not a throughput"
    )
    assert "Warnings about the data:\n\n- benchmark: target 'y'" in data_words.data_section(table)
    quiet = decision_tables.data_table([(dataset_meta(), dataset_export())], [32, 512])
    assert data_words.warnings_banner(quiet) == "" and "Warnings" not in data_words.data_section(quiet)


def _constant_target_arrays(tmp_path: Path, monkeypatch) -> dict:
    """The tiny config on your own arrays of 100 rows with a constant target, parsed from tmp_path."""
    from accel_choice.io.provenance import INVOCATION_VARIABLE

    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((100, 8)), allow_pickle=False)
    np.save(tmp_path / "y.npy", np.zeros(100), allow_pickle=False)
    config = json.loads(json.dumps(TINY))
    config["data"]["benchmark"]["arrays"] = {"x": str(tmp_path / "x.npy"), "y": str(tmp_path / "y.npy")}
    monkeypatch.setenv(INVOCATION_VARIABLE, "{}")
    monkeypatch.chdir(tmp_path)
    return config


def test_the_parse_time_check_warns_and_goes_on(tmp_path: Path, monkeypatch, caplog) -> None:
    """Your own arrays of 100 rows with a constant target: both warnings logged when the Snakefile is parsed."""
    from accel_choice.measure.parse_time import prepare

    config = _constant_target_arrays(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="snakemake.logging"):
        assert prepare(config, [], SCHEMA) == (8,)
    assert "accel-choice data warning: benchmark: timing.batch_sizes: an epoch of 100 rows is 2 at B=64" in caplog.text
    assert "accel-choice data warning: benchmark: target 'y' is 0 in all 100 rows" in caplog.text


def test_a_job_parsing_a_checked_configuration_again_skips_the_checks(tmp_path: Path, monkeypatch, caplog) -> None:
    """A cluster job parses the Snakefile again: the parse that submitted it has tried the model and warned."""
    from accel_choice.measure import model_checks, parse_time

    config = _constant_target_arrays(tmp_path, monkeypatch)
    tried = []
    real = model_checks.check_model
    monkeypatch.setattr(model_checks, "check_model", lambda *a: tried.append(1) or real(*a))
    with caplog.at_level(logging.WARNING, logger="snakemake.logging"):
        parse_time.prepare(json.loads(json.dumps(config)), [], SCHEMA)
        assert "accel-choice data warning" in caplog.text
        caplog.clear()
        parse_time.prepare(json.loads(json.dumps(config)), [], SCHEMA)  # the job's parse
    assert tried == [1] and "accel-choice data warning" not in caplog.text
    config["timing"]["batch_sizes"] = [32]  # another configuration is checked again
    parse_time.prepare(config, [], SCHEMA)
    assert tried == [1, 1]
