"""A GPU cell's plain-loop reference and launch floor, aggregated and said (issue 42 item 5): its step over the
same step replayed as a CUDA graph, paired by job with its interval (analyze.gpu_checks), kept in the cell
(records.launch) and its table row, and rendered in the report's GPU section (render.gpu_checks)."""

from __future__ import annotations

import dataclasses

import pytest
from builders_training import cell_launch_checks, estimate, launch_checks, training_cell, training_record

from accel_choice import records
from accel_choice.analyze import accuracy, gpu_checks
from accel_choice.analyze.aggregate import aggregate_training
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import TrainingTable
from accel_choice.render import gpu_checks as words
from accel_choice.render import noise

STEPS = 4  # the builders' default: 2,048 rows at B = 512
B = 512


def _resident(repeat: int, epoch_s: float, floor_s: float | None, **launch) -> object:
    """A CUDA job's eager fp32 resident record whose step is epoch_s / STEPS and whose floor is floor_s."""
    checks = launch_checks("cuda", epoch_s / STEPS, launch_floor_step_s=floor_s, **launch)
    return training_record(
        device="cuda", placement="resident", batch_size=B, repeat=repeat, epoch_s=epoch_s, launch=checks
    )


def test_a_cell_is_its_step_over_its_launch_floor_paired_by_job():
    # Each job's step is 5x its own floor while the jobs drift 2x: the paired ratio is 5 with no spread.
    group = [_resident(r, e, e / STEPS / 5) for r, e in enumerate((0.010, 0.020, 0.015))]
    (cell,) = aggregate_training(group, group[0].samples)
    launch = cell.launch
    assert launch.status == "replayed" and launch.launch_floor_s_jobs == tuple(
        e / STEPS / 5 for e in (0.01, 0.02, 0.015)
    )
    assert launch.step_over_launch_floor.point == pytest.approx(5.0)
    assert launch.step_over_launch_floor.high - launch.step_over_launch_floor.low == pytest.approx(0, abs=1e-9)
    assert launch.launch_bound == "host"
    assert cell.epoch_s_over_reference.point == pytest.approx(1.0)  # the builder's plain loop: its epoch
    assert launch.step_kernels_jobs == (14, 14, 14) and launch.counted == "cuda_kernels"


def test_a_ratio_with_spread_has_its_t_interval_and_one_job_is_a_single_measurement():
    spread = [_resident(r, 0.01, 0.01 / STEPS / f) for r, f in enumerate((1.5, 2.0, 2.5))]
    (cell,) = aggregate_training(spread, spread[0].samples)
    ratio = cell.launch.step_over_launch_floor
    assert ratio.low < 2.0 < ratio.high and ratio.jobs == 3 and cell.launch.launch_bound == "unsettled"
    (alone,) = aggregate_training(spread[:1], spread[0].samples)
    one = alone.launch.step_over_launch_floor
    assert (one.point, one.low, one.high, one.jobs) == (pytest.approx(1.5), one.point, one.point, 1)
    assert alone.launch.launch_bound == "device"
    text = words.gpu_checks_section([alone])
    assert "1.50× (one job, a single measurement: no interval) its launch floor" in text


@pytest.mark.parametrize(
    "low, high, said", [(2.0, 3.0, "host"), (1.1, 1.9, "device"), (1.5, 2.5, "unsettled"), (0.9, 1.0, "device")]
)
def test_the_host_bounds_a_step_whose_whole_interval_is_at_least_twice_its_floor(low, high, said):
    ratio = Estimate(point=(low + high) / 2, low=low, high=high, level=0.95, method="m", jobs=3)
    assert gpu_checks.launch_bound(ratio) == said


def test_a_cell_whose_capture_failed_in_a_job_has_no_floor():
    group = [_resident(0, 0.01, 0.0005), _resident(1, 0.01, None, status="capture_failed"), _resident(2, 0.01, 0.0005)]
    (cell,) = aggregate_training(group, group[0].samples)
    assert cell.launch.status == "capture_failed"
    assert (cell.launch.launch_floor_s_jobs, cell.launch.step_over_launch_floor, cell.launch.launch_bound) == (
        None,
    ) * 3
    assert len(cell.launch.eager_step_s_jobs) == 3  # the eager step was timed all the same
    assert "could not be captured as a CUDA graph, so there is no launch floor" in words.gpu_checks_section([cell])


