"""The planner: exercise 4's scenario sheet, the timed grid, fit points, models and break-even curves."""

from __future__ import annotations

import dataclasses
import json
import math
import typing

import numpy as np
import pytest
import torch
import builders_planner as builders
from builders_data import copy_cell, transfer_table
from builders_training import training_cell
from builders_planner import fit_point, grid_record, mlp

from accel_choice import records
from accel_choice.analyze import bootstrap, breakeven_interval, costmodel, gpu_costs, planner, theory
from accel_choice.records.estimate import BOOTSTRAP, Estimate
from accel_choice.io import atomic, envinfo
from accel_choice.analyze.costmodel import BreakEvenCurve
from accel_choice.analyze.stats import NoiseRules
from accel_choice.measure import grid
from accel_choice.records.loads import SecondsSpread
from accel_choice.records.grid import GridJob, Workload, grid_workloads
from accel_choice.records.breakeven import BreakEvenSummary
from accel_choice.records.planner import Scenario, ScenarioModelled
from accel_choice.render import html as render_html
from accel_choice.render import planner as render_planner

GIB = 1 << 30
SCENARIO = {"rows": 50_000_000, "features": 256, "hidden": 128, "batch_size": 512, "bandwidth_gb_s": 8}
GPU_ASSUMED = {"seconds_per_step": 0.00015, "tflop_per_s": 10, "memory_gb_s": 1000, "memory_gb": 80, "startup_s": 0.3}
CPU_TRUE = costmodel.assumed("cpu", seconds_per_step=4e-4, flop_per_s=2e10, bytes_per_s=2.5e9)
GPU_TRUE = costmodel.assumed("cuda", seconds_per_step=1.5e-4, flop_per_s=1e13, bytes_per_s=1e12)
# The axes vary independently, so the terms of the cost model can be told apart.
DESIGN = grid_workloads([128, 4096], [4, 64], [8, 256], [16, 64])
TINY = grid_workloads([64, 128], [4], [4, 8], [16, 32])


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _plan(**memory):
    memory = {"host_memory_bytes": 24 * GIB, "gpu_memory_bytes": 80 * 10**9, **memory}
    return planner.scenario_plan(**SCENARIO, **memory, gpu_memory_source="measured")


# ---------------------------------------------------------------- exercise 4


def test_scenario_plan_reproduces_exercise_4():
    plan = _plan()
    assert plan.widths == (256, 128, 1)
    assert plan.input_bytes == 51_200_000_000 == 51.2e9
    assert plan.params == 33_025
    assert plan.adam_fp32_bytes == 528_400 and plan.adam_fp32_bytes / 1024 == pytest.approx(516, abs=0.05)
    assert plan.batch_input_bytes == 524_288
    assert plan.batch_hidden_bytes == 262_144
    assert plan.batch_logit_bytes == 2_048
    assert plan.forward_activation_bytes == 524_288 + 262_144 + 2_048
    assert plan.forward_backward_activation_bytes == 2 * plan.forward_activation_bytes
    assert plan.transfer_s == pytest.approx(6.4)
    assert plan.steps_per_epoch == 97_657
    assert plan.flop_per_epoch_3x == 3 * 2 * 50_000_000 * (256 * 128 + 128)
    assert plan.fits_in_host_memory is False  # 51.2 GB > 24 GiB
    assert plan.fits_in_gpu_memory is True  # 51.2 GB <= 80 GB
    assert plan.must_stream
    assert records.from_json(Scenario, json.loads(json.dumps(records.to_json(plan), allow_nan=False)), "here") == plan


def test_unknown_memory_is_none_not_a_guess():
    plan = _plan(host_memory_bytes=None, gpu_memory_bytes=None)
    assert plan.fits_in_host_memory is None and plan.fits_in_gpu_memory is None
    assert plan.must_stream is False


@pytest.mark.parametrize(
    "host, gpu, streams",
    [
        (64 * GIB, 80 * 10**9, False),
        (64 * GIB, 40 * 10**9, True),  # fits the host, not the GPU
        (24 * GIB, None, True),
        (None, 40 * 10**9, True),
        (64 * GIB, None, False),
    ],
)
def test_must_stream(host, gpu, streams):
    assert _plan(host_memory_bytes=host, gpu_memory_bytes=gpu).must_stream is streams


# ---------------------------------------------------------------- the grid


def test_grid_workloads_skips_batches_larger_than_the_rows():
    workloads = grid_workloads([64, 1024], [4, 16], [8], [32, 128, 512])
    assert len(workloads) == 2 * 2 * 1 * 3 - 2 * 2  # B = 128 and 512 do not split 64 rows
    assert all(w.batch_size <= w.rows for w in workloads)
    assert Workload(rows=64, features=4, hidden=8, batch_size=128) not in workloads
    assert Workload(rows=1024, features=16, hidden=8, batch_size=512) in workloads
    assert len(TINY) == 8
    assert grid_workloads([16], [4], [8], [32]) == []


def test_synthetic_tensors_are_seeded_and_shaped():
    workload = Workload(rows=100, features=7, hidden=3, batch_size=10)
    x, y = grid.synthetic_tensors(workload, seed=5)
    assert x.shape == (100, 7) and y.shape == (100, 1)
    assert x.dtype == y.dtype == torch.float32
    assert set(y.unique().tolist()) <= {0.0, 1.0}
    x2, y2 = grid.synthetic_tensors(workload, seed=5)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(x, grid.synthetic_tensors(workload, seed=6)[0])


