"""The break-even's bootstrap interval: the cost model refitted to resamples of the timed repeats.

Every fit point rests on jobs - the grid's repeats of one workload on one device, or a benchmark
cell's repeats - each holding the epochs timed inside it. One resample draws the point's jobs with
replacement and each drawn job's epochs with replacement, and takes the median
(`bootstrap.resampled_medians`, the two-level bootstrap; the grid times `planner.epochs_per_job`
epochs per workload in each job, a benchmark cell `timing.epochs_per_job`).

The unit that is independent is the job, not the point: one grid job times every workload of its
device in one process, so a slow minute slows all of them together. The points of one grid job
are therefore drawn together (`Measured.block`: the same repeats and epoch positions for every
workload of the device's grid, as a paired ratio is), and a resample keeps a whole job's drift
instead of averaging it away over workloads that never varied independently. Resampled apart,
the workloads' shared drift cancelled in the refit and the intervals of two clean runs on one
machine missed each other (docs/statistics.md). A benchmark cell's jobs are processes of their
own and are drawn on their own. The cost model of every measured
device is refitted to the resampled medians (`costmodel.fit_coefficients`: the point fit's
non-negative least squares) and every break-even curve recomputed with the refitted models
(`costmodel.crossing`: the point curves' rule). Each fitted curve is also scaled by one of its model's
leave-one-out misses (analyze.prediction). An assumed model (planner.gpu_assumed) has nothing to
resample and stays as it is, its start-up and copies at their point values. A profile's GPU is drawn
for a new machine of its kind (analyze.profile_draws), its start-up and copies with it; the profile
model's own misfit is not drawn: no GPU run has measured it yet.

A resample need not have a break-even: the GPU may be faster over the whole sweep (a break-even, if
any, lies below it) or never turn faster within it (beyond it). The interval is the percentile
interval of the resampled break-evens on the line extended by those two ends: a bound that falls
among such resamples is "below_sweep" or "beyond_sweep", without a number, rather than a number the
sweep never showed; the share of each outcome is reported with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from accel_choice.analyze import bootstrap, costmodel, counted_fit, gpu_costs, gpu_profile, prediction
from accel_choice.analyze.costmodel import AnyWorkload, BreakEvenCurve, CostModel, Crossing
from accel_choice.analyze.gpu_costs import copy_bytes
from accel_choice.analyze.gpu_profile import ProfileModel, Values
from accel_choice.analyze.profile_draws import Draws
from accel_choice.analyze.model_work import CountedWorkload
from accel_choice.records.grid import GridRecord, Workload
from accel_choice.records.training import TrainingCell

Where = Literal["below_sweep", "in_sweep", "beyond_sweep"]
GridKey = tuple[str, int, int, int, int]  # device, rows, features, hidden, batch size


@dataclass(frozen=True)
class Measured:
    """The timed jobs behind one fit point: each job's epochs, in seconds."""

    device: str
    workload: AnyWorkload
    jobs: tuple[tuple[float, ...], ...]
    # Points of one block with the same repeats (`repeats`, in the order of `jobs`) and epoch counts
    # are resampled with the same draws; None: drawn on its own.
    block: str | None = None
    repeats: tuple[int, ...] = ()


@dataclass(frozen=True)
class Interval:
    """A break-even's percentile interval at `confidence` over `resamples` refits.

    low/high are None exactly when their `*_where` is not "in_sweep"; the three shares (of the
    resamples with a break-even inside the sweep, with the GPU faster over the whole sweep, and with
    no break-even within it) add up to 1.
    """

    low: float | None
    high: float | None
    low_where: Where
    high_where: Where
    break_even_share: float
    gpu_always_faster_share: float
    no_break_even_share: float
    confidence: float
    resamples: int


# --- the measurements behind the fit points ------------------------------------------------------


def grid_groups(grid: Sequence[GridRecord]) -> dict[GridKey, list[GridRecord]]:
    """Return the finite repeats of every (device, workload) of the grid, in sorted order: one fit point each."""
    groups: dict[GridKey, list[GridRecord]] = {}
    for r in grid:
        if r.finite:
            groups.setdefault((r.device, r.rows, r.features, r.hidden, r.batch_size), []).append(r)
    return dict(sorted(groups.items()))


