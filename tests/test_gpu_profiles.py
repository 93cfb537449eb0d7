"""Device profiles in the planner (issue 42): the shipped H200 profile, its figures' draws, the GPU modelled
from a profile (host against device work), the planner's curves and intervals on it, and the coverage
the report quotes, checked through the same functions."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_choice import records
from accel_choice.analyze import breakeven_interval, gpu_profile, planner, planner_calibration
from accel_choice.analyze.profile_draws import Draws, figure
from accel_choice.io import gpu_profiles
from accel_choice.records import UserInputError
from accel_choice.records.device_profile import (
    BOOTSTRAPPED,
    DATASHEET,
    PREDICTED,
    DeviceProfile,
    Rate,
    StepFigure,
    completeness,
)
from accel_choice.records.grid import Workload

BASE = Workload(rows=8192, features=32, hidden=48, batch_size=512)
CPU = planner_calibration.TRUE_CPU  # this VM's fit in a default run


def ladder_profile(
    fixed: float, per_op: float, *, device_type: str = "cuda", floor: float | None = None
) -> DeviceProfile:
    """A measured profile whose ladder steps cost exactly `fixed` + `per_op` · ops, one machine, three rounds."""

    def step(ops: int) -> StepFigure:
        seconds = fixed + per_op * ops
        fig = figure("measured", "s", {"host": [seconds * 0.99, seconds, seconds * 1.01]}, "a test")
        return StepFigure(model=f"ladder {ops}", batch_size=8, ops=ops, kernels=ops // 2, seconds=fig)

    base = planner_calibration.synthetic_profile([1e-3, 1.2e-3])
    return dataclasses.replace(
        base,
        device_type=device_type,
        command="accel-choice profile --device cuda --out x.json",
        ladder=tuple(step(ops) for ops in (20, 40, 80, 160)),
        kernel_floor_s=None if floor is None else figure("measured", "s", {"host": [floor]}, "a test"),
    )


# ------------------------------------------------------------------------------- the shipped profile


def test_the_shipped_h200_profile_is_what_its_script_writes_and_every_figure_names_its_source(repo, tmp_path):
    done = subprocess.run(
        [sys.executable, str(repo / "config/gpu_profiles/make_h200.py"), str(tmp_path / "h200.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "h200.json").read_text() == (repo / "config/gpu_profiles/h200.json").read_text()
    profile = gpu_profiles.read(repo / "config/gpu_profiles/h200.json")
    assert profile.command is None and completeness(profile) == (0, 3, 4)  # nothing measured by the command yet
    step = next(s for s in profile.reference_steps if s.batch_size == 512)
    assert step.seconds.source == "recorded" and [m.machine for m in step.seconds.machines] == ["A", "B", "D"]
    assert step.seconds.estimate.method == PREDICTED and "docs/gpu.md" in step.seconds.reference
    assert all(r.rate.source == "datasheet" and "datasheet" in r.rate.reference for r in profile.matmul)


def test_auto_takes_the_most_completely_measured_profile_and_a_bad_name_says_what_is_allowed(tmp_path, repo):
    shipped = tmp_path / "profiles"
    shipped.mkdir()
    (shipped / "h200.json").write_text((repo / "config/gpu_profiles/h200.json").read_text())
    measured = ladder_profile(2e-4, 5e-6)
    (shipped / "z-measured.json").write_text(json.dumps(records.to_json(measured)))
    assert gpu_profiles.resolve("auto", shipped).name == "z-measured.json"
    assert gpu_profiles.resolve("h200", shipped).name == "h200.json"
    assert gpu_profiles.label(shipped / "h200.json", shipped) == "h200"
    with pytest.raises(
        UserInputError, match=r"config key planner.gpu_profile: 'h900' .* allowed: auto, h200, z-measured"
    ):
        gpu_profiles.resolve("h900", shipped)
    (shipped / "broken.json").write_text('{"schema": "device-profile", "schema_version": 1, "name": 3}')
    with pytest.raises(records.RecordError, match="broken.json"):
        gpu_profiles.read(shipped / "broken.json")


# ------------------------------------------------------------------------------- a figure's draws


def test_a_figure_of_several_machines_predicts_a_new_machine_as_often_as_its_level_says():
    """The promise behind every profile interval, checked by simulation through `figure`: machines of one
    kind log-normally 20 % apart; the interval from four of them holds a fifth 95 % of the time."""
    rng = np.random.default_rng(1)
    held, trials = 0, 400
    for i in range(trials):
        machines = rng.lognormal(0.0, 0.2, 5)
        fig = figure("recorded", "s", {f"m{j}": [v] for j, v in enumerate(machines[:4])}, "a test")
        held += fig.estimate.low <= machines[4] <= fig.estimate.high
    assert 0.92 <= held / trials <= 0.98


def test_datasheet_one_machine_and_many_machines_each_have_their_method():
    sheet = figure("datasheet", "FLOP/s", {"NVIDIA": [67e12]}, "the datasheet")
    assert sheet.estimate.method == DATASHEET and sheet.estimate.low == sheet.estimate.high == 67e12
    one = figure("measured", "s", {"host": [1.0, 1.1, 0.9, 1.05]}, "x")
    assert one.estimate.method == BOOTSTRAPPED and 0.9 <= one.estimate.low <= one.estimate.high <= 1.1
    with pytest.raises(ValueError, match="one quoted value"):
        figure("datasheet", "s", {"a": [1.0], "b": [2.0]}, "x")


def test_joint_draws_keep_a_slow_machine_slow_in_every_figure():
    draws = Draws(500, seed=3)
    step = figure("recorded", "s", {"A": [1.0], "B": [1.4], "C": [1.1]}, "x")
    copy = figure("recorded", "B/s", {"A": [20e9], "B": [28e9], "C": [22e9]}, "x")
    a, b = draws.of(step), draws.of(copy)
    # a slow machine: more seconds a step and fewer bytes a second, in the same draw
    assert np.corrcoef(np.log(a), np.log(b))[0, 1] < -0.999
    assert draws.of(None) is None


# ------------------------------------------------------------------------------- the GPU from a profile


def test_the_ladder_gives_the_host_a_fixed_cost_and_a_cost_per_op():
    gpu = gpu_profile.model(ladder_profile(2e-4, 5e-6), "mine", "highest", ops=42, kernels=18)
    host, device = gpu.step_parts(BASE)
    assert host[0] == pytest.approx(2e-4 + 5e-6 * 42, rel=1e-6)
    assert device[0] < 1e-6  # a tiny MLP's FLOP and bytes on a datasheet's H200
    steps = math.ceil(BASE.rows / BASE.batch_size)
    assert gpu.epoch_s(BASE) == pytest.approx(steps * host[0])


def test_without_a_ladder_the_textbook_step_scales_with_ops():
    gpu = gpu_profile.model(planner_calibration.synthetic_profile([1e-3, 1.2e-3]), "s", "highest", ops=84, kernels=36)
    host, _ = gpu.step_parts(BASE)
    assert host[0] == pytest.approx(2 * 1.1e-3)  # the median of the machines, at twice the textbook's 42 ops


def test_a_gpu_overlaps_host_and_device_and_a_cpu_profile_adds_them():
    big = dataclasses.replace(BASE, features=8192, hidden=8192)
    gpu = gpu_profile.model(ladder_profile(2e-4, 5e-6, floor=3e-6), "g", "highest", ops=42, kernels=18)
    cpu = gpu_profile.model(ladder_profile(2e-4, 5e-6, device_type="cpu"), "c", "highest", ops=42, kernels=18)
    host, device = gpu.step_parts(big)
    steps = math.ceil(big.rows / big.batch_size)
    assert gpu.epoch_s(big) == pytest.approx(steps * max(host[0], device[0]))
    assert device[0] > 18 * 3e-6  # the kernel floor and the FLOP of 8192 × 8192 layers
    assert cpu.epoch_s(big) == pytest.approx(steps * (host[0] + cpu.step_parts(big)[1][0]))


def test_tf32_is_read_only_where_the_matmul_precision_allows_it():
    profile = planner_calibration.synthetic_profile([1e-3])
    tf32 = Rate(size=None, precision="tf32", rate=figure("datasheet", "FLOP/s", {"v": [494.5e12]}, "x"))
    profile = dataclasses.replace(profile, matmul=(*profile.matmul, tf32))
    assert gpu_profile.choose(profile, "highest").flop.estimate.point == 67e12
    assert gpu_profile.choose(profile, "high").precision == "tf32"


def test_the_planner_finds_no_break_even_along_rows_for_a_host_bound_gpu_and_says_why():
    gpu = gpu_profile.model(planner_calibration.synthetic_profile([1e-3, 1.1e-3, 1.3e-3]), "s", "highest", 42, 18)
    curves = planner.break_even_curves(CPU, gpu, BASE, {"rows": (1000, 10**8), "hidden": (8, 8192)}, 8e9, 0.0, 10)
    intervals = breakeven_interval.break_even_intervals(
        curves, [], {"cpu": CPU}, gpu, confidence=0.95, resamples=200, seed=1, epochs=10, fallback_bytes_per_s=8e9
    )
    by = {(c.axis, c.placement): planner.break_even_summary(c, i, gpu) for c, i in zip(curves, intervals)}
    rows = by[("rows", "resident")]
    assert rows.gpu_never_faster and rows.break_even_high_where == "beyond_sweep"
    assert rows.gpu_host_step_s_at_end == pytest.approx(1.1e-3) and rows.gpu_device_step_s_at_end < 1e-4
    hidden = by[("hidden", "resident")]
    low = hidden.break_even_low if hidden.break_even_low is not None else 0.0  # None: below the sweep
    high = hidden.break_even_high if hidden.break_even_high is not None else math.inf
    assert hidden.break_even is not None and low <= hidden.break_even <= high
    # the interval carries the machines' spread: wider than the CPU's noise alone (an exact CPU here: none)
    assert high > 1.2 * max(low, hidden.sweep_min)


# ------------------------------------------------------------------------------- coverage, from the harness


def test_the_shipped_coverage_table_agrees_with_the_harness_it_came_from(repo):
    """Every figure in workflow/resources/planner_coverage.json was printed by benchmarks/calibration.py
    --planner: a fresh, smaller simulation of one design lands within its binomial bounds."""
    table = json.loads((repo / "workflow/resources/planner_coverage.json").read_text())
    assert table["designs"], "run benchmarks/calibration.py --planner to write the table"
    found = planner_calibration.lookup(repo / "workflow/resources/planner_coverage.json", 3, 3, 0.95)
    assert found is not None and found.command.startswith("benchmarks/calibration.py --planner")
    fresh = planner_calibration.coverage(planner_calibration.Design(grid_jobs=3, machines=3), runs=80, seed=99)
    spread = 2.6 * math.sqrt(found.coverage * (1 - found.coverage) / fresh.runs) + 1 / fresh.runs
    assert abs(fresh.coverage - found.coverage) <= spread
    assert planner_calibration.lookup(repo / "workflow/resources/planner_coverage.json", 3, 7, 0.95) is None


def test_an_interval_from_one_machine_cannot_promise_much_for_another():
    one = planner_calibration.coverage(planner_calibration.Design(grid_jobs=3, machines=1), runs=60, seed=5)
    assert one.coverage < 0.5


def test_the_harness_writes_the_table_the_report_reads(repo, tmp_path):
    out = tmp_path / "coverage.json"
    done = subprocess.run(
        [sys.executable, str(repo / "benchmarks/calibration.py"), "--planner", "--jobs", "3", "--machines", "0",
         "--runs", "8", "--resamples", "40", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "| grid jobs | profile machines | coverage of a 95 % interval | runs |"
    assert planner_calibration.lookup(out, 3, 0, 0.95).runs == 8


def test_planner_calibration_profile_is_a_valid_record():
    profile = planner_calibration.synthetic_profile([1e-3, 2e-3])
    assert records.from_json(DeviceProfile, json.loads(json.dumps(records.to_json(profile))), "x") == profile


def test_a_profile_path_that_is_no_json_file_is_refused(tmp_path):
    with pytest.raises(UserInputError, match="neither a shipped profile nor a profile file"):
        gpu_profiles.resolve(str(tmp_path / "nothing.json"))
    assert Path(gpu_profiles.SHIPPED).is_dir()