def test_measure_grid_times_every_workload_alternating_the_order(one_thread):
    measured = {
        repeat: grid.measure_grid(TINY, repeat, device="cpu", seed=3, lr=1e-3, warmup_steps=2, epochs=2)
        for repeat in (0, 1)
    }
    by_repeat = {repeat: timed for repeat, (timed, _) in measured.items()}
    for repeat, (timed, sentinel) in measured.items():
        assert len(timed) == len(TINY)
        assert len(sentinel.seconds) == 2 + 1  # start, between the two rounds, end
        assert all(len(r.epoch_s_each) == len(r.eval_s_each) == 2 for r in timed)
        for r in timed:
            assert (r.device, r.loader, r.precision, r.placement) == ("cpu", "fastpath", "fp32", "host")
            assert r.repeat == repeat and r.finite is True
            assert r.samples == r.eval_samples == r.rows
            assert r.steps == theory.steps_per_epoch(r.rows, r.batch_size)
            assert math.isfinite(r.epoch_s) and r.epoch_s > 0
            assert r.warmup_steps == 2 and r.context_startup_s is None
            assert r.foreign_cpu_share is None or r.foreign_cpu_share >= 0
        job = GridJob(
            records=tuple(timed),
            wall_interval=(0.0, 1.0),
            environment=envinfo.quick_environment(3),
            sentinel=sentinel,
        )
        assert records.from_json(GridJob, json.loads(json.dumps(records.to_json(job), allow_nan=False)), "here") == job
    # Records in workload order; the rounds ran forward and backward (training.epoch_order), turned round
    # in odd repeats.
    order = [[r.workload for r in by_repeat[repeat]] for repeat in (0, 1)]
    assert order[0] == TINY and order[1] == TINY
    # Same seed: the same data and initial weights, so the same trained weights whatever the order.
    final = {repeat: {r.workload: r.final_weights_sha256 for r in by_repeat[repeat]} for repeat in (0, 1)}
    assert final[0] == final[1]


def _record(rows, batch_size, epoch_s, finite=True, device="cpu", hidden=8, foreign=0.0, loadavg=(0.1, 0.1)):
    return grid_record(
        device=device,
        rows=rows,
        features=4,
        hidden=hidden,
        batch_size=batch_size,
        epoch_s=epoch_s,
        finite=finite,
        nonfinite_step=None if finite else 0,
        foreign_cpu_share=foreign,
        loadavg_before=(loadavg[0], 0.0, 0.0),
        loadavg_after=(loadavg[1], 0.0, 0.0),
    )


def test_grid_points_take_the_median_over_repeats_and_drop_non_finite_runs():
    records = [
        _record(128, 16, 0.30),
        _record(128, 16, 0.10),
        _record(128, 16, 0.20),
        _record(128, 16, 99.0, finite=False),
        _record(64, 16, 0.05),
        _record(64, 16, 0.07),
        _record(64, 32, 0.09, finite=False),  # every repeat non-finite: no point at all
        _record(64, 16, 0.01, device="cuda"),
    ]
    points = planner.grid_points(records, NoiseRules())
    assert [(p.device, p.rows, p.batch_size) for p in points] == [("cpu", 64, 16), ("cpu", 128, 16), ("cuda", 64, 16)]
    cpu_small, cpu_large, cuda = points
    assert cpu_large.epoch_s == pytest.approx(0.20)
    assert (cpu_large.epoch_s_min, cpu_large.epoch_s_max, cpu_large.repeats) == (0.10, 0.30, 3)
    assert cpu_large.noisy is True  # IQR/median 50 %
    assert cpu_small.epoch_s == pytest.approx(0.06) and cpu_small.repeats == 2
    assert cuda.repeats == 1 and cuda.noisy is False
    assert all(p.source == "grid" and p.features == 4 and p.hidden == 8 for p in points)


def _table_row(device, loader, precision, placement, batch_size, epoch_s):
    return training_cell(
        device=device, loader=loader, precision=precision, placement=placement, batch_size=batch_size, epoch_s=epoch_s
    )


def test_benchmark_points_keep_only_fastpath_fp32_host_or_resident_rows():
    table = [
        _table_row("cpu", "fastpath", "fp32", "host", 32, 0.5),
        _table_row("cpu", "dataloader", "fp32", "host", 32, 0.9),
        _table_row("cuda", "fastpath", "fp32", "resident", 512, 0.01),
        _table_row("cuda", "fastpath", "fp32", "streamed", 512, 0.05),
        _table_row("cuda", "fastpath", "bf16", "resident", 512, 0.008),
        _table_row("cuda", "fastpath", "fp16", "resident", 32, 0.02),
    ]
    points = planner.benchmark_points(table, mlp(8192, 32, 48))
    assert [(p.device, p.batch_size, p.epoch_s) for p in points] == [("cpu", 32, 0.5), ("cuda", 512, 0.01)]
    assert points[0] == fit_point(
        device="cpu",
        source="benchmark",
        rows=8192,
        features=32,
        hidden=48,
        batch_size=32,
        epoch_s=0.5,
        epoch_s_min=0.45,
        epoch_s_max=0.55,
        repeats=3,
        noisy=False,
        busy_repeats=0,
    )


# ---------------------------------------------------------------- models


def _points(model, device, workloads=DESIGN):
    return [
        fit_point(
            device=device,
            **dataclasses.asdict(w),
            epoch_s=(s := costmodel.predict(model, w)),
            epoch_s_min=s,
            epoch_s_max=s,
        )
        for w in workloads
    ]


def test_an_assumed_gpu_model_joins_a_cpu_only_measurement():
    models = planner.device_models(_points(CPU_TRUE, "cpu"), GPU_ASSUMED)
    assert list(models) == ["cpu", "gpu"]
    cpu, gpu = models["cpu"], models["gpu"]
    assert cpu.source == "fitted" and cpu.quality.points == len(DESIGN)
    assert cpu.seconds_per_step == pytest.approx(CPU_TRUE.seconds_per_step, rel=1e-6)
    assert cpu.flop_per_s == pytest.approx(CPU_TRUE.flop_per_s, rel=1e-6)
    assert gpu.source == "assumed" and gpu.quality is None
    assert gpu.seconds_per_step == 0.00015
    assert gpu.flop_per_s == 10 * 1e12
    assert gpu.bytes_per_s == 1000 * 1e9


def test_a_measured_gpu_gets_its_own_fitted_model():
    points = _points(CPU_TRUE, "cpu") + _points(GPU_TRUE, "cuda")
    models = planner.device_models(points, GPU_ASSUMED)
    assert list(models) == ["cpu", "cuda"]
    assert {m.source for m in models.values()} == {"fitted"}