def is_fit_cell(cell: TrainingCell) -> bool:
    """Say whether a benchmark cell is one the cost model fits: fast path, fp32, CPU on the host or GPU resident."""
    return (
        cell.loader == "fastpath"
        and cell.precision == "fp32"
        and cell.placement in ("host", "resident")
        and not cell.compiled  # the grid is eager
    )


def measurements(
    grid: Sequence[GridRecord], train_table: Sequence[TrainingCell], workload: Callable[[int], AnyWorkload]
) -> list[Measured]:
    """Return the jobs behind every fit point.

    The jobs behind every fit point (analyze.planner's grid_points and benchmark_points); a
    benchmark cell's epoch is `workload(batch_size)`, the textbook MLP's or a counted model's."""
    measured = []
    for (device, n, d, h, b), group in grid_groups(grid).items():
        ordered = sorted(group, key=lambda r: r.repeat)
        measured.append(
            Measured(
                device=device,
                workload=Workload(rows=n, features=d, hidden=h, batch_size=b),
                jobs=tuple(tuple(r.epoch_s_each) for r in ordered),
                block=f"grid {device}",
                repeats=tuple(r.repeat for r in ordered),
            )
        )
    measured += [
        Measured(
            device=cell.device,
            workload=workload(cell.batch_size),
            jobs=tuple(tuple(job) for job in cell.epoch_s_jobs),
            block=f"training {' '.join(cell.jobs)}",  # the cells one set of jobs timed (a CPU job: every B)
        )
        for cell in train_table
        if is_fit_cell(cell)
    ]
    return measured


# --- resampling and refitting ----------------------------------------------------------------------


def resampled_fits(
    measured: Sequence[Measured], models: Mapping[str, CostModel], resamples: int, seed: int
) -> dict[str, np.ndarray]:
    """Return every model's coefficients in each resample.

    Every model's coefficients (costmodel.coefficients) in each resample, a (resamples × 3) array
    keyed by (device, counted): refitted to the resampled medians for a fitted model, its own in every
    row for an assumed one; `counted` True holds a counted model's own rates (the grid's where it has none).

    Each point is resampled with its own generator, seeded from `seed` (numpy's SeedSequence), so the
    same measurements and seed give the same resamples.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    seeds = [int(s) for s in np.random.SeedSequence(seed).generate_state(max(len(measured), 1))]
    medians = [
        bootstrap.resampled_medians(m.jobs, resamples, s) for m, s in zip(measured, shared_seeds(measured, seeds))
    ]
    fits = {}
    for device, model in models.items():
        if model.source != "fitted":
            for counted in (False, True):
                fits[(device, counted)] = np.tile(costmodel.coefficients(model, counted), (resamples, 1))
            continue
        grid = [i for i, m in enumerate(measured) if m.device == device and not isinstance(m.workload, CountedWorkload)]
        if not grid:
            raise ValueError(f"the fitted model of {device} has no measurements to resample")
        rows = costmodel.design([measured[i].workload for i in grid])
        seconds = np.column_stack([medians[i] for i in grid])  # resamples × points
        fits[(device, False)] = costmodel.fit_coefficients(rows, seconds)
        # A counted model's own rates, refitted with each resample's bytes/s (analyze.counted_fit).
        mine = [i for i, m in enumerate(measured) if m.device == device and isinstance(m.workload, CountedWorkload)]
        fits[(device, True)] = (
            counted_fit.counted_coefficients(
                costmodel.design([measured[i].workload for i in mine]),
                np.column_stack([medians[i] for i in mine]),
                fits[(device, False)],
            )
            if mine
            else fits[(device, False)]
        )
    return fits


def shared_seeds(measured: Sequence[Measured], seeds: Sequence[int]) -> list[int]:
    """Return each point's resampling seed.

    Each point's resampling seed: its own, or the first seed of the points it is drawn with (one
    block, the same repeats and epoch counts). bootstrap.resampled_medians draws its jobs and epoch
    positions from the seed and the shape alone, so one seed is one set of draws."""
    first: dict[tuple[object, ...], int] = {}
    chosen = []
    for m, own in zip(measured, seeds):
        if m.block is None:
            chosen.append(own)
            continue
        key = (m.block, m.repeats, tuple(len(job) for job in m.jobs))
        chosen.append(first.setdefault(key, own))
    return chosen


def resampled_devices(models: Mapping[str, CostModel]) -> tuple[str, ...]:
    """Return the devices whose measurements the interval resamples: those with a fitted model."""
    return tuple(device for device, model in models.items() if model.source == "fitted")


def position(found: Crossing | BreakEvenCurve) -> float:
    """Return a curve's break-even on the extended line.

    A curve's break-even on the extended line: -inf when the GPU is faster over the whole sweep,
    +inf when it never turns from slower to faster within it (never faster, or only at the small end)."""
    if found.break_even is not None:
        return found.break_even
    return -math.inf if found.gpu_always_faster else math.inf


def curve_outcomes(
    curve: BreakEvenCurve, cpu: np.ndarray, gpu: np.ndarray, misfit: tuple[np.ndarray, np.ndarray] | None = None
) -> np.ndarray:
    """Return `curve`'s break-even under each row of resampled CPU and GPU coefficients.

    `curve`'s break-even (as `position`) under each row of resampled CPU and GPU coefficients;
    the GPU keeps the curve's extra seconds (start-up, copies). `misfit`: each resample's factor on the CPU's
    and on the GPU's whole curve (analyze.prediction.misfit_factors), or none."""
    rows = costmodel.design([replace(curve.base, **{curve.axis: v}) for v in curve.values])
    extra = np.asarray(curve.gpu_extra_s, dtype=float) if curve.gpu_extra_s else np.zeros(len(curve.values))
    cpu_factor, gpu_factor = misfit if misfit is not None else (np.ones(len(cpu)), np.ones(len(cpu)))
    return crossings(curve, cpu, (gpu @ rows.T) * gpu_factor[:, None] + extra, cpu_factor)


