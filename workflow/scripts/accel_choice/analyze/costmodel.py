"""A three-term cost model of one training epoch, fitted to measured epoch times.

epoch seconds ≈ steps · (seconds per step) + FLOP / (FLOP/s) + bytes moved / (bytes/s)

The first term is per-step overhead (Python, kernel launches, optimizer bookkeeping), the
second sustained arithmetic and the third memory traffic. `fit` estimates the three rates
from measured epochs by non-negative least squares on relative residuals; `assumed` builds
a model from quoted rates (e.g. a GPU that was not measured); `break_even` sweeps one
workload axis and reports where the GPU's modelled time drops below the CPU's.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from accel_choice.analyze import model_work, theory
from accel_choice.analyze.model_work import CountedWorkload
from accel_choice.records.grid import Workload
from accel_choice.records.planner import TERMS, Residual

AXES = ("rows", "features", "hidden", "batch_size")
# Above this condition number of the column-normalised, relatively weighted design, a 1 %
# timing error can move some combination of the coefficients by more than 10×.
MAX_CONDITION = 1e3
# Subsets with fewer terms win when their relative residual sum of squares is no worse than
# this (absolute, per point): it stops a noise-free fit keeping a 1e-20 coefficient.
_TIE_RSS_PER_POINT = 1e-12
_MIN_POINTS = 4
# An epoch the model describes: the textbook MLP of the grid, or a counted model (analyze.model_work).
AnyWorkload = Workload | CountedWorkload


@dataclass(frozen=True)
class FitQuality:
    """How well a fitted model reproduces its points; `loo_median_abs_rel_error` is the honest one."""

    points: int
    r2: float | None  # None: every measured time equal (R² undefined)
    median_abs_rel_error: float
    max_abs_rel_error: float
    loo_median_abs_rel_error: float  # each point predicted by a fit without its workload
    terms_used: tuple[str, ...]
    condition_number: float  # of the column-normalised, relatively weighted design; math.inf when singular
    identifiable: bool
    warning: str | None
    residuals: tuple[Residual, ...]


@dataclass(frozen=True)
class CostModel:
    """Rates of one device; a rate of math.inf means the term contributes nothing.

    Not a record: the rates may be infinite, which a record (JSON) cannot hold;
    analyze.planner.model_row writes one as a records.planner.ModelRow.
    """

    device: str
    seconds_per_step: float
    flop_per_s: float
    bytes_per_s: float
    source: str  # "fitted" or "assumed"
    quality: FitQuality | None
    # A counted model's own seconds per step and per FLOP, fitted to its cells with this model's bytes/s
    # (analyze.counted_fit); None: it takes this model's rates (an assumed model, or none measured).
    counted: tuple[float, float] | None = None
    counted_quality: FitQuality | None = None


@dataclass(frozen=True)
class BreakEvenCurve:
    """Modelled CPU and GPU epoch seconds along one axis grown from `base` (break_even's result)."""

    axis: str
    base: AnyWorkload
    values: tuple[int, ...]
    cpu_s: tuple[float, ...]
    gpu_s: tuple[float, ...]
    ratio: tuple[float, ...]  # cpu_s / gpu_s; math.inf where the GPU's modelled time is zero
    gpu_faster: tuple[bool, ...]
    break_even: float | None  # where the GPU turns from slower to faster, interpolated
    break_even_grid: int | None  # the first grid value past that crossing
    gpu_always_faster: bool
    placement: str | None = None  # the GPU's data placement, for the planner's curves (resident, streamed)
    gpu_extra_s: tuple[float, ...] = ()  # the GPU-only seconds in gpu_s (start-up, copies); () for none


@dataclass(frozen=True)
class Crossing:
    """Where a GPU curve crosses a CPU curve (see `crossing`)."""

    gpu_faster: tuple[bool, ...]
    ratio: tuple[float, ...]  # cpu / gpu; math.inf where the GPU's time is zero
    break_even: float | None
    break_even_grid: int | None
    gpu_always_faster: bool


def work(w: AnyWorkload) -> dict[str, float]:
    """Steps, training FLOP and bytes moved in one epoch (a counted model's: CountedWorkload.work).

    FLOP are those the matrix products execute (theory.forward_backward_flops_counted, which
    FlopCounterMode confirms): the 3× rule also counts the first layer's input gradient, which
    is never computed, and would inflate the fitted FLOP/s - above this CPU's peak, measured.

    Bytes moved, a deliberately simple count of fp32 traffic to and from memory:
      * input and target read once: rows · (features + 1) · 4;
      * activations written in forward and read back in backward:
        2 · theory.activation_bytes(rows, widths) (input, hidden output and logits of every row;
        the input is re-read by the first layer's weight gradient);
      * the optimizer: steps · 2 · theory.adam_fp32_bytes(widths), because each Adam step reads
        parameters, gradients and both moments and writes them back (the gradients by backward).
    Caches are ignored, so for small models this over-counts the traffic that reaches DRAM.
    """
    if isinstance(w, CountedWorkload):
        return w.work()
    widths = w.widths
    steps = theory.steps_per_epoch(w.rows, w.batch_size)
    data = w.rows * (w.features + 1) * theory.FP32_BYTES
    activations = 2 * theory.activation_bytes(w.rows, widths)
    optimizer = steps * 2 * theory.adam_fp32_bytes(widths)
    return {
        "steps": float(steps),
        "flop": float(theory.forward_backward_flops_counted(w.rows, widths)),
        "bytes": float(data + activations + optimizer),
    }


def _features(w: AnyWorkload) -> np.ndarray:
    counts = work(w)
    return np.array([counts["steps"], counts["flop"], counts["bytes"]], dtype=float)


def _model_from_coefficients(
    device: str, coefficients: np.ndarray, source: str, quality: FitQuality | None
) -> CostModel:
    per_step, per_flop, per_byte = (float(c) for c in coefficients)
    return CostModel(device, per_step, _rate(per_flop), _rate(per_byte), source, quality)


def _rate(seconds_per_unit: float) -> float:
    return math.inf if seconds_per_unit <= 0 else 1.0 / seconds_per_unit


def coefficients(model: CostModel, counted: bool = False) -> np.ndarray:
    """Seconds per step, per FLOP and per byte: `predict` is the dot product with a workload's `design`
    row; `counted`: those of a counted model (its own per step and per FLOP where fitted)."""
    if counted and model.counted is not None:
        return np.array([*model.counted, 1.0 / model.bytes_per_s])
    return np.array([model.seconds_per_step, 1.0 / model.flop_per_s, 1.0 / model.bytes_per_s])


def design(workloads: Sequence[AnyWorkload]) -> np.ndarray:
    """Steps, FLOP and bytes of each workload's epoch, one row each: design @ coefficients(model) predicts them all."""
    return np.array([_features(w) for w in workloads], dtype=float).reshape(len(workloads), 3)


def terms(model: CostModel, w: AnyWorkload) -> dict[str, float]:
    """Modelled seconds of each term: overhead_s, compute_s, memory_s (a counted model's at its own rates)."""
    counts = work(w)
    per_step, per_flop, per_byte = coefficients(model, isinstance(w, CountedWorkload))
    return {
        "overhead_s": counts["steps"] * per_step,
        "compute_s": counts["flop"] * per_flop,
        "memory_s": counts["bytes"] * per_byte,
    }


def predict(model: CostModel, w: AnyWorkload) -> float:
    """Modelled seconds of one epoch of `w` on `model.device`."""
    return sum(terms(model, w).values())


def assumed(device: str, seconds_per_step: float, flop_per_s: float, bytes_per_s: float) -> CostModel:
    """A model from quoted rates rather than measurements (source "assumed")."""
    if seconds_per_step < 0 or math.isnan(seconds_per_step):
        raise ValueError(f"seconds_per_step must be >= 0, got {seconds_per_step}")
    for name, rate in (("flop_per_s", flop_per_s), ("bytes_per_s", bytes_per_s)):
        if not rate > 0:
            raise ValueError(f"{name} must be > 0 (math.inf drops the term), got {rate}")
    return CostModel(device, float(seconds_per_step), float(flop_per_s), float(bytes_per_s), "assumed", None)


# --- fitting ---------------------------------------------------------------------------


def _weighted_design(design: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    # Dividing each equation by its measured time makes the residuals relative errors,
    # so a 10 ms epoch counts as much as a 100 s one. `seconds` may hold many resamples (rows).
    return design / seconds[..., None]


def nnls(weighted: np.ndarray, target: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative least squares of weighted · c ≈ target (default 1) by trying every subset of terms;
    `weighted` is (points × terms), or a stack of them (one per bootstrap resample), solved together,
    `target` (points) or a stack of the same shape.

    The NNLS optimum is the unconstrained fit on its own set of positive terms, so the best
    feasible subset fit is the exact optimum; with three terms there are only seven subsets (and no
    term at all, the one feasible fit where a target is negative).
    Of the subsets within a tie tolerance of the best, the one with the fewest terms wins.
    """
    n_points, n_terms = weighted.shape[-2:]
    goal = np.ones(weighted.shape[:-1]) if target is None else np.broadcast_to(target, weighted.shape[:-1])
    scale = np.linalg.norm(weighted, axis=-2)  # unit columns: FLOP and step counts differ by 1e9
    fits, rsss, sizes = [np.zeros((*weighted.shape[:-2], n_terms))], [np.sum(goal**2, axis=-1)], [0]
    for size in range(1, n_terms + 1):
        for subset in itertools.combinations(range(n_terms), size):
            columns = list(subset)
            unit = weighted[..., columns] / scale[..., None, columns]
            solution = (np.linalg.pinv(unit) @ goal[..., None])[..., 0] / scale[..., columns]
            coefficients = np.zeros((*weighted.shape[:-2], n_terms))
            coefficients[..., columns] = solution
            rss = np.sum(((weighted @ coefficients[..., None])[..., 0] - goal) ** 2, axis=-1)
            fits.append(coefficients)
            rsss.append(np.where(np.any(solution < 0, axis=-1), np.inf, rss))  # infeasible: never chosen
            sizes.append(size)
    rss = np.stack(rsss)
    best = rss.min(axis=0)  # no term at all is always feasible
    near = rss <= best * (1 + 1e-9) + _TIE_RSS_PER_POINT * n_points
    size = np.array(sizes).reshape((-1,) + (1,) * best.ndim)
    fewest = np.where(near, size, n_terms + 1).min(axis=0)
    chosen = np.where(near & (size == fewest), rss, np.inf).argmin(axis=0)
    picked = np.take_along_axis(np.stack(fits), chosen[None, ..., None], axis=0)[0]
    return picked, np.take_along_axis(rss, chosen[None], axis=0)[0]


def condition_number(weighted: np.ndarray) -> float:
    """Of the column-normalised design; math.inf where a column is zero or the columns are dependent."""
    norms = np.linalg.norm(weighted, axis=0)
    if np.any(norms == 0):
        return math.inf
    singular = np.linalg.svd(weighted / norms, compute_uv=False)
    return math.inf if singular[-1] == 0 else float(singular[0] / singular[-1])


def _leave_one_out_errors(design: np.ndarray, seconds: np.ndarray) -> list[float]:
    """Each point predicted by a fit without its workload: every point of the same workload
    (the same design row, e.g. a grid cell that is also a benchmark cell) is held out with it."""
    errors = []
    workloads = [tuple(row) for row in design]
    for held_out in range(len(seconds)):
        keep = np.array([w != workloads[held_out] for w in workloads])
        coefficients, _ = nnls(_weighted_design(design[keep], seconds[keep]))
        predicted = float(design[held_out] @ coefficients)
        errors.append(abs(predicted - seconds[held_out]) / seconds[held_out])
    return errors


def r_squared(measured: np.ndarray, predicted: np.ndarray) -> float | None:
    total = float(np.sum((measured - measured.mean()) ** 2))
    if total == 0:
        return None  # all times equal: R² is undefined
    return 1.0 - float(np.sum((measured - predicted) ** 2)) / total


def _validate_points(points: Sequence[tuple[AnyWorkload, float]]) -> None:
    if len(points) < _MIN_POINTS:
        raise ValueError(f"fit needs at least {_MIN_POINTS} measured (workload, seconds) points, got {len(points)}")
    for w, seconds in points:
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"measured epoch time must be a positive finite number of seconds, got {seconds} for {w}")


def fit_coefficients(rows: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Only the fitted coefficients (seconds per step, per FLOP, per byte) of `fit`, without its quality:
    `rows` is `design(workloads)`, `seconds` their measured epochs, or a stack of resampled epochs
    (resamples × workloads), each refitted on its own (resamples × 3)."""
    if np.any(~(seconds > 0)) or not np.all(np.isfinite(seconds)):
        raise ValueError("measured epoch times must be positive finite numbers of seconds")
    return nnls(_weighted_design(rows, seconds))[0]


def fit(device: str, points: Sequence[tuple[AnyWorkload, float]]) -> CostModel:
    """Fit seconds_per_step, FLOP/s and bytes/s to measured (workload, epoch seconds) points.

    Non-negative least squares on relative residuals; a term the fit drops gets rate
    math.inf. quality.loo_median_abs_rel_error (leave-one-out) is the honest
    out-of-sample error; quality.identifiable is False, with a warning, when the
    points cannot tell the terms apart (e.g. only batch size varies: FLOP per epoch is
    then constant and bytes moved is a linear function of the step count).
    """
    _validate_points(points)
    rows = design([w for w, _ in points])
    seconds = np.array([float(s) for _, s in points])
    weighted = _weighted_design(rows, seconds)
    fitted, _ = nnls(weighted)
    predicted = rows @ fitted
    relative = (predicted - seconds) / seconds
    condition = condition_number(weighted)
    identifiable = condition <= MAX_CONDITION
    quality = FitQuality(
        points=len(points),
        r2=r_squared(seconds, predicted),
        median_abs_rel_error=float(np.median(np.abs(relative))),
        max_abs_rel_error=float(np.max(np.abs(relative))),
        loo_median_abs_rel_error=float(statistics.median(_leave_one_out_errors(rows, seconds))),
        terms_used=tuple(name for name, c in zip(TERMS, fitted) if c > 0),
        condition_number=condition,
        identifiable=identifiable,
        warning=None if identifiable else _collinearity_warning(condition, [w for w, _ in points]),
        residuals=tuple(
            Residual(
                **model_work.identity(w),
                measured_s=float(s),
                predicted_s=float(p),
                rel_error=float(r),
                device=device,
            )
            for (w, _), s, p, r in zip(points, seconds, predicted, relative)
        ),
    )
    return _model_from_coefficients(device, fitted, "fitted", quality)


def _collinearity_warning(condition: float, workloads: Sequence[AnyWorkload]) -> str:
    varied = [axis for axis in AXES if len({getattr(w, axis, None) for w in workloads}) > 1]
    return (
        f"overhead, compute and memory terms are not separately identifiable from these points "
        f"(condition number {condition:.3g} > {MAX_CONDITION:g}; varied: {', '.join(varied) or 'nothing'}): "
        "the fit reproduces the measured points but its split into terms, and any extrapolation "
        "along an axis that was not varied, is unreliable"
    )


# --- break-even ------------------------------------------------------------------------


def break_even(
    cpu: CostModel,
    gpu: CostModel | Callable[[AnyWorkload], float],  # a cost model, or an epoch's seconds (gpu_profile)
    base: AnyWorkload,
    axis: str,
    values: Sequence[int],
    gpu_extra_s: Callable[[AnyWorkload], float] | None = None,
) -> BreakEvenCurve:
    """Modelled CPU and GPU epoch seconds along one axis, and where the GPU starts to win.

    `break_even` is the value where the GPU turns from slower to faster, interpolated linearly in log(value)
    against log(cpu/gpu) between the neighbouring grid values, and `break_even_grid` the first grid value where it
    is faster; both are None when the GPU is never faster, or is faster from the first value (then
    `gpu_always_faster` is True if it stays faster). gpu_extra_s adds GPU-only seconds per epoch (copies).
    """
    _validate_axis(axis, values, model_work.AXES if isinstance(base, CountedWorkload) else AXES)
    workloads = [replace(base, **{axis: int(v)}) for v in values]
    extra = tuple(gpu_extra_s(w) for w in workloads) if gpu_extra_s else (0.0,) * len(workloads)
    cpu_s = tuple(predict(cpu, w) for w in workloads)
    gpu_s = tuple((gpu(w) if callable(gpu) else predict(gpu, w)) + e for w, e in zip(workloads, extra))
    found = crossing(values, cpu_s, gpu_s)
    return BreakEvenCurve(
        axis=axis,
        base=base,
        values=tuple(int(v) for v in values),
        cpu_s=cpu_s,
        gpu_s=gpu_s,
        ratio=found.ratio,
        gpu_faster=found.gpu_faster,
        break_even=found.break_even,
        break_even_grid=found.break_even_grid,
        gpu_always_faster=found.gpu_always_faster,
        gpu_extra_s=extra if gpu_extra_s else (),
    )


def crossing(values: Sequence[int], cpu_s: Sequence[float], gpu_s: Sequence[float]) -> Crossing:
    """Where the GPU turns from slower to faster along `values` (see `break_even`): the one rule
    for the break-even curves and for their bootstrap resamples."""
    cpu, gpu = [float(c) for c in cpu_s], [float(g) for g in gpu_s]
    ratio = tuple(c / g if g > 0 else math.inf for c, g in zip(cpu, gpu))
    gpu_faster = tuple(g < c for c, g in zip(cpu, gpu))
    index = next((i for i in range(1, len(values)) if gpu_faster[i] and not gpu_faster[i - 1]), None)
    return Crossing(
        gpu_faster=gpu_faster,
        ratio=ratio,
        break_even=None if index is None else _log_crossing(values, ratio, index),
        break_even_grid=None if index is None else int(values[index]),
        gpu_always_faster=all(gpu_faster),
    )


def _validate_axis(axis: str, values: Sequence[int], axes: Sequence[str]) -> None:
    if axis not in axes:
        raise ValueError(f"axis must be one of {', '.join(axes)}, got {axis!r}")
    if not values or any(v <= 0 for v in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"values must be positive and strictly increasing, got {list(values)}")


def _log_crossing(values: Sequence[int], ratio: Sequence[float], index: int) -> float:
    before, after = ratio[index - 1], ratio[index]
    if not (before > 0 and math.isfinite(after)):
        return float(values[index])  # a zero or infinite modelled time leaves nothing to interpolate
    x0, x1 = math.log(values[index - 1]), math.log(values[index])
    r0, r1 = math.log(before), math.log(after)
    return math.exp(x0 - r0 * (x1 - x0) / (r1 - r0))