def test_model_row_writes_a_dropped_term_as_null():
    row = planner.model_row(costmodel.assumed("cpu", 1e-4, math.inf, 2e10))
    assert row.flop_per_s is None and row.gflop_per_s is None
    assert row.bytes_per_s == 2e10 and row.gb_per_s == pytest.approx(20.0)
    assert row.source == "assumed" and row.points is None and row.terms_used is None
    json.dumps(records.to_json(row), allow_nan=False)


def test_model_row_of_a_fit_that_dropped_a_term():
    no_compute = costmodel.assumed("cpu", 4e-4, math.inf, 2.5e9, state_bytes_per_s=math.inf)
    fitted = planner.device_models(_points(no_compute, "cpu"), GPU_ASSUMED)["cpu"]
    row = planner.model_row(fitted)
    assert row.terms_used == ("overhead", "memory")
    assert row.state_bytes_per_s is None and row.state_gb_per_s is None and row.seconds_per_row == 0
    assert row.flop_per_s is None and row.gflop_per_s is None
    assert row.gb_per_s == pytest.approx(2.5, rel=1e-6) and row.points == len(DESIGN)
    assert row.r2 is not None and row.loo_median_abs_rel_error is not None and row.identifiable is not None
    assert (row.warning is None) == row.identifiable
    json.dumps(records.to_json(row), allow_nan=False)


# ---------------------------------------------------------------- break-even


@pytest.mark.parametrize("low, high", [(1000, 50_000_000), (16, 4096), (1, 2), (7, 7), (100, 130)])
def test_sweep_values_are_increasing_unique_and_include_both_ends(low, high):
    values = planner.sweep_values(low, high)
    assert values[0] == low and values[-1] == high
    assert all(b > a for a, b in zip(values, values[1:]))
    assert len(values) <= 25 and all(isinstance(v, int) for v in values)


def test_break_even_curves_resident_and_streamed_per_axis():
    base = Workload(rows=8192, features=32, hidden=48, batch_size=512)
    sweep = {"rows": (1024, 50_000_000), "batch_size": (16, 8192)}
    bytes_per_s, startup, epochs = 8e9, 0.3, 10
    curves = planner.break_even_curves(CPU_TRUE, GPU_TRUE, base, sweep, bytes_per_s, startup, epochs)
    assert [(c.axis, c.placement) for c in curves] == [
        ("rows", "resident"),
        ("rows", "streamed"),
        ("batch_size", "resident"),
        ("batch_size", "streamed"),
    ]
    for resident, streamed in (curves[0:2], curves[2:4]):
        low, high = sweep[resident.axis]
        assert list(resident.values) == list(streamed.values) == planner.sweep_values(low, high)
        assert resident.cpu_s == streamed.cpu_s
        assert all(s >= r for r, s in zip(resident.gpu_s, streamed.gpu_s))
        for value, gpu_s in zip(resident.values, resident.gpu_s):
            w = dataclasses.replace(resident.base, **{resident.axis: value})
            copy_s = theory.input_bytes(w.rows, w.features) / bytes_per_s
            assert gpu_s == pytest.approx(costmodel.predict(GPU_TRUE, w) + (startup + copy_s) / epochs)
    # Along rows the GPU catches up: resident data wins somewhere, and the crossing is inside the sweep.
    assert curves[0].break_even is not None and 1024 < curves[0].break_even < 50_000_000


def test_one_epoch_makes_resident_and_streamed_equal():
    base = Workload(rows=8192, features=32, hidden=48, batch_size=512)
    resident, streamed = planner.break_even_curves(CPU_TRUE, GPU_TRUE, base, {"rows": (1024, 1 << 20)}, 8e9, 0.3, 1)
    assert resident.gpu_s == pytest.approx(streamed.gpu_s)


# ---------------------------------------------------------------- measured or assumed


def _at(gb_per_s, *args, **kwargs):
    """A copy of 1 MiB at `gb_per_s` (its median seconds to match)."""
    seconds = (1 << 20) / (gb_per_s * 1e9)
    return copy_cell(
        *args,
        **kwargs,
        seconds=Estimate(point=seconds, low=seconds, high=seconds, level=0.95, method=BOOTSTRAP, jobs=1),
        seconds_jobs=(seconds,) * 3,
    )


TRANSFERS = transfer_table(
    copies=(
        _at(3.0, "batch B=512"),
        _at(25.0, "matrix", memory="pinned"),
        _at(9.0, "matrix", "device_to_host"),
        _at(12.0, "matrix"),
    ),
    context_startup_s=SecondsSpread(median=0.2, min=0.18, max=0.25),
)


def test_measured_transfers_and_start_up_win_over_assumptions():
    cells = [
        _table_row("cpu", "fastpath", "fp32", "host", 32, 0.5),
        training_cell(device="cuda", placement="resident", startup_s_jobs=(2.5,) * 3),
        training_cell(device="cuda", placement="streamed", startup_s_jobs=(2.7,) * 3),
    ]
    cells[0] = dataclasses.replace(cells[0], startup_s_jobs=(1.6,) * 3)
    # the GPU's one-off beyond the CPU's (both jobs pay the process's first-step imports)
    assert gpu_costs.gpu_startup_seconds(cells, 0.3) == (pytest.approx(1.0), "measured")
    assert gpu_costs.gpu_startup_seconds(cells[:1], 0.3) == (0.3, "assumed")
    # the faster of the pageable (12 GB/s) and pinned (25 GB/s) matrix copies, and which it was
    assert gpu_costs.host_to_device_bytes_per_s(TRANSFERS, 8) == (pytest.approx(25e9), "measured", "pinned")
    # ... the pinned copy charged its pinning: 100 µs to pin 1 MiB leaves it 7.4 GB/s, so pageable wins
    pinning = dataclasses.replace(TRANSFERS, pin_memory_s_jobs=(1e-4,))
    assert gpu_costs.host_to_device_bytes_per_s(pinning, 8) == (pytest.approx(12e9), "measured", "pageable")