def crossings(
    curve: BreakEvenCurve, cpu: np.ndarray, gpu_s: np.ndarray, cpu_factor: np.ndarray | None = None
) -> np.ndarray:
    """Return `curve`'s break-even under each row of resampled CPU coefficients.

    `curve`'s break-even (as `position`) under each row of resampled CPU coefficients, against the
    GPU's epoch seconds of the same row (resamples × the curve's values, its extras included);
    `cpu_factor`: each row's misfit factor on the CPU's whole curve (analyze.prediction)."""
    rows = costmodel.design([replace(curve.base, **{curve.axis: v}) for v in curve.values])
    cpu_s = cpu @ rows.T if cpu_factor is None else (cpu @ rows.T) * cpu_factor[:, None]
    return np.array([position(costmodel.crossing(curve.values, c, g)) for c, g in zip(cpu_s, gpu_s)])


def profile_seconds(
    curve: BreakEvenCurve, gpu: ProfileModel, drawn: Values, epochs: int, fallback_bytes_per_s: float
) -> np.ndarray:
    """Return the profile GPU's epoch seconds along `curve` in each draw.

    The profile GPU's epoch seconds along `curve` in each draw (draws × values), its start-up and
    copies drawn too (the copy at `fallback_bytes_per_s` where the profile has none)."""
    rate = drawn.copy_bytes_per_s if drawn.copy_bytes_per_s is not None else fallback_bytes_per_s
    columns = []
    for value in curve.values:
        w = replace(curve.base, **{curve.axis: value})
        extra = gpu_costs.extra_seconds(curve.placement or "resident", drawn.startup_s, copy_bytes(w) / rate, epochs)
        columns.append(gpu.epoch_draws(w, drawn) + extra)
    return np.column_stack(columns)


# --- the interval -----------------------------------------------------------------------------------


def _quantile(ordered: np.ndarray, q: float, *, lower: bool) -> float:
    """numpy's default (linear) quantile of sorted values; next to an infinite end, the neighbour
    that widens the interval (the smaller for a lower bound, the larger for an upper one)."""
    h = (len(ordered) - 1) * q
    below, above = float(ordered[math.floor(h)]), float(ordered[math.ceil(h)])
    if below == above:
        return below
    if math.isfinite(below) and math.isfinite(above):
        return below + (h - math.floor(h)) * (above - below)
    return below if lower else above