def test_the_cpu_twin_cell_keeps_its_eager_step_and_ops_without_a_floor():
    group = [training_record(placement="resident", repeat=r) for r in range(3)]
    (cell,) = aggregate_training(group, group[0].samples)
    assert (cell.launch.status, cell.launch.counted, cell.launch.step_over_launch_floor) == (
        "no_cuda_graphs",
        "cpu_ops",
        None,
    )
    text = words.gpu_checks_section([cell])
    assert "| ops per step |" in text and "this device has no CUDA graphs, so there is no launch floor" in text


def test_other_cells_have_no_launch_checks_and_the_cell_refuses_them_out_of_place():
    streamed = training_cell(device="cuda", placement="streamed")
    resident = training_cell(device="cuda", placement="resident")
    assert streamed.launch is None and resident.launch is not None
    with pytest.raises(ValueError, match="exactly for an eager fp32 resident cell"):
        dataclasses.replace(streamed, launch=resident.launch)
    with pytest.raises(ValueError, match="exactly for an eager fp32 resident cell"):
        dataclasses.replace(resident, launch=None)
    with pytest.raises(ValueError, match="exactly for an eager fp32 resident cell"):  # one value per repeat
        dataclasses.replace(resident, launch=cell_launch_checks("cuda", 0.001, jobs=2))
    with pytest.raises(ValueError, match="exactly when every job replayed"):
        cell_launch_checks("cuda", 0.001, launch_bound=None)
    with pytest.raises(ValueError, match="different numbers of jobs"):
        cell_launch_checks("cuda", 0.001, eager_step_s_jobs=(0.001,))


def test_a_table_with_launch_checks_round_trips_and_flattens_to_one_set_of_columns():
    resident = training_cell(device="cuda", placement="resident")
    streamed = training_cell(device="cuda", placement="streamed")
    rows = [resident.table_row(), streamed.table_row()]
    assert list(rows[0]) == list(rows[1])
    assert rows[0]["step_over_launch_floor"] == 4.0 and rows[0]["step_over_launch_floor_ci_low"] == 3.6
    assert rows[0]["launch_floor_status"] == "replayed" and rows[0]["launch_bound"] == "host"
    assert rows[1]["launch_floor_status"] is None and rows[1]["step_over_launch_floor"] is None
    assert TrainingTable.VERSION == 13  # cells name their jobs and their rehearsal; a GPU table holds the CPU beside it
    again = records.from_json(type(resident), records.to_json(resident), "a cell")
    assert again == resident


def test_the_gpu_section_says_the_reference_and_the_launch_floor_from_numbers():
    resident = training_cell(
        device="cuda",
        placement="resident",
        batch_size=B,
        epoch_s=0.02,
        reference_s_jobs=(0.018, 0.02, 0.022),
        epoch_s_over_reference=estimate(1.03, 0.98, 1.08),
    )
    text = words.gpu_checks_section([resident, training_cell(device="cuda", placement="streamed")])
    assert text.startswith("### Checked against a plain loop and the launch floor")
    assert "| 512 | 20.0 | 19.4 | 1.03× (0.98–1.08) | within ±10% |" in text
    assert "| kernels per step |" in text and "| 4.00× (3.60–4.40) | 14 |" in text
    assert (
        "- B = 512: this GPU step takes 4.00× (3.60–4.40) its launch floor (the same step replayed as a CUDA graph). "
        "The host bounds it" in text
    )
    assert words.gpu_checks_section([training_cell(device="cuda", placement="streamed")]) == ""


def test_the_cpu_accuracy_check_leaves_the_gpu_cells_to_the_gpu_section():
    cpu = training_cell(reference_s_jobs=(0.01, 0.01, 0.01), epoch_s_over_reference=estimate(1.0, 0.97, 1.03))
    gpu = training_cell(
        device="cuda",
        placement="resident",
        reference_s_jobs=(0.01, 0.01, 0.01),
        epoch_s_over_reference=estimate(1.5, 1.4, 1.6),
    )
    assert accuracy.cpu_checked([cpu, gpu]) == [cpu]
    assert [g.cells for g in accuracy.by_threads([cpu, gpu], cores=2)] == [1]
    assert "1.50×" not in noise.accuracy_section([cpu, gpu], cores=2)
    assert noise.accuracy_section([gpu], cores=2) == ""