@pytest.mark.parametrize("transfers", [None, transfer_table(copies=())], ids=["no GPU", "no matrix copy"])
def test_assumptions_fill_in_without_transfer_measurements(transfers):
    assert gpu_costs.host_to_device_bytes_per_s(transfers, 8) == (8e9, "assumed", None)


def test_only_a_host_to_device_matrix_copy_counts():
    pageable_only = tuple(row for row in TRANSFERS.copies if row.memory == "pageable")
    assert gpu_costs.host_to_device_bytes_per_s(dataclasses.replace(TRANSFERS, copies=pageable_only), 8) == (
        pytest.approx(12e9),
        "measured",
        "pageable",
    )
    others = tuple(row for row in TRANSFERS.copies if (row.what, row.direction) != ("matrix", "host_to_device"))
    assert gpu_costs.host_to_device_bytes_per_s(dataclasses.replace(TRANSFERS, copies=others), 8) == (
        8e9,
        "assumed",
        None,
    )


# ---------------------------------------------------------------- the scenario, modelled


def test_scenario_predictions():
    plan = _plan()
    models = planner.device_models(_points(CPU_TRUE, "cpu"), GPU_ASSUMED)
    predicted = planner.scenario_predictions(plan, models["cpu"], models["gpu"], 8e9)
    assert isinstance(predicted, ScenarioModelled)
    workload = Workload(rows=50_000_000, features=256, hidden=128, batch_size=512)
    assert predicted.cpu_epoch_s == pytest.approx(costmodel.predict(models["cpu"], workload))
    assert predicted.gpu_epoch_s_resident == pytest.approx(costmodel.predict(models["gpu"], workload))
    assert predicted.host_to_device_copy_s == pytest.approx(6.4)
    assert predicted.gpu_epoch_s_streamed == pytest.approx(predicted.gpu_epoch_s_resident + 6.4)
    assert predicted.gpu_model_source == "assumed"
    modelled = dataclasses.replace(plan, modelled=predicted)
    written = json.loads(json.dumps(records.to_json(modelled), allow_nan=False))
    assert records.from_json(Scenario, written, "here") == modelled
    assert {"quantity": "modelled.cpu_epoch_s", "value": predicted.cpu_epoch_s} in planner.scenario_rows(modelled)


def test_grid_points_count_repeats_measured_while_the_machine_was_busy():
    records = [_record(128, 16, 0.20), _record(128, 16, 0.21, foreign=0.6), _record(128, 16, 0.22, loadavg=(0.1, 1.5))]
    [point] = planner.grid_points(records, NoiseRules())
    assert point.busy_repeats == 2 and point.repeats == 3


def test_break_even_summary_names_a_gpu_that_is_faster_only_at_the_small_end():
    curve = BreakEvenCurve(
        axis="rows",
        placement="resident",
        values=(10, 100, 1000),
        cpu_s=(1.0, 2.0, 3.0),
        gpu_s=(0.5, 1.0, 4.0),
        ratio=(2.0, 2.0, 0.75),
        gpu_faster=(True, True, False),
        break_even=None,
        break_even_grid=None,
        gpu_always_faster=False,
        base=Workload(rows=10, features=4, hidden=8, batch_size=2),
    )
    # Every resample like the point: no break-even from which the GPU stays faster, beyond the sweep.
    interval = breakeven_interval.interval(math.inf, np.full(10, math.inf), 0.95)
    summary = planner.break_even_summary(curve, interval)
    assert summary.gpu_faster_until == 100 and summary.gpu_never_faster is False
    assert (summary.break_even_low, summary.break_even_high) == (None, None)
    assert summary.break_even_low_where == summary.break_even_high_where == "beyond_sweep"
    assert (summary.sweep_min, summary.sweep_max, summary.no_break_even_share) == (10, 1000, 1.0)
    never = planner.break_even_summary(dataclasses.replace(curve, gpu_faster=(False, False, False)), interval)
    assert never.gpu_faster_until is None and never.gpu_never_faster is True


# ---------------------------------------------------------------- the records


def test_a_grid_record_has_the_fields_of_a_training_record_but_the_job_comparisons_plus_the_workload():
    from accel_choice.records.grid import GridRecord
    from accel_choice.records.training import TrainingRecord

    training = {f.name: f.type for f in dataclasses.fields(TrainingRecord)}
    grid_fields = {f.name: f.type for f in dataclasses.fields(GridRecord)}
    assert set(grid_fields) == set(training) - {
        "position_in_job",
        "same_final_weights_across_variants",
        "startup_s",
        "reference_epoch_s",
        "launch",
        "compile_mode",
        "graph_breaks",
    } | {
        "rows",
        "features",
        "hidden",
    }
    assert all(grid_fields[name] == kind for name, kind in training.items() if name in grid_fields)


