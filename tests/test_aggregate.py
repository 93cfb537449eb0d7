"""Aggregation of synthetic timing records: medians with spread, refusals, exercise-2 JSON, full path."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import torch


from accel_choice.analyze import aggregate, fullpath, loads
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic
from accel_choice.records import RecordError
from accel_choice.records import read as read_record
from accel_choice.records.loads import LoadTable, SecondsSpread, TransferJob, TransferTable
from accel_choice.records.training_job import TrainingJob
from builders_data import copy_cell, copy_timing, data_environment, load_cell, transfer_job, transfer_table
from builders_data import load_table as build_load_table
from builders_data import file_load, load_job
from accel_choice.measure import datagen, steps, training
from accel_choice.records.model import ModelSpec
from builders_planner import sentinel_readings
from builders_training import environment, replaced, training_record

ROWS = 8192
REPO = Path(__file__).resolve().parents[1]
SHA0 = "a" * 64


def record(batch_size, loader, repeat, epoch_s, *, eval_s=0.005, finite=True, rows=ROWS, sha=SHA0, **extra):
    """One timed epoch (a TrainingRecord) of the CPU at these values."""
    return training_record(
        batch_size=batch_size,
        loader=loader,
        repeat=repeat,
        epoch_s=epoch_s,
        eval_s=eval_s,
        finite=finite,
        rows=rows,
        initial_weights_sha256=sha,
        **extra,
    )


# epoch_s per (batch_size, loader), indexed by repeat
EPOCHS = {
    (32, "dataloader"): [0.30, 0.28, 0.29],
    (32, "fastpath"): [0.100, 0.101, 0.099],
    (512, "dataloader"): [0.060, 0.062, 0.061],
    (512, "fastpath"): [0.020, 0.020, 0.050],  # repeat 2 is 2.5x the median: planted outlier
}


def records():
    return [record(b, loader, rep, t) for (b, loader), runs in EPOCHS.items() for rep, t in enumerate(runs)]


@pytest.fixture
def table():
    return aggregate.aggregate_training(records(), ROWS)


def _row(table, batch_size, loader):
    (row,) = [r for r in table if r.batch_size == batch_size and r.loader == loader]
    return row


def test_synthetic_record_is_the_type_measure_writes():
    """The builder and the timing job make the same record type, so the tests cannot drift from it."""
    d = datagen.make_benchmark(40, 3, 0.2, 1)
    x, y = torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())
    variants = steps.cpu_variants(["fastpath"], batch_size=20)
    spec = ModelSpec(hidden=2, lr=1e-3)
    real = training.measure_training_job(x, y, variants, repeat=0, seed=1, spec=spec, warmup_steps=1)[0][0]
    assert type(record(20, "fastpath", 0, 0.01, rows=40)) is type(real)


def test_one_row_per_batch_size_and_loader_sorted(table):
    assert [(r.batch_size, r.loader) for r in table] == [
        (32, "dataloader"),
        (32, "fastpath"),
        (512, "dataloader"),
        (512, "fastpath"),
    ]
    for r in table:
        assert r.repeats == 3
        assert r.samples == ROWS
        assert r.device == "cpu"
    assert _row(table, 32, "fastpath").steps == 256
    assert _row(table, 512, "fastpath").steps == 16


def test_medians_min_max_iqr(table):
    r = _row(table, 32, "dataloader")
    assert r.epoch_s_runs == (0.30, 0.28, 0.29)  # in repeat order
    # The point is the geometric mean of the jobs' medians (t on log job medians), between them.
    assert r.epoch_s.point == pytest.approx(statistics.geometric_mean([0.30, 0.28, 0.29]))
    assert r.epoch_s_min == pytest.approx(0.28)
    assert r.epoch_s_max == pytest.approx(0.30)
    assert r.epoch_s_iqr == pytest.approx(0.01)  # quartiles 0.285 and 0.295
    assert r.eval_s.point == pytest.approx(0.005)
    assert min(r.eval_s_runs) == max(r.eval_s_runs) == pytest.approx(0.005)


def test_runs_sorted_by_repeat_whatever_the_input_order():
    shuffled = list(reversed(records()))
    table = aggregate.aggregate_training(shuffled, ROWS)
    assert _row(table, 512, "fastpath").epoch_s_runs == (0.020, 0.020, 0.050)


def test_samples_per_s_from_median(table):
    for r in table:
        assert r.samples_per_s.point == pytest.approx(r.samples / r.epoch_s.point, rel=1e-12)
        assert r.samples_per_s.low == pytest.approx(r.samples / r.epoch_s.high, rel=1e-12)
        assert r.table_row()["samples_per_s_min"] == pytest.approx(r.samples / r.epoch_s_max)
        assert r.table_row()["samples_per_s_max"] == pytest.approx(r.samples / r.epoch_s_min)
        assert r.step_us == pytest.approx(r.epoch_s.point / r.steps * 1e6)
    assert _row(table, 32, "fastpath").samples_per_s.point == pytest.approx(
        8192 / statistics.geometric_mean([0.100, 0.101, 0.099])
    )


def test_planted_outlier_flags_cell_noisy(table):
    outlier = _row(table, 512, "fastpath")
    # The geometric mean is pulled by the outlier job (a median of three would not be): the cell says noisy.
    assert outlier.epoch_s.point == pytest.approx((0.020 * 0.020 * 0.050) ** (1 / 3))
    assert outlier.epoch_s_max == pytest.approx(0.050)
    assert outlier.noisy is True
    assert any("2.50x the median" in reason for reason in outlier.noise_reasons)
    for b, loader in [(32, "dataloader"), (32, "fastpath"), (512, "dataloader")]:
        assert _row(table, b, loader).noisy is False
        assert _row(table, b, loader).noise_reasons == ()


def test_noise_thresholds_are_passed_through():
    table = aggregate.aggregate_training(
        records(), ROWS, NoiseRules(noise_iqr_ratio=0.8, outlier_factor=3.0)
    )  # IQR/median is 75 %
    assert not _row(table, 512, "fastpath").noisy
    table = aggregate.aggregate_training(records(), ROWS, NoiseRules(noise_iqr_ratio=0.001))
    assert _row(table, 32, "fastpath").noisy


def test_epoch_s_over_fastpath(table):
    # Paired: the geometric mean of the per-job ratios (both loaders ran in the same jobs).
    paired = statistics.geometric_mean([0.30 / 0.100, 0.28 / 0.101, 0.29 / 0.099])
    assert _row(table, 32, "dataloader").epoch_s_over_fastpath.point == pytest.approx(paired)
    paired = statistics.geometric_mean([0.060 / 0.020, 0.062 / 0.020, 0.061 / 0.050])
    assert _row(table, 512, "dataloader").epoch_s_over_fastpath.point == pytest.approx(paired)
    assert _row(table, 32, "fastpath").epoch_s_over_fastpath.point == pytest.approx(1.0)


def test_epoch_s_over_fastpath_none_without_fastpath():
    only_dl = [r for r in records() if r.loader == "dataloader"]
    table = aggregate.aggregate_training(only_dl, ROWS)
    assert all(r.epoch_s_over_fastpath is None for r in table)


def test_other_summaries(table):
    r = _row(table, 32, "fastpath")
    assert r.threads == 1
    assert r.loadavg_max == pytest.approx(0.7)
    assert r.warmup_first_over_steady_median == pytest.approx(10.0)
    assert r.mean_train_loss_median == pytest.approx(0.45)
    assert r.eval_accuracy_median == pytest.approx(0.9)
    assert r.same_final_weights_across_variants is True


def test_same_final_weights_false_propagates():
    recs = records()
    recs[0] = replaced(recs[0], same_final_weights_across_variants=False)
    table = aggregate.aggregate_training(recs, ROWS)
    assert _row(table, 32, "dataloader").same_final_weights_across_variants is False
    assert _row(table, 32, "fastpath").same_final_weights_across_variants is True


# --- refusals --------------------------------------------------------------------------


def test_refuses_different_initial_weights():
    recs = records()
    recs[4] = replaced(recs[4], initial_weights_sha256="c" * 64)
    with pytest.raises(ValueError, match="2 different initial weights"):
        aggregate.aggregate_training(recs, ROWS)


def test_refuses_duplicate_repeat():
    recs = records() + [record(512, "dataloader", 1, 0.07)]
    with pytest.raises(
        ValueError,
        match=r"duplicate records for \(device, precision, placement, loader, batch_size, threads, compiled, repeat\) "
        r"\('cpu', 'fp32', 'host', 'dataloader', 512, 1, False, 1\)",
    ):
        aggregate.aggregate_training(recs, ROWS)


def test_refuses_broken_invariant():
    recs = records()
    recs[2] = replaced(recs[2], invariants=replaced(recs[2].invariants, steps_eq_ceil_rows_over_batch=False))
    with pytest.raises(ValueError, match="break an invariant"):
        aggregate.aggregate_training(recs, ROWS)


def test_refuses_samples_other_than_rows():
    with pytest.raises(ValueError, match="break an invariant"):
        aggregate.aggregate_training(records(), ROWS + 1)


def test_refuses_empty():
    with pytest.raises(ValueError, match="no training records"):
        aggregate.aggregate_training([], ROWS)


# --- non-finite records -----------------------------------------------------------------


def _job(repeat, host_memory_bytes):
    """One timing job of batch size 32 (both loaders) on a node with this much memory."""
    job_records = tuple(
        record(32, loader, repeat, EPOCHS[(32, loader)][repeat]) for loader in ("dataloader", "fastpath")
    )
    return TrainingJob(
        records=job_records,
        wall_interval=(10.0 * repeat, 10.0 * repeat + 5),
        environment=environment(host_memory_bytes=host_memory_bytes),
        sentinel=sentinel_readings(),
    )


@pytest.mark.parametrize(
    ("memories", "expected"),
    [((64 << 30, 16 << 30, 32 << 30), 16 << 30), ((64 << 30, None, 32 << 30), None)],
    ids=["smallest node", "one node unknown"],
)
def test_the_table_holds_the_memory_of_the_nodes_that_measured_not_the_aggregating_one(memories, expected):
    jobs = [_job(repeat, memory) for repeat, memory in enumerate(memories)]
    aggregating = environment(host_memory_bytes=1 << 50)
    table = aggregate.training_table(jobs, ROWS, NoiseRules(), aggregating)
    assert table.host_memory_bytes == expected and table.environment == aggregating


def test_the_smallest_host_memory_is_unknown_without_a_node():
    assert aggregate.smallest_host_memory([]) is None
    assert aggregate.smallest_host_memory([8 << 30, 4 << 30]) == 4 << 30


def test_non_finite_records_excluded_from_medians_and_listed():
    bad = record(32, "fastpath", 3, 9.0, finite=False)
    recs = records() + [bad]
    table = aggregate.aggregate_training(recs, ROWS)
    cell = _row(table, 32, "fastpath")
    assert cell.repeats == 3
    assert cell.epoch_s_runs == (0.100, 0.101, 0.099)
    assert cell.epoch_s.point == pytest.approx(statistics.geometric_mean([0.100, 0.101, 0.099]))
    assert cell.epoch_s_max == pytest.approx(0.101)

    listed = aggregate.non_finite_runs(recs)
    assert len(listed) == 1
    (entry,) = listed
    assert (entry.batch_size, entry.loader, entry.repeat) == (32, "fastpath", 3)
    assert (entry.device, entry.precision, entry.placement, entry.grad_scaler) == ("cpu", "fp32", "host", False)
    assert entry.nonfinite_step == 3
    assert entry.final_loss is None and entry.mean_train_loss is None  # not finite: null, JSON has no NaN


def test_non_finite_records_empty_when_all_finite():
    assert aggregate.non_finite_runs(records()) == ()


# --- exercise 2 JSON -------------------------------------------------------------------


def test_exercise2_json_shape(table):
    out = aggregate.exercise2_json(table)
    assert [r["batch_size"] for r in out] == [32, 512]
    for r in out:
        assert list(r) == ["batch_size", "samples", "epoch_s_runs", "epoch_s_median", "samples_per_s"]
        assert r["samples"] == 8192
        assert len(r["epoch_s_runs"]) == 3
        assert r["samples_per_s"] == pytest.approx(r["samples"] / r["epoch_s_median"], rel=1e-12)
    assert out[0]["epoch_s_runs"] == [0.30, 0.28, 0.29]
    assert out[0]["epoch_s_median"] == pytest.approx(0.29)


def test_exercise2_json_other_loader(table):
    out = aggregate.exercise2_json(table, loader="fastpath")
    assert [r["epoch_s_median"] for r in out] == pytest.approx([0.100, 0.020])


def test_exercise2_textbook_example_numbers():
    """Section 28.3.7.2: runs [0.0411, 0.0398, 0.0403] -> median 0.0403, 8192 / 0.0403 = 203,275.4 samples/s."""
    recs = [record(128, "dataloader", i, t) for i, t in enumerate([0.0411, 0.0398, 0.0403])]
    (row,) = aggregate.exercise2_json(aggregate.aggregate_training(recs, ROWS))
    assert row["epoch_s_median"] == 0.0403
    assert row["samples_per_s"] == pytest.approx(203_275.4, abs=0.1)


def test_exercise2_median_is_the_median_of_the_runs_it_lists():
    """The exercise's contract: a reader's statistics.median(epoch_s_runs) is the file's epoch_s_median,
    also where the table's point (the geometric mean of the job medians) is another number."""
    jobs = [(0.10, 0.11, 0.30), (0.12, 0.13, 0.31), (0.14, 0.32, 0.33)]
    recs = [
        record(
            128,
            "dataloader",
            i,
            statistics.median(each),
            epoch_s_each=each,
        )
        for i, each in enumerate(jobs)
    ]
    table = aggregate.aggregate_training(recs, ROWS)
    (row,) = aggregate.exercise2_json(table)
    assert row["epoch_s_runs"] == [0.11, 0.13, 0.32]
    assert row["epoch_s_median"] == statistics.median(row["epoch_s_runs"]) == 0.13
    assert row["samples_per_s"] == ROWS / 0.13
    table_point = _row(table, 128, "dataloader").epoch_s.point
    assert table_point == pytest.approx(statistics.geometric_mean([0.11, 0.13, 0.32])) != 0.13  # not the file's


