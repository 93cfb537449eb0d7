"""Does a break-even's "95 % interval" hold the true break-even? Synthetic runs through the planner's own functions.

One synthetic run is a CPU grid timed in `grid_jobs` jobs (each job at its own speed, log-normal spread
`sigma_job`; each epoch its own, `sigma_epoch`) around a true cost model, and a GPU profile whose host
step was recorded on `machines` machines of one kind (each its own speed, spread `sigma_machine`). The
run's CPU model is fitted, its break-even curve drawn against the profile's GPU, and the interval made,
all with the planner's functions (costmodel.fit, planner.break_even_curves,
breakeven_interval.break_even_intervals). The truth is the break-even of the true CPU against a new
machine of that kind: the GPU a user would rent. Its share of runs inside the interval is the
coverage; benchmarks/calibration.py --planner writes the table the report quotes
(workflow/resources/planner_coverage.json), and `lookup` finds this run's design in it.

The true CPU is this VM's five-term fit in a default run (2026-12-06, TRUE_CPU); the
true GPU is the shipped H200 profile (config/gpu_profiles/h200.json): its recorded median step and its
datasheet rates; `machines` 0 is a GPU assumed exactly (planner.gpu_assumed): nothing about it is drawn.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from accel_choice.analyze import breakeven_interval, costmodel, gpu_profile, planner
from accel_choice.analyze.breakeven_interval import Measured, position
from accel_choice.analyze.costmodel import CostModel
from accel_choice.analyze.profile_draws import figure
from accel_choice.records.breakeven import Coverage
from accel_choice.io import gpu_profiles
from accel_choice.records.device_profile import DeviceProfile, StepFigure
from accel_choice.records.grid import Workload, grid_workloads

# The default run's five-term CPU fit on this VM, 2026-12-06 (docs/planner.md): 374 µs a step, 69.8 GFLOP/s,
# 4.47 GB/s for the rows' bytes, 83.4 GB/s for the optimizer state's, 0.21 µs a row.
TRUE_CPU = costmodel.assumed("cpu", 374e-6, 69.8e9, 4.47e9, seconds_per_row=0.21e-6, state_bytes_per_s=83.4e9)
GRID = grid_workloads([2048, 8192], [32, 256], [48, 256], [32, 512])
BASE = Workload(rows=8192, features=32, hidden=48, batch_size=512)
AXIS, SWEEP = "hidden", (8, 8192)
EPOCHS = 10
COPY_BYTES_PER_S = 8e9  # report.bandwidth_gb_s: the profile in the simulation has no copy
RESOURCE = Path(__file__).resolve().parents[3] / "resources" / "planner_coverage.json"


@dataclass(frozen=True)
class Design:
    """The shape of a synthetic planner run."""

    grid_jobs: int
    machines: int  # the profile's machines behind the host step; 0: an assumed GPU
    sigma_job: float = 0.08
    sigma_epoch: float = 0.03
    sigma_machine: float = 0.2
    epochs_per_job: int = 2


@functools.cache
def shipped() -> DeviceProfile:
    """Return the shipped H200 profile (config/gpu_profiles/h200.json): the synthetic GPU's kind, rates and start-up."""
    return gpu_profiles.read(gpu_profiles.shipped()["h200"])


def textbook_step() -> StepFigure:
    """Return the shipped profile's textbook step at the curves' batch size: its seconds, ops and kernels."""
    return next(s for s in shipped().reference_steps if s.batch_size == BASE.batch_size)


def true_gpu_step_s() -> float:
    """Return the synthetic machines' median step: the shipped profile's textbook step at the curves' batch size."""
    return textbook_step().seconds.estimate.point


def synthetic_profile(steps: list[float]) -> DeviceProfile:
    """Build the synthetic machines' profile from the shipped H200 profile.

    The shipped H200 profile with its textbook step at the curves' batch size recorded as `steps`, one value
    per synthetic machine, and nothing else of its host (no copy: the curves copy at COPY_BYTES_PER_S)."""
    seconds = figure("recorded", "s", {f"m{i}": [s] for i, s in enumerate(steps)}, "a synthetic run")
    step = dataclasses.replace(textbook_step(), seconds=seconds)
    return dataclasses.replace(
        shipped(), name="synthetic GPU", machines=len(steps), note="analyze.planner_calibration",
        reference_steps=(step,), copies=(),
    )  # fmt: skip


def _exact_gpu() -> CostModel:
    """The GPU taken as given (planner.gpu_assumed): the shipped profile's median step and datasheet rates."""
    model = _gpu([true_gpu_step_s()])
    flop, bandwidth = model.chosen.flop.estimate.point, model.chosen.bandwidth.estimate.point
    return costmodel.assumed("gpu", true_gpu_step_s(), flop, bandwidth)