INVARIANTS = [
    (lambda: builders.workload(rows=0), "greater than or equal to 1"),
    (lambda: builders.grid_record(samples=100), "must both equal rows 128"),
    (lambda: builders.grid_record(steps=7), r"steps 7 is not ⌈rows / batch_size⌉ = 8"),
    (lambda: builders.grid_record(finite=False), "finite is False but nonfinite_step is None"),
    (
        lambda: builders.grid_job(records=(builders.grid_record(), builders.grid_record(rows=256, repeat=1))),
        "one device and one repeat",
    ),
    (lambda: builders.grid_job(records=(builders.grid_record(), builders.grid_record())), "timed twice"),
    (lambda: builders.grid_job(records=()), "at least one workload"),
    (lambda: builders.fit_point(epoch_s_min=0.03), "epoch_s_min 0.03 <= epoch_s 0.02"),
    (lambda: builders.fit_point(busy_repeats=4), "busy_repeats 4 > repeats 3"),
    (lambda: builders.residual(rel_error=0.5), "rel_error 0.5 is not"),
    (lambda: builders.model_row(gflop_per_s=None), "both be null"),
    (lambda: builders.model_row(flop_per_s=None, gflop_per_s=None), "terms_used .* does not match the rates"),
    (lambda: builders.model_row(median_abs_rel_error=0.5), "median_abs_rel_error 0.5 > max_abs_rel_error"),
    (lambda: builders.model_row(identifiable=False), "carries a warning"),
    (lambda: builders.assumed_model_row(points=3), "an assumed model has no fit"),
    (lambda: builders.model_row(points=None), "a fitted model has points"),
    (lambda: builders.cost_model_table(residuals=(builders.residual(),)), "2 points and 1 residuals"),
    (lambda: builders.cost_model_table(models=(builders.model_row(), builders.model_row())), "one model per device"),
    (lambda: builders.break_even_summary(gpu_always_faster=True), "no break_even"),
    (
        lambda: builders.break_even_summary(break_even=None, gpu_always_faster=True, gpu_never_faster=True),
        "both always and never",
    ),
    (lambda: builders.break_even_summary(break_even_low=6000.0), "break_even_low 6000.0 <= break_even 5000.0"),
    (lambda: builders.break_even_summary(break_even_high=4000.0), "<= break_even_high 4000.0, all within"),
    (lambda: builders.break_even_summary(break_even_high=6e7), "within the sweep 1000..50000000"),
    (lambda: builders.break_even_summary(break_even_low=None), "a number exactly when its"),
    (lambda: builders.break_even_summary(break_even_low_where="below_sweep"), "a number exactly when its"),
    (
        lambda: builders.break_even_summary(break_even_high=None, break_even_high_where="below_sweep"),
        "the interval in_sweep..below_sweep misses in_sweep",
    ),
    (lambda: builders.break_even_summary(break_even=None, gpu_never_faster=True), "misses beyond_sweep"),
    (lambda: builders.break_even_summary(break_even_share=0.9), "shares add up to 0.9"),
    (lambda: builders.break_even_summary(confidence=1.0), "confidence is not in"),
    (
        lambda: builders.break_even_table(summary=(builders.break_even_summary(resamples=100),), resampled_devices=()),
        "same confidence and resamples, from resampled devices",
    ),
    (lambda: builders.curve_row(cpu_over_gpu=3.0), r"cpu_over_gpu 3.0 is not cpu_s / gpu_s"),
    (lambda: builders.curve_row(gpu_s=0.0, cpu_over_gpu=1.0), "null exactly when gpu_s is 0"),
    (lambda: builders.break_even_table(summary=()), "the curves .* and the summary .* differ"),
    (
        lambda: builders.break_even_table(curves=(builders.curve_row(), builders.curve_row())),
        "values of a curve increase",
    ),
    (lambda: builders.flop_row(counted_backward_per_batch=1), "!= counted_per_batch"),
    (lambda: builders.flop_row(gflop_per_s_3x=None), "all set .* or all null"),
    (lambda: builders.flop_row(steps=9), "steps 9 is not"),
    (lambda: builders.scenario_modelled(gpu_epoch_s_streamed=12.0), "is not gpu_epoch_s_resident"),
    (lambda: builders.scenario(must_stream=False), "must_stream False does not follow"),
    (lambda: builders.scenario(fits_in_host_memory=True), "fits_in_host_memory True does not follow"),
    (lambda: builders.scenario(widths=(256, 64, 1)), r"is not \(features, hidden, 1\)"),
    (lambda: builders.scenario(forward_backward_activation_bytes=1), "forward_activation_bytes"),
]


@pytest.mark.parametrize(("build", "message"), INVARIANTS, ids=[message[:40] for _, message in INVARIANTS])
def test_a_record_that_breaks_an_invariant_is_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize(
    ("build", "cls", "edit", "field"),
    [
        (
            lambda: builders.grid_job(),
            "GridJob",
            lambda d: d["records"][1].update(epoch_s_each=[-1.0]),
            r"records\[1\]\.epoch_s_each",
        ),
        (
            lambda: builders.cost_model_table(),
            "CostModelTable",
            lambda d: d["models"][1].update(source="guessed"),
            r"models\[1\]\.source",
        ),
        (
            lambda: builders.break_even_table(),
            "BreakEvenTable",
            lambda d: d["curves"][0].pop("gpu_s"),
            r"curves\[0\]\.gpu_s: Field required",
        ),
        (
            lambda: builders.flop_check(),
            "FlopCheck",
            lambda d: d["table"][0].update(counted_per_batch="823296"),
            r"table\[0\]\.counted_per_batch",
        ),
        (
            lambda: builders.scenario(),
            "Scenario",
            lambda d: d["modelled"].update(cpu_epoch_s=0),
            r"modelled\.cpu_epoch_s",
        ),
    ],
    ids=["grid job", "cost model", "break-even", "flop check", "scenario"],
)
def test_a_planner_file_round_trips_and_a_damaged_one_is_refused_naming_the_field(tmp_path, build, cls, edit, field):
    from accel_choice.records import RecordError
    from accel_choice.records import breakeven, grid, planner

    record_type = getattr(grid if cls == "GridJob" else breakeven if cls == "BreakEvenTable" else planner, cls)
    path = tmp_path / "record.json"
    atomic.write_record(path, build())
    assert records.read(record_type, path) == build()
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=rf"^{path}: {field}.*re-run"):
        records.read(record_type, path)
    path.write_text(json.dumps({k: v for k, v in data.items() if k not in records.HEADER}))
    with pytest.raises(RecordError, match="has no schema"):
        records.read(record_type, path)


def test_the_break_even_summary_file_is_a_list_of_summary_rows(tmp_path):
    from accel_choice.records.breakeven import BreakEvenSummary

    path = tmp_path / "break_even_summary.json"
    summary = (builders.break_even_summary(), BEYOND)
    atomic.write_json(path, list(summary))
    assert isinstance(json.loads(path.read_text()), list)
    assert records.read(tuple[BreakEvenSummary, ...], path) == summary


# ---------------------------------------------------------------- the break-even's interval

BASE = Workload(rows=8192, features=32, hidden=48, batch_size=512)
ROWS = {"rows": (1024, 50_000_000)}
# A CPU that never pays off for the GPU within the sweep: the interval lies wholly beyond it.
BEYOND = builders.break_even_summary(
    placement="streamed",
    break_even=None,
    gpu_never_faster=True,
    break_even_low=None,
    break_even_high=None,
    break_even_low_where="beyond_sweep",
    break_even_high_where="beyond_sweep",
    break_even_share=0.0,
    no_break_even_share=1.0,
)