# --- load/convert and full path -------------------------------------------------------


def load_record(dataset, fmt, repeat, read, to_pandas, to_numpy, to_torch, file_bytes=1_000_000, **extra):
    total = read + to_pandas + to_numpy + to_torch
    return load_job(
        **{
            "dataset": dataset,
            "format": fmt,
            "repeat": repeat,
            "rows": ROWS,
            "file_bytes": file_bytes,
            "tensor_bytes": ROWS * 33 * 4,
            "read_s": read,
            "to_pandas_s": to_pandas,
            "to_numpy_s": to_numpy,
            "to_torch_s": to_torch,
            "total_s": total,
            "loadavg_before": (0.3, 0.3, 0.3),
            "loadavg_after": (0.3, 0.3, 0.3),
            "foreign_cpu_share": 0.0,
            **extra,
        }
    )


def load_records():
    return [
        load_record("benchmark", "csv", 0, 0.050, 0.0, 0.002, 0.00001, 3_000_000),
        load_record("benchmark", "csv", 1, 0.052, 0.0, 0.003, 0.00002, 3_000_000),
        load_record("benchmark", "csv", 2, 0.051, 0.0, 0.004, 0.00003, 3_000_000),
        load_record("benchmark", "parquet", 0, 0.004, 0.001, 0.0010, 0.00001, 1_000_000),
        load_record("benchmark", "parquet", 1, 0.004, 0.001, 0.0010, 0.00001, 1_000_000),
        load_record("benchmark", "parquet", 2, 0.020, 0.001, 0.0010, 0.00001, 1_000_000),  # outlier
        load_record("northstar", "csv", 0, 0.010, 0.0, 0.001, 0.00001, 100_000),
    ]