def _gpu(steps: list[float]) -> gpu_profile.ProfileModel:
    return gpu_profile.model(
        synthetic_profile(steps), "synthetic.json", "highest", textbook_step().ops, textbook_step().kernels
    )


def _truth(gpu: gpu_profile.ProfileModel | CostModel) -> float:
    """The true break-even (as breakeven_interval.position) of the true CPU against `gpu`."""
    (curve,) = _curves(TRUE_CPU, gpu)
    return position(curve)


def _curves(cpu: CostModel, gpu: gpu_profile.ProfileModel | CostModel) -> list[costmodel.BreakEvenCurve]:
    curves = planner.break_even_curves(cpu, gpu, BASE, {AXIS: SWEEP}, COPY_BYTES_PER_S, 0.0, EPOCHS)
    return [c for c in curves if c.placement == "resident"]


def simulate_run(rng: np.random.Generator, design: Design, resamples: int, seed: int) -> bool:
    """Simulate one synthetic run: say whether its interval holds the true break-even for a new machine."""
    effects = rng.lognormal(0.0, design.sigma_job, size=design.grid_jobs)
    measured = []
    for w in GRID:
        true_s = costmodel.predict(TRUE_CPU, w)
        jobs = tuple(tuple(true_s * e * rng.lognormal(0.0, design.sigma_epoch, design.epochs_per_job)) for e in effects)
        measured.append(Measured("cpu", w, jobs, block="grid cpu", repeats=tuple(range(design.grid_jobs))))
    points = [(m.workload, float(np.median([v for job in m.jobs for v in job]))) for m in measured]
    cpu = costmodel.fit("cpu", points)
    if design.machines:
        steps = list(true_gpu_step_s() * rng.lognormal(0.0, design.sigma_machine, design.machines))
        gpu: gpu_profile.ProfileModel | CostModel = _gpu(steps)
        truth = _truth(_gpu([true_gpu_step_s() * rng.lognormal(0.0, design.sigma_machine)]))
        models, side = {"cpu": cpu}, gpu
    else:
        gpu = _exact_gpu()
        truth = _truth(gpu)
        models, side = {"cpu": cpu, "gpu": gpu}, "gpu"  # type: ignore[assignment]
    (curve,) = _curves(cpu, gpu)
    (found,) = breakeven_interval.break_even_intervals(
        [curve], measured, models, side, confidence=0.95, resamples=resamples, seed=seed,
        epochs=EPOCHS, fallback_bytes_per_s=COPY_BYTES_PER_S,
    )  # fmt: skip
    low = -math.inf if found.low is None and found.low_where == "below_sweep" else found.low
    high = math.inf if found.high is None and found.high_where == "beyond_sweep" else found.high
    low = math.inf if low is None else low  # a lower bound beyond the sweep
    high = -math.inf if high is None else high  # an upper bound below it
    return low <= truth <= high


def coverage(design: Design, runs: int, resamples: int = 200, seed: int = 20261206) -> Coverage:
    """Return the share of `runs` synthetic runs of `design` whose interval held the true break-even."""
    rng = np.random.default_rng((seed, 0))  # the synthetic timings: apart from run i's resamples (seed + i)
    held = sum(simulate_run(rng, design, resamples, seed + i) for i in range(runs))
    return Coverage(
        level=0.95,
        coverage=held / runs,
        runs=runs,
        grid_jobs=design.grid_jobs,
        profile_machines=design.machines,
        resamples=resamples,
        sigma_job=design.sigma_job,
        sigma_machine=design.sigma_machine,
        seed=seed,
        command=f"benchmarks/calibration.py --planner --runs {runs} --resamples {resamples} --seed {seed}",
    )


def lookup(path: str | os.PathLike[str], grid_jobs: int, machines: int, level: float) -> Coverage | None:
    """This design's simulated coverage from the harness's table (None: not simulated for it)."""
    from accel_choice import records

    table = json.loads(Path(path).read_text(encoding="utf-8"))
    found = [records.from_json(Coverage, row, str(path)) for row in table["designs"]]
    matches = [c for c in found if (c.grid_jobs, c.profile_machines, c.level) == (grid_jobs, machines, level)]
    return matches[0] if matches else None


def designs(grid_jobs: list[int], machines: list[int]) -> list[Design]:
    """Return every combination, in order."""
    return [Design(grid_jobs=j, machines=m) for j in grid_jobs for m in machines]