def _scattered_grid(scatter, *, repeats=3, seed=0, model=CPU_TRUE, device="cpu"):
    """`repeats` timed repeats of every DESIGN workload: the model's epoch times a log-normal factor
    of spread `scatter` (0: every repeat the same)."""
    rng = np.random.default_rng(seed)
    return [
        grid_record(
            device=device,
            **dataclasses.asdict(w),
            epoch_s=costmodel.predict(model, w) * float(np.exp(rng.normal(0.0, scatter))),
            repeat=repeat,
        )
        for repeat in range(repeats)
        for w in DESIGN
    ]


def _models(grid):
    models = planner.device_models(planner.grid_points(grid, NoiseRules()), GPU_ASSUMED)
    return models, next(name for name in models if name != "cpu")


def _intervals(grid, sweep=ROWS, *, resamples=200, seed=1):
    """The point break-even curves of `grid` (the GPU assumed unless measured) and their intervals."""
    models, gpu = _models(grid)
    curves = planner.break_even_curves(models["cpu"], models[gpu], BASE, sweep, 8e9, 0.3, 10)
    measured = breakeven_interval.measurements(grid, [], mlp(BASE.rows, BASE.features, BASE.hidden))
    intervals = breakeven_interval.break_even_intervals(
        curves, measured, models, gpu, confidence=0.95, resamples=resamples, seed=seed
    )
    return curves, intervals


def test_the_resampled_measurements_are_the_jobs_behind_the_fit_points():
    grid = _scattered_grid(0.2) + [_record(128, 16, 99.0, finite=False)]
    table = [
        _table_row("cpu", "fastpath", "fp32", "host", 32, 0.5),
        _table_row("cpu", "dataloader", "fp32", "host", 32, 0.9),
    ]
    measured = breakeven_interval.measurements(grid, table, mlp(8192, 32, 48))
    points = planner.grid_points(grid, NoiseRules()) + planner.benchmark_points(table, mlp(8192, 32, 48))
    assert [(m.device, m.workload) for m in measured] == [(p.device, p.workload) for p in points]
    assert [len(m.jobs) for m in measured] == [p.repeats for p in points] == [3] * (len(DESIGN) + 1)
    assert [bootstrap.pooled_median(m.jobs) for m in measured] == pytest.approx([p.epoch_s for p in points])


def test_the_workloads_of_one_grid_job_are_drawn_together_and_so_are_the_cells_of_one_cpu_job():
    grid = _scattered_grid(0.2)
    table = [
        _table_row("cpu", "fastpath", "fp32", "host", 32, 0.5),
        _table_row("cpu", "fastpath", "fp32", "host", 64, 0.4),
    ]
    measured = breakeven_interval.measurements(grid, table, mlp(8192, 32, 48))
    on_grid = [m for m in measured if m.block == "grid cpu"]
    assert len(on_grid) == len(DESIGN) and {m.repeats for m in on_grid} == {(0, 1, 2)}
    seeds = breakeven_interval.shared_seeds(measured, list(range(100, 100 + len(measured))))
    assert seeds[: len(DESIGN)] == [100] * len(DESIGN)  # one set of draws for the whole grid job
    # the two batch sizes' cells, timed by the same CPU jobs (rep0-2): one set of draws, apart from the grid's
    assert [m.block for m in measured[len(DESIGN) :]] == ["training rep0 rep1 rep2"] * 2
    assert seeds[len(DESIGN) :] == [100 + len(DESIGN)] * 2
    # A workload that lost a repeat (a non-finite epoch) cannot be paired job by job: its own draws.
    lost = [
        r
        for r in grid
        if not (
            r.repeat == 2
            and r.rows == DESIGN[0].rows
            and r.features == DESIGN[0].features
            and r.hidden == DESIGN[0].hidden
            and r.batch_size == DESIGN[0].batch_size
        )
    ]
    measured = breakeven_interval.measurements(lost, [], mlp(1, 1, 1))
    assert breakeven_interval.shared_seeds(measured, list(range(len(measured)))) == [0, 1] + [1] * (len(DESIGN) - 2)


def test_a_slow_grid_job_moves_every_workload_and_the_interval_holds_each_jobs_own_break_even():
    """Each grid job runs at its own speed (a drift shared by all its workloads, 1 % noise apart):
    the interval must hold the break-even each job alone gives: a resample drawing one job three
    times is that job's fit."""
    rng = np.random.default_rng(3)
    speed = {0: 1.0, 1: 1.4, 2: 0.75}
    grid = [
        grid_record(
            **dataclasses.asdict(w),
            epoch_s=costmodel.predict(CPU_TRUE, w) * speed[repeat] * float(np.exp(rng.normal(0.0, 0.01))),
            repeat=repeat,
        )
        for repeat in speed
        for w in DESIGN
    ]
    curves, intervals = _intervals(grid, resamples=2000)
    alone = [_intervals([r for r in grid if r.repeat == repeat])[0][0].break_even for repeat in speed]
    assert intervals[0].low <= min(alone) and max(alone) <= intervals[0].high

    models, gpu = _models(grid)
    measured = [
        dataclasses.replace(m, block=None)
        for m in breakeven_interval.measurements(grid, [], mlp(BASE.rows, BASE.features, BASE.hidden))
    ]
    apart = breakeven_interval.break_even_intervals(
        curves, measured, models, gpu, confidence=0.95, resamples=2000, seed=1
    )[0]
    # Drawn point by point, a resample mixes the jobs' speeds across workloads: its refit describes no
    # job (the five terms chase the mixture), and the interval reaches far past every job's own
    # break-even (here to 0.52-0.55 × the fast job's over noise seeds 0-5; drawn together, to 1.0 ×).
    assert apart.low < 0.6 * min(alone) and intervals[0].low > 0.95 * min(alone)