@pytest.fixture
def load_cells():
    return loads.aggregate_load_convert(load_records())


@pytest.fixture
def load_table(load_cells):
    return load_cells


def test_aggregate_load_convert_medians(load_cells):
    assert [(r.dataset, r.format) for r in load_cells] == [
        ("benchmark", "csv"),
        ("benchmark", "parquet"),
        ("northstar", "csv"),
    ]
    csv = load_cells[0]
    assert csv.repeats == 3
    assert csv.rows == ROWS and csv.file_bytes == 3_000_000 and csv.tensor_bytes == ROWS * 33 * 4
    assert csv.read_s_median == pytest.approx(0.051)
    assert csv.to_pandas_s_median == 0.0
    assert csv.to_numpy_s_median == pytest.approx(0.003)
    assert csv.to_torch_s_median == pytest.approx(0.00002)
    # totals 0.05201, 0.05502, 0.05503: the total (their geometric mean) is not the sum of the stage medians
    assert csv.total_s.point == pytest.approx((0.05201 * 0.05502 * 0.05503) ** (1 / 3))
    assert csv.total_s.low < csv.total_s.point < csv.total_s.high and csv.total_s.jobs == 3
    assert csv.total_s_min == pytest.approx(0.05201)
    assert csv.total_s_max == pytest.approx(0.05503)
    assert csv.total_s_iqr == pytest.approx(0.055025 - 0.053515)
    assert csv.mb_per_s == pytest.approx(3_000_000 / csv.total_s.point / 1e6)
    assert csv.noisy is False and csv.contaminated == ()
    pq = load_cells[1]
    assert pq.noisy is True and pq.noise_reasons
    assert pq.total_s.point == pytest.approx((0.00601 * 0.00601 * 0.02201) ** (1 / 3))  # the outlier job pulls it
    assert load_cells[2].repeats == 1