def _bound(x: float) -> tuple[float | None, Where]:
    if math.isfinite(x):
        return x, "in_sweep"
    return None, "below_sweep" if x < 0 else "beyond_sweep"


def interval(point: float, outcomes: np.ndarray, confidence: float) -> Interval:
    """Return the percentile interval of the break-even `outcomes`.

    The percentile interval of `outcomes` (break-evens as `position`), widened where needed to
    hold `point` (with few distinct resamples a percentile can miss it, as in bootstrap.estimate_from)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if len(outcomes) == 0 or np.isnan(outcomes).any():
        raise ValueError("interval needs at least one resampled break-even and no NaN")
    ordered = np.sort(np.asarray(outcomes, dtype=float))
    tail = (1 - confidence) / 2
    low = min(_quantile(ordered, tail, lower=True), point)
    high = max(_quantile(ordered, 1 - tail, lower=False), point)
    (low_value, low_where), (high_value, high_where) = _bound(low), _bound(high)
    n = len(ordered)
    return Interval(
        low=low_value,
        high=high_value,
        low_where=low_where,
        high_where=high_where,
        break_even_share=int(np.isfinite(ordered).sum()) / n,
        gpu_always_faster_share=int((ordered == -math.inf).sum()) / n,
        no_break_even_share=int((ordered == math.inf).sum()) / n,
        confidence=confidence,
        resamples=n,
    )


def _streams(seed: int, count: int) -> list[np.random.SeedSequence]:
    """`count` independent seed sequences for the draws beside the resamples: SeedSequence((seed, k)),
    apart from SeedSequence(seed) (the resamples') and from a neighbouring seed's."""
    return [np.random.SeedSequence((seed, k)) for k in range(1, count + 1)]


def break_even_intervals(
    curves: Sequence[BreakEvenCurve],
    measured: Sequence[Measured],
    models: Mapping[str, CostModel],
    gpu: str | ProfileModel,
    *,
    confidence: float,
    resamples: int,
    seed: int,
    epochs: int = 1,
    fallback_bytes_per_s: float = 8e9,
) -> list[Interval]:
    """Return the interval of every curve's break-even.

    The interval of every curve's break-even: models["cpu"] against models[gpu] (measured or assumed),
    or against a profile's GPU, whose figures are drawn with the CPU's resamples (analyze.profile_draws:
    a new machine of the kind), its start-up and copies with them (`epochs`: the job they are spread
    over; `fallback_bytes_per_s`: the copy's rate where the profile has none)."""
    fits = resampled_fits(measured, models, resamples, seed)
    # The misfit and profile draws' own streams: spawned from the seed, apart from the resamples' (SeedSequence(seed)).
    profile_seed, cpu_misfit_seed, gpu_misfit_seed = (int(s.generate_state(1)[0]) for s in _streams(seed, 3))
    drawn = None
    if isinstance(gpu, ProfileModel):
        draws = Draws(resamples, profile_seed)
        drawn = gpu_profile.values(gpu.profile, gpu.chosen, draws)
    intervals = []
    for c in curves:
        counted = isinstance(c.base, CountedWorkload)
        # Each fitted model's misfit, drawn from its leave-one-out residuals: the curve misses its points.
        cpu_factor = prediction.misfit_factors(models["cpu"], resamples, cpu_misfit_seed, counted)
        if drawn is not None:  # a profile's GPU
            gpu_s = profile_seconds(c, gpu, drawn, epochs, fallback_bytes_per_s)
            outcomes = crossings(c, fits[("cpu", counted)], gpu_s, cpu_factor)
        else:
            gpu_factor = prediction.misfit_factors(models[str(gpu)], resamples, gpu_misfit_seed, counted)
            outcomes = curve_outcomes(c, fits[("cpu", counted)], fits[(str(gpu), counted)], (cpu_factor, gpu_factor))
        intervals.append(interval(position(c), outcomes, confidence))
    return intervals