def test_the_interval_holds_the_point_narrows_when_the_repeats_agree_and_widens_when_they_scatter():
    spans = {}
    for scatter in (0.0, 0.02, 0.3):
        grid = _scattered_grid(scatter)
        curves, intervals = _intervals(grid)
        for curve, interval in zip(curves, intervals):
            assert curve.break_even is not None and interval.break_even_share == 1.0
            assert interval.low <= curve.break_even <= interval.high
            assert (interval.low_where, interval.high_where, interval.resamples) == ("in_sweep", "in_sweep", 200)
        spans[scatter] = intervals[0].high / intervals[0].low
        if scatter:
            # The resampled break-evens lie on both sides of the point: the percentiles hold it
            # without the widening that guards against a rounding step.
            models, gpu = _models(grid)
            fits = breakeven_interval.resampled_fits(
                breakeven_interval.measurements(grid, [], mlp(1, 1, 1)), models, 200, seed=1
            )
            outcomes = breakeven_interval.curve_outcomes(curves[0], fits[("cpu", False)], fits[(gpu, False)])
            assert 0.1 < np.mean(outcomes < curves[0].break_even) < 0.9
    assert spans[0.0] == pytest.approx(1.0, abs=1e-9)  # identical repeats: every refit is the point fit
    # 2 % scatter: the ends about 12 % apart, the refits' spread and the model's leave-one-out misses
    # (analyze.prediction: each refit's curve scaled by one of them) of about that size
    assert 1.0 < spans[0.02] < 1.2
    assert spans[0.3] > 1.5 and spans[0.3] - 1 > 4 * (spans[0.02] - 1)  # 30 %: about 2× apart


def test_the_interval_is_the_same_for_the_same_seed():
    grid = _scattered_grid(0.2, repeats=6)  # 3 jobs of one epoch, drawn together, give 10 distinct resamples
    assert _intervals(grid, seed=5)[1] == _intervals(grid, seed=5)[1]
    assert _intervals(grid, seed=5)[1] != _intervals(grid, seed=6)[1]


@pytest.mark.parametrize("side", ["beyond", "below"])
def test_a_break_even_missing_from_some_resamples_is_outside_the_sweep_not_a_number(side):
    grid = _scattered_grid(0.3)
    point = _intervals(grid)[0][0].break_even
    # The sweep ends just past the point: in some resamples the GPU never turns faster within it
    # (beyond), or is faster from its first value on (below).
    sweep = {"rows": (1024, round(point * 1.05))} if side == "beyond" else {"rows": (round(point / 1.05), 50_000_000)}
    [curve, *_], [interval, *_] = _intervals(grid, sweep)
    assert curve.break_even is not None and curve.values[0] <= curve.break_even <= curve.values[-1]
    outside = interval.no_break_even_share if side == "beyond" else interval.gpu_always_faster_share
    assert 0.025 < outside < 1 and interval.break_even_share == pytest.approx(1 - outside)
    if side == "beyond":
        assert (interval.high, interval.high_where) == (None, "beyond_sweep")
        assert interval.low_where == "in_sweep" and interval.low <= curve.break_even
    else:
        assert (interval.low, interval.low_where) == (None, "below_sweep")
        assert interval.high_where == "in_sweep" and interval.high >= curve.break_even
    summary = planner.break_even_summary(curve, interval)
    written = json.loads(json.dumps(records.to_json(summary), allow_nan=False))
    assert records.from_json(BreakEvenSummary, written, "here") == summary
    assert f"{side} the sweep" in render_planner.break_even_verdict(summary)
    assert "**wide**: it reaches outside the sweep" in render_planner.break_even_verdict(summary)


def test_percentile_bounds_follow_numpy_inside_the_sweep_and_are_words_outside_it():
    outcomes = np.array([-math.inf] * 5 + list(range(100, 190)) + [math.inf] * 5, dtype=float)
    inner = breakeven_interval.interval(140.0, outcomes, 0.8)
    finite_stand_ins = np.clip(outcomes, -1e9, 1e9)  # numpy's quantile, where no infinity is a neighbour
    assert [inner.low, inner.high] == pytest.approx(np.quantile(finite_stand_ins, [0.1, 0.9])) == [104.9, 184.1]
    assert inner.low_where == inner.high_where == "in_sweep"
    outer = breakeven_interval.interval(140.0, outcomes, 0.95)
    assert (outer.low, outer.low_where, outer.high, outer.high_where) == (None, "below_sweep", None, "beyond_sweep")
    assert (outer.break_even_share, outer.gpu_always_faster_share, outer.no_break_even_share) == (0.9, 0.05, 0.05)
    # A percentile between a resample without a break-even and one with: the bound takes the wider side.
    edge = breakeven_interval.interval(140.0, outcomes, 0.91)
    assert (edge.low, edge.low_where, edge.high, edge.high_where) == (None, "below_sweep", None, "beyond_sweep")
    # A point outside the resamples' interval widens it: here no break-even at the point (beyond the sweep).
    widened = breakeven_interval.interval(math.inf, np.arange(100.0, 200.0), 0.95)
    assert widened.low == pytest.approx(102.475) and (widened.high, widened.high_where) == (None, "beyond_sweep")
    with pytest.raises(ValueError, match="confidence"):
        breakeven_interval.interval(140.0, outcomes, 1.0)


def test_with_an_assumed_gpu_only_the_cpu_measurements_are_resampled():
    grid = _scattered_grid(0.2, repeats=6)
    models, gpu = _models(grid)
    measured = breakeven_interval.measurements(grid, [], mlp(1, 1, 1))
    fits = breakeven_interval.resampled_fits(measured, models, 50, seed=3)
    assert models[gpu].source == "assumed" and breakeven_interval.resampled_devices(models) == ("cpu",)
    assert fits[("gpu", False)].shape == fits[("cpu", False)].shape == (50, 5)
    assert np.all(fits[("gpu", False)] == costmodel.coefficients(models["gpu"]))
    assert len({tuple(row) for row in fits[("cpu", False)]}) > 10
    measured_gpu = grid + _scattered_grid(0.2, repeats=6, seed=1, model=GPU_TRUE, device="cuda")
    models, gpu = _models(measured_gpu)
    fits = breakeven_interval.resampled_fits(
        breakeven_interval.measurements(measured_gpu, [], mlp(1, 1, 1)), models, 50, 3
    )
    assert breakeven_interval.resampled_devices(models) == ("cpu", "cuda") and gpu == "cuda"
    assert len({tuple(row) for row in fits[("cuda", False)]}) > 10