def test_aggregate_load_convert_refuses_empty():
    with pytest.raises(ValueError, match="no load/convert records"):
        loads.aggregate_load_convert([])


def test_aggregate_load_convert_flags_a_busy_repeat():
    recs = load_records()[:3]
    recs[1] = load_record("benchmark", "csv", 1, 0.052, 0.0, 0.003, 0.00002, 3_000_000, foreign_cpu_share=0.9)
    recs[2] = load_record(
        "benchmark",
        "csv",
        2,
        0.051,
        0.0,
        0.004,
        0.00003,
        3_000_000,
        loadavg_before=(0.3, 0.3, 0.3),
        loadavg_after=(1.3, 0.3, 0.3),
    )
    (cell,) = loads.aggregate_load_convert(recs)
    assert [(c.repeat, len(c.reasons)) for c in cell.contaminated] == [(1, 1), (2, 1)]
    assert "other processes used 0.90 cores" in cell.contaminated[0].reasons[0]
    assert "1-min load average rose by 1.00" in cell.contaminated[1].reasons[0]
    (lenient,) = loads.aggregate_load_convert(recs, NoiseRules(foreign_cpu_share=1.0, loadavg_rise=2.0))
    assert lenient.contaminated == ()


def test_a_job_loads_every_file_and_its_readings_count_against_each():
    def job(repeat, share):
        files = tuple(
            file_load(dataset=dataset, format=fmt, read_s=0.004 + repeat * 0.001)
            for dataset in ("benchmark", "northstar")
            for fmt in ("csv", "parquet")
        )
        return load_job(loads=files, repeat=repeat, foreign_cpu_share=share)

    cells = loads.aggregate_load_convert([job(0, 0.0), job(1, 0.9), job(2, 0.0)])
    assert [(c.dataset, c.format, c.repeats) for c in cells] == [
        ("benchmark", "csv", 3),
        ("benchmark", "parquet", 3),
        ("northstar", "csv", 3),
        ("northstar", "parquet", 3),
    ]
    assert all([c.repeat for c in cell.contaminated] == [1] for cell in cells)
    assert all(cell.read_s_median == pytest.approx(0.005) for cell in cells)


