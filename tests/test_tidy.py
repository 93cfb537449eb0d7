"""Every timed epoch as one row (io.tidy): pandas reads numbers, one row per job, variant and round."""

from __future__ import annotations

import pandas as pd
import pytest

from accel_choice.io import tidy
from accel_choice.records.training_job import TrainingJob
from builders_planner import sentinel_readings
from builders_training import environment, training_record


def _job(repeat: int, threads: int = 1) -> TrainingJob:
    records = tuple(
        training_record(
            batch_size=size,
            loader=loader,
            repeat=repeat,
            threads=threads,
            epoch_s=0.02,
            epoch_s_each=(0.02, 0.021, 0.019),
            eval_s=0.005,
            eval_s_each=(0.005, 0.006, 0.004),
        )
        for size in (32, 64)
        for loader in ("dataloader", "fastpath")
    )
    return TrainingJob(
        records=records, wall_interval=(0.0, 1.0), environment=environment(), sentinel=sentinel_readings()
    )


def test_the_epochs_table_has_one_row_per_timed_epoch_and_pandas_reads_numbers(tmp_path):
    jobs = [_job(0), _job(1)]
    parquet, csv = tmp_path / "cpu_epochs.parquet", tmp_path / "cpu_epochs.csv"
    assert tidy.write_epochs(parquet, csv, jobs, "cpu") == 2 * 4 * 3
    frame = pd.read_parquet(parquet)
    assert tuple(frame.columns) == tidy.COLUMNS
    assert frame["epoch_s"].dtype == "float64" and frame["batch_size"].dtype == "int64"
    assert sorted(frame["job"].unique()) == ["rep0", "rep1"]
    one = frame.query("loader == 'fastpath' and batch_size == 64 and job == 'rep1'")
    assert one["round"].tolist() == [0, 1, 2] and one["epoch_s"].tolist() == [0.02, 0.021, 0.019]
    assert one["eval_s"].tolist() == [0.005, 0.006, 0.004]
    from_csv = pd.read_csv(csv)
    assert from_csv.shape == frame.shape and from_csv["epoch_s"].dtype == "float64"


def test_a_gpu_job_is_named_by_its_batch_size(tmp_path):
    job = TrainingJob(
        records=(training_record(device="cuda", placement="resident", batch_size=512, repeat=2),),
        wall_interval=(0.0, 1.0),
        environment=environment(),
        sentinel=sentinel_readings(),
    )
    rows = tidy.epoch_rows([job], "gpu")
    assert {row["job"] for row in rows} == {"bs512.rep2"} and rows[0]["device"] == "cuda"


def test_no_epochs_is_refused_naming_the_file(tmp_path):
    with pytest.raises(ValueError, match="cpu_epochs.parquet: refusing to write an empty epochs table"):
        tidy.write_epochs(tmp_path / "cpu_epochs.parquet", tmp_path / "cpu_epochs.csv", [], "cpu")
    assert not list(tmp_path.iterdir())


def test_the_estimates_table_has_one_row_per_cell_and_statistic(tmp_path):
    from builders_training import training_cell

    cells = [training_cell(batch_size=32, loader="fastpath"), training_cell(batch_size=64, loader="fastpath")]
    parquet, csv = tmp_path / "cpu_estimates.parquet", tmp_path / "cpu_estimates.csv"
    rows = tidy.write_estimates(parquet, csv, cells)
    frame = pd.read_parquet(parquet)
    assert tuple(frame.columns) == tidy.ESTIMATE_COLUMNS and len(frame) == rows
    assert {"epoch_s", "eval_s", "samples_per_s"} <= set(frame["statistic"])
    epoch = frame.query("statistic == 'epoch_s' and batch_size == 64").iloc[0]
    assert epoch["point"] == cells[1].epoch_s.point and epoch["low"] == cells[1].epoch_s.low
    assert epoch["high"] == cells[1].epoch_s.high and epoch["method"] == cells[1].epoch_s.method
    assert frame["point"].dtype == "float64" and frame["jobs"].dtype == "int64"
    assert pd.read_csv(csv).shape == frame.shape


def test_a_table_as_html_is_one_page_snakemakes_report_shows_as_a_table(tmp_path):
    from accel_choice.io import tables

    rows = [{"variant": "fastpath <B>", "epoch_s": 0.0123456, "epochs": (0.01, 0.02), "note": None}]
    page = tmp_path / "t.html"
    tables.write_html(page, rows, "CPU training cells")
    text = page.read_text()
    assert text.startswith("<!doctype html>") and "<title>CPU training cells</title>" in text
    assert "<th>variant</th><th>epoch_s</th><th>note</th>" in text  # the list column is left out
    assert "<td>fastpath &lt;B&gt;</td><td>0.01235</td><td></td>" in text
    with pytest.raises(ValueError, match="empty table"):
        tables.write_html(tmp_path / "e.html", [], "empty")