@pytest.mark.parametrize(
    ("coverage", "expected"),
    [
        (None, "No simulation covers this design (3 grid jobs, 0 profile machine(s)): run `benchmarks/calibration.py"),
        (
            {"coverage": 0.793},
            "In 500 synthetic runs of this design (3 grid jobs at 8% job-to-job spread, and the GPU taken as given), "
            "a 95 % interval held the true break-even 79 % of the time",
        ),
        (
            {"coverage": 0.951, "profile_machines": 4},
            "and a GPU step recorded on 4 machine(s) (20% apart)), a 95 % interval held the true break-even 95 %",
        ),
    ],
)
def test_the_report_quotes_the_harness_coverage_of_its_design_or_says_none_was_simulated(coverage, expected):
    """No coverage is typed into the code (issue 42): the report quotes the harness's record for the design."""
    summary = builders.break_even_summary(break_even_low=4000.0, break_even_high=6000.0)
    curves = tuple(builders.curve_row(value=value, cpu_s=cpu_s) for value, cpu_s in ((1000, 0.2), (10_000, 2.0)))
    found = None if coverage is None else builders.coverage(**coverage)
    table = builders.break_even_table(summary=(summary,), curves=curves, coverage=found)
    cost_model = builders.cost_model_table(
        points=(builders.fit_point(repeats=3), builders.fit_point(source="benchmark", batch_size=32, repeats=1))
    )
    assert expected in render_planner.planner_section(cost_model, table)


def _narrow_and_wide() -> tuple[typing.Any, typing.Any, tuple[typing.Any, ...]]:
    """A narrow resident and a wide streamed break-even (5,000 and 5,500 rows) with their curves."""
    narrow = builders.break_even_summary(break_even_low=4000.0, break_even_high=6000.0)
    wide = builders.break_even_summary(placement="streamed", break_even=5500.0)
    curves = tuple(
        builders.curve_row(placement=placement, value=value, cpu_s=cpu_s)
        for placement in ("resident", "streamed")
        for value, cpu_s in ((1000, 0.2), (10_000, 2.0))
    )
    return narrow, wide, curves


def test_the_report_states_each_interval_flags_the_wide_ones_and_says_an_assumed_gpu_is_not_in_them():
    narrow, wide, curves = _narrow_and_wide()
    table = builders.break_even_table(summary=(narrow, wide), curves=curves)
    text = render_planner.planner_section(builders.cost_model_table(), table)
    assert "GPU faster from about 5,000 rows (95 % interval 4,000–6,000) | 100%" in text
    assert "GPU faster from about 5,500 rows (95 % interval 3,000–9,000; **wide**: its ends 3.0× apart)" in text
    assert "percentile interval of 400 bootstrap refits" in text and "seed 7" in text
    assert "reaching outside the sweep): rows (streamed)." in text
    assert "No GPU was measured" in text and "your assumption (`planner.gpu_assumed`)" in text
    beyond = render_planner.break_even_verdict(BEYOND)
    assert beyond == (
        "a GPU like this does not pay off along rows up to 50,000,000: its step (~102 µs) beats this CPU's "
        "(512 µs), but its start-up and copies add 2 s an epoch (95 % interval beyond the sweep)"
    )
    either = dataclasses.replace(
        BEYOND, break_even_low_where="below_sweep", gpu_always_faster_share=0.12, no_break_even_share=0.88
    )
    assert render_planner.short_verdict(BEYOND) == "none up to 50,000,000 (beyond the sweep)"
    assert render_planner.short_verdict(either) == "none up to 50,000,000 (below–beyond the sweep; wide)"
    assert render_planner.break_even_verdict(either).endswith(
        "(95 % interval below the sweep–beyond the sweep; **wide**: it reaches outside the sweep; the GPU wins over "
        "the whole range in 12% of refits)"
    )
    slower = dataclasses.replace(
        BEYOND, gpu_epoch_s_at_end=100.0, gpu_host_step_s_at_end=1e-3, gpu_device_step_s_at_end=5e-6
    )
    assert render_planner.break_even_verdict(slower).startswith(
        "a GPU like this does not pay off along rows up to 50,000,000: its step costs ~1 ms (its host's work; the "
        "device's own is 5 µs) against this CPU's 512 µs"
    )
    measured = builders.break_even_table(summary=(narrow,), curves=curves[:2], gpu_model_source="fitted")
    text = render_planner.planner_section(builders.cost_model_table(), measured)
    assert "No interval is wide" in text and "alone" not in text


def test_the_first_screen_answers_at_what_size_a_gpu_would_pay_off_and_on_which_gpu():
    """Issue 27: the break-even belongs in REPORT.md's first screen, each axis and placement with its interval."""
    narrow, wide, curves = _narrow_and_wide()
    text = render_planner.answer_lines(builders.break_even_table(summary=(narrow, wide), curves=curves))
    assert text.startswith(
        "**At what size would a GPU pay off?** Modelled on your assumed GPU (`planner.gpu_assumed`: your numbers, "
        "not a measurement), 95 % intervals:\n\n"
    )
    # a short line each: the interval's ends and whether it is wide (how wide, and why: the planner section)
    assert text.endswith("- rows, resident: ~5,000 (4,000–6,000)\n- rows, streamed: ~5,500 (3,000–9,000; wide)")
    # a list after its paragraph, not lines run into it (python-markdown needs the blank line; REPORT.html)
    assert "<li>rows, resident: ~5,000 (4,000–6,000)</li>" in render_html.to_html(text)
    measured = builders.break_even_table(summary=(narrow,), curves=curves[:2], gpu_model_source="fitted")
    assert "on a GPU measured in this run" in render_planner.answer_lines(measured)
    assert render_planner.answer_lines(None) == ""