def test_a_file_loaded_twice_in_one_repeat_is_refused():
    with pytest.raises(ValueError, match="loaded more than once in one repeat"):
        loads.aggregate_load_convert([load_job(repeat=0), load_job(repeat=0)])


def test_the_load_table_round_trips_and_refuses_a_damaged_cell(tmp_path, load_cells):
    path = tmp_path / "load_convert.json"
    atomic.write_record(path, LoadTable(table=load_cells, environment=data_environment()))
    assert read_record(LoadTable, path).table == load_cells
    data = json.loads(path.read_text())
    data["table"][1]["total_s_min"] = 1.0  # above the median
    path.write_text(json.dumps(data))
    with pytest.raises(
        RecordError, match=r"load_convert\.json: table\[1\]: Value error, total_s_min 1\.0 <= total_s\.point"
    ):
        read_record(LoadTable, path)


def test_load_cell_and_table_invariants():
    with pytest.raises(ValueError, match="noisy is True but noise_reasons is"):
        load_cell(noisy=True)
    with pytest.raises(ValueError, match="more than one cell for a"):
        build_load_table(table=(load_cell(), load_cell()))


# --- transfers ----------------------------------------------------------------------------------


def test_aggregate_transfers_of_typed_jobs():
    jobs = [
        transfer_job(
            repeat=r,
            context_startup_s=0.2 + r / 100,
            pin_memory_s=0.001 * (r + 1),
            copies=(
                copy_timing("matrix", seconds=1e-4 * (r + 1)),
                copy_timing("predictions", "device_to_host", bytes=1 << 15, seconds=2e-5),
            ),
        )
        for r in range(3)
    ]
    table = loads.aggregate_transfers(jobs)
    assert table.device == "cuda"
    assert [(c.direction, c.what) for c in table.copies] == [
        ("device_to_host", "predictions"),
        ("host_to_device", "matrix"),
    ]
    matrix = table.copies[1]
    assert matrix.repeats == 3
    assert (matrix.seconds.point, matrix.seconds_min, matrix.seconds_max) == pytest.approx((2e-4, 1e-4, 3e-4))
    assert matrix.gb_per_s == pytest.approx((1 << 20) / 2e-4 / 1e9)
    startup = table.context_startup_s
    assert (startup.median, startup.min, startup.max) == pytest.approx((0.21, 0.2, 0.22))
    assert table.pin_memory_s_median == pytest.approx(0.002)


def test_aggregate_transfers_refuses_mixed_devices_and_cpu_copies():
    with pytest.raises(ValueError, match=r"more than one device \(cuda, mps\)"):
        loads.aggregate_transfers([transfer_job(), transfer_job(device="mps", repeat=1)])
    with pytest.raises(ValueError, match=r"repeat\(s\) \[0\] timed no context start-up"):
        loads.aggregate_transfers([transfer_job(device="cpu", context_startup_s=None)])


def test_transfer_invariants():
    with pytest.raises(ValueError, match=r"min\(passes\) 0.001 <= seconds 0.5"):
        copy_timing(seconds=0.5, passes=(0.001, 0.002))
    with pytest.raises(ValueError, match="a copy timed in no pass"):
        copy_timing(passes=())
    with pytest.raises(ValueError, match="gb_per_s is None for 0.0001 seconds"):
        copy_timing(gb_per_s=None)
    with pytest.raises(ValueError, match="seconds_min 0.5 <= seconds.point"):
        copy_cell(seconds_jobs=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="min 0.3 <= median 0.2"):
        SecondsSpread(median=0.2, min=0.3, max=0.4)
    with pytest.raises(ValueError, match="wall_interval .* ends before it starts"):
        transfer_job(wall_interval=(5.0, 4.0))


@pytest.mark.parametrize(
    ("cls", "build", "edit", "message"),
    [
        (
            TransferJob,
            transfer_job,
            lambda d: d["copies"][2].update(direction="sideways"),
            r"copies\[2\]\.direction: Input should be 'host_to_device' or 'device_to_host'",
        ),
        (
            TransferTable,
            transfer_table,
            lambda d: d["context_startup_s"].pop("max"),
            r"context_startup_s\.max: Field required",
        ),
    ],
    ids=["job", "table"],
)
def test_a_damaged_transfer_file_is_refused_naming_the_field(tmp_path, cls, build, edit, message):
    path = tmp_path / "transfers.json"
    atomic.write_record(path, build())
    assert read_record(cls, path) == build()
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=rf"transfers\.json: {message}"):
        read_record(cls, path)


def test_full_path_sums(table, load_table):
    rows = fullpath.full_path(table, load_table)
    assert len(rows) == 2 * len(table)  # benchmark only: 2 formats x 4 training cells
    assert {r.format for r in rows} == {"csv", "parquet"}
    assert rows == sorted(rows, key=lambda r: (r.format, r.loader, r.batch_size))
    load_cells = {r.format: r for r in load_table if r.dataset == "benchmark"}
    trains = {(r.batch_size, r.loader): r for r in table}
    for r in rows:
        load, train = load_cells[r.format], trains[(r.batch_size, r.loader)]
        assert r.load_s == pytest.approx(load.read_s_median + load.to_pandas_s_median)
        assert r.convert_s == pytest.approx(load.to_numpy_s_median + load.to_torch_s_median)
        assert r.train_s == train.epoch_s.point
        assert r.eval_s == train.eval_s.point
        assert r.total_s == pytest.approx(r.load_s + r.convert_s + r.train_s + r.eval_s, rel=1e-12)
        assert r.train_share == pytest.approx(r.train_s / r.total_s)
        assert r.noisy == bool(load.noisy or train.noisy)
    first = rows[0]  # csv, dataloader, B=32
    assert (first.format, first.loader, first.batch_size) == ("csv", "dataloader", 32)
    assert first.total_s == pytest.approx(
        0.051 + 0.003 + 0.00002 + statistics.geometric_mean([0.30, 0.28, 0.29]) + 0.005
    )


def test_full_path_other_dataset(table, load_table):
    rows = fullpath.full_path(table, load_table, dataset="northstar")
    assert len(rows) == len(table)
    assert {r.format for r in rows} == {"csv"}
    assert all(r.load_s == pytest.approx(0.010) for r in rows)


def test_aggregate_does_not_mutate_records():
    recs = records()
    before = list(recs)
    aggregate.aggregate_training(recs, ROWS)
    assert recs == before  # records are frozen: nothing could change them in place


# --- variants: device, precision, placement ---------------------------------------------------


def gpu_records():
    """fp32 and fp16 fast-path cells on "cuda" at B=32, resident, with peak memory and context start-up."""
    recs = []
    for precision, runs, peaks in (
        ("fp32", [0.010, 0.011, 0.009], [3_000_000, 3_100_000, 2_900_000]),
        ("fp16", [0.008, 0.008, 0.009], [2_000_000, 2_000_000, 2_000_512]),
    ):
        for rep, (t, peak) in enumerate(zip(runs, peaks)):
            recs.append(
                record(
                    32,
                    "fastpath",
                    rep,
                    t,
                    device="cuda",
                    precision=precision,
                    placement="resident",
                    grad_scaler=precision == "fp16",
                    peak_memory_bytes=peak,
                    context_startup_s=[0.30, 0.20, 0.25][rep],
                )
            )
    return recs


def test_one_row_per_variant():
    table = aggregate.aggregate_training(records() + gpu_records(), ROWS)
    keys = [r.key for r in table]
    assert keys == [
        ("cpu", "fp32", "host", "dataloader", 32, 1, False),
        ("cpu", "fp32", "host", "fastpath", 32, 1, False),
        ("cpu", "fp32", "host", "dataloader", 512, 1, False),
        ("cpu", "fp32", "host", "fastpath", 512, 1, False),
        ("cuda", "fp16", "resident", "fastpath", 32, 1, False),
        ("cuda", "fp32", "resident", "fastpath", 32, 1, False),
    ]
    fp16 = table[4]
    assert fp16.grad_scaler is True and table[5].grad_scaler is False
    assert fp16.epoch_s_runs == (0.008, 0.008, 0.009)
    assert fp16.peak_memory_bytes_max == 2_000_512
    assert table[5].peak_memory_bytes_max == 3_100_000
    assert fp16.context_startup_s_median == pytest.approx(0.25)
    assert all(r.peak_memory_bytes_max is None and r.context_startup_s_median is None for r in table[:4])


def test_gpu_cells_do_not_change_the_cpu_rows():
    cpu_only = aggregate.aggregate_training(records(), ROWS)
    mixed = aggregate.aggregate_training(records() + gpu_records(), ROWS)
    assert [r for r in mixed if r.device == "cpu"] == cpu_only


def test_loader_overhead_compares_within_a_device_and_precision():
    recs = records() + gpu_records()
    # a GPU DataLoader cell at B=32 fp32: compared with the GPU fp32 fast path, not the CPU one
    recs += [
        record(32, "dataloader", rep, t, device="cuda", placement="resident", context_startup_s=0.2)
        for rep, t in enumerate([0.05, 0.05, 0.05])
    ]
    table = aggregate.aggregate_training(recs, ROWS)
    (gpu_dl,) = [r for r in table if r.device == "cuda" and r.loader == "dataloader"]
    # paired per job: the GPU fp32 fast path ran 0.010, 0.011, 0.009 in the same repeats
    assert gpu_dl.epoch_s_over_fastpath.point == pytest.approx(
        statistics.geometric_mean([5.0, 0.05 / 0.011, 0.05 / 0.009])
    )
    assert _row([r for r in table if r.device == "cpu"], 32, "dataloader").epoch_s_over_fastpath.point == pytest.approx(
        statistics.geometric_mean([0.30 / 0.100, 0.28 / 0.101, 0.29 / 0.099])
    )
    for r in table:
        if r.device == "cuda" and r.loader == "fastpath":
            assert r.epoch_s_over_fastpath.point == pytest.approx(1.0)


def test_same_repeat_of_different_variants_is_no_duplicate():
    recs = records() + [
        record(32, "fastpath", 0, 0.1, device="cuda", placement="streamed"),
        record(32, "fastpath", 0, 0.1, device="cuda", placement="resident"),
    ]
    table = aggregate.aggregate_training(recs, ROWS)
    assert len(table) == 6
    with pytest.raises(
        ValueError, match=r"duplicate records for .*\('cuda', 'fp32', 'streamed', 'fastpath', 32, 1, False, 0\)"
    ):
        aggregate.aggregate_training(recs + [record(32, "fastpath", 0, 0.2, device="cuda", placement="streamed")], ROWS)


def test_non_finite_gpu_record_listed_with_its_variant():
    bad = record(
        32,
        "fastpath",
        1,
        0.01,
        finite=False,
        device="cuda",
        precision="fp16",
        placement="streamed",
        grad_scaler=False,
        nonfinite_step=0,
    )
    recs = gpu_records() + [bad]
    (entry,) = aggregate.non_finite_runs(recs)
    assert (
        entry.device,
        entry.precision,
        entry.placement,
        entry.loader,
        entry.batch_size,
        entry.grad_scaler,
        entry.repeat,
        entry.nonfinite_step,
    ) == ("cuda", "fp16", "streamed", "fastpath", 32, False, 1, 0)
    assert entry.final_loss is None
    table = aggregate.aggregate_training(recs, ROWS)
    assert not [r for r in table if r.placement == "streamed"]  # its only repeat was non-finite


def test_full_path_cpu_rows_carry_no_transfer_nor_start_up(table, load_table):
    for r in fullpath.full_path(table, load_table):
        assert r.transfer_s == 0.0
        assert r.startup_s == 0.0
        assert r.total_with_startup_s == r.total_s
        assert r.total_min_s <= r.total_s <= r.total_max_s
        assert (r.device, r.precision, r.placement) == ("cpu", "fp32", "host")


def test_a_table_of_runs_that_all_went_non_finite_says_why_naming_the_keys():
    from builders_planner import sentinel_readings

    from accel_choice.records import UserInputError
    from accel_choice.records.training_job import TrainingJob

    gone = tuple(record(32, loader, 0, 0.1, finite=False) for loader in ("dataloader", "fastpath"))
    job = TrainingJob(records=gone, wall_interval=(0.0, 10.0), environment=environment(), sentinel=sentinel_readings())
    with pytest.raises(
        UserInputError, match=r"every one of the 2 timed runs went non-finite .* from step 3 on .*model\.lr"
    ):
        aggregate.training_table([job], ROWS, NoiseRules(), environment())


# --- the CPU timed beside the GPU (a GPU job's `beside`) -------------------------------------------------


def _gpu_job(repeat: int, gpu_epochs, cpu_epochs, **job) -> TrainingJob:
    """One GPU job of batch size 512: the GPU's fp32 resident cell and the CPU's fast path beside it, round by
    round; each evaluation a fifth of its epoch."""
    on_gpu, on_cpu = (
        record(512, "fastpath", repeat, e[0], epoch_s_each=e, eval_s_each=tuple(t / 5 for t in e), **where)
        for e, where in ((gpu_epochs, dict(device="cuda", placement="resident")), (cpu_epochs, {}))
    )
    fields = dict(
        records=(replaced(on_gpu, position_in_job=0),),
        beside=(replaced(on_cpu, position_in_job=1),),
        wall_interval=(10.0 * repeat, 10.0 * repeat + 5),
    )
    return TrainingJob(**{**fields, "environment": environment(), "sentinel": sentinel_readings(), **job})


def test_the_cpu_beside_a_gpu_job_makes_cells_of_its_own_that_pair_with_the_gpu_job_by_job(tmp_path):
    from accel_choice.analyze import decision_intervals, same_jobs
    from accel_choice.analyze.job_intervals import WELCH
    from accel_choice.io import tidy

    # The machine drifts from job to job (×1, ×1.3, ×0.8); both devices' epochs move with it, their ratio stays
    # about 2 (the GPU's own jitter: 1 %).
    drift, jitter = (1.0, 1.3, 0.8), (1.0, 1.01, 0.99)
    jobs = [
        _gpu_job(r, tuple(0.010 * d * j * k for k in (1.0, 1.02)), tuple(0.020 * d * k for k in (1.0, 1.02)))
        for r, (d, j) in enumerate(zip(drift, jitter))
    ]
    table = aggregate.training_table(jobs, ROWS, NoiseRules(), environment(), "gpu")
    (gpu,), (cpu,) = table.table, table.beside
    assert (gpu.device, cpu.device) == ("cuda", "cpu")
    assert cpu.jobs == gpu.jobs == ("bs512.rep0", "bs512.rep1", "bs512.rep2")
    paired = decision_intervals.per_epoch_speedup(cpu, gpu, 0.95, table.beside)
    apart = decision_intervals.per_epoch_speedup(cpu, gpu, 0.95)  # as if timed in jobs of their own
    assert paired.method == same_jobs.ALONE and paired.jobs == 3 and apart.method == WELCH
    assert paired.low < 2.0 < paired.high and paired.high / paired.low < 1.1  # the drift cancels
    assert apart.high / apart.low > 1.5  # between jobs it does not
    # Every epoch of the GPU jobs is a row of the tidy table, the CPU's beside them too, named by their job.
    rows = tidy.epoch_rows(jobs, "gpu")
    assert sorted({(row["device"], row["job"]) for row in rows}) == sorted(
        (device, f"bs512.rep{r}") for device in ("cpu", "cuda") for r in range(3)
    )
    # The table round-trips with its beside cells; a table of version 11 (none) still reads.
    path = tmp_path / "gpu_training.json"
    atomic.write_record(path, table)
    assert read_record(type(table), path).beside == table.beside
    older = json.loads(path.read_text())
    del older["beside"]
    path.write_text(json.dumps({**older, "schema_version": 11}))
    assert read_record(type(table), path).beside == ()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"device": "cuda", "placement": "streamed"}, "beside: the CPU's records of the job's repeat"),
        ({"repeat": 1}, "beside: the CPU's records of the job's repeat"),
        ({"batch_size": 64}, "beside: the CPU's records of the job's repeat and batch size"),
    ],
    ids=["on the GPU", "of another repeat", "of another batch size"],
)
def test_a_job_refuses_a_beside_record_not_of_the_cpu_or_of_its_repeat(change, message):
    job = _gpu_job(0, (0.01,), (0.02,))
    with pytest.raises(ValueError, match=message):
        replaced(job, beside=(replaced(job.beside[0], **change),))


def test_a_job_file_of_version_14_reads_with_no_beside(tmp_path):
    job = _job(0, 1 << 30)
    path = tmp_path / "rep0.json"
    atomic.write_record(path, job)
    older = json.loads(path.read_text())
    del older["beside"]
    path.write_text(json.dumps({**older, "schema_version": 14}))
    assert read_record(TrainingJob, path) == job


def test_a_gpu_jobs_own_load_is_its_largest_cpu_thread_count_beside_the_gpu():
    # The 1-min load average rose by 1.2 over each job: what its 2-thread CPU cells add, not another process's.
    def rising(job):
        loads = dict(loadavg_before=(0.5, 0.4, 0.3), loadavg_after=(1.7, 0.4, 0.3))
        return replaced(
            job,
            records=tuple(replaced(r, **loads) for r in job.records),
            beside=tuple(replaced(r, threads=2, **loads) for r in job.beside),
        )

    jobs = [rising(_gpu_job(r, (0.01, 0.011), (0.02, 0.021))) for r in range(3)]
    table = aggregate.training_table(jobs, ROWS, NoiseRules(), environment(), "gpu")
    assert [cell.contaminated for cell in (*table.table, *table.beside)] == [(), ()]
    # Aggregated alone, the GPU's cell would blame its own job's CPU work on another process.
    (alone,) = aggregate.aggregate_training([r for job in jobs for r in job.records], ROWS, NoiseRules(), table="gpu")
    assert [c.reasons for c in alone.contaminated] == [("1-min load average rose by 1.20 (> 0.5)",)] * 3


def test_the_paired_speedup_benchmark_sets_the_paired_interval_beside_welchs(tmp_path):
    """benchmarks/paired_speedup.py, for the next GPU run's note, on a small results folder: the GPU's jobs drift,
    and so do the CPU's own; paired in the GPU's jobs the drift cancels."""
    import importlib.util

    from accel_choice.io import paths

    drift, jitter = (1.0, 1.3, 0.8), (1.0, 1.01, 0.99)  # the GPU's own jitter: 1 %
    gpu_jobs = [
        _gpu_job(r, (0.010 * d * j, 0.0102 * d * j), (0.020 * d, 0.0204 * d))
        for r, (d, j) in enumerate(zip(drift, jitter))
    ]
    cpu_jobs = [
        TrainingJob(
            records=(record(512, "fastpath", r, 0.02 * d, epoch_s_each=(0.02 * d, 0.0204 * d)),),
            wall_interval=(100.0 + 10 * r, 105.0 + 10 * r),
            environment=environment(),
            sentinel=sentinel_readings(),
        )
        for r, d in enumerate(reversed(drift))
    ]
    tables = tmp_path / "results"
    for name, jobs in ((paths.GPU_TABLE, gpu_jobs), (paths.CPU_TABLE, cpu_jobs)):
        table = aggregate.training_table(jobs, ROWS, NoiseRules(), environment(), "gpu" if jobs is gpu_jobs else "cpu")
        atomic.write_record(tables / name, table)
    spec = importlib.util.spec_from_file_location("paired_speedup", REPO / "benchmarks" / "paired_speedup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    row, summary = module.folder_lines(tables)
    assert "cuda fp32 resident fastpath B=512 | cpu fastpath 1 thread |" in row
    paired, welch = (float(cell.strip(" ±%|")) for cell in summary.split("|")[4:6])
    assert 0 < paired < 5 < 20 < welch  # the paired half width under 5 %, Welch's over 20 %
    assert module.folder_lines(tmp_path) == [f"| {tmp_path} | no GPU table | | | |"]
