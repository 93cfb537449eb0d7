"""A five-term cost model of one training epoch, fitted to measured epoch times.

epoch seconds ≈ steps · (seconds per step) + FLOP / (FLOP/s)
                + bytes of the rows / (bytes/s) + bytes of the state / (state bytes/s)
                + rows · (seconds per row)

Per-step overhead (Python, kernel launches, optimizer bookkeeping); sustained arithmetic; the
traffic of every row (its input gathered, its activations written and read back); the traffic
of the optimizer's state, once per step; and what every row costs beyond its FLOP and bytes (the
loop's small per-row kernels: the loss, index arithmetic; docs/planner.md).

The three-term form (one rate for all bytes, nothing per row) missed the grid's epochs by
13-26 %, by batch size (issue 42): a step's cost grows with its rows faster than their FLOP and
bytes at the one bandwidth say. The rows' traffic runs at a few GB/s on one CPU thread (many
small kernels), the optimizer's state - small, contiguous and in cache - at ten times that; one
rate for both had to be the fast one, and left the rows' cost to the per-step term.

`fit` estimates the rates by non-negative least squares on relative residuals (analyze.nnls);
`assumed` builds a model from quoted rates (e.g. a GPU that was not measured); `break_even`
sweeps one workload axis and reports where the GPU's modelled time drops below the CPU's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from accel_choice.analyze import model_work, theory
from accel_choice.analyze.model_work import CountedWorkload
from accel_choice.analyze.nnls import condition_number, nnls, r_squared
from accel_choice.records.grid import Workload
from accel_choice.records.planner import TERMS, Residual

AXES = ("rows", "features", "hidden", "batch_size")
# Above this condition number of the column-normalised, relatively weighted design, a 1 %
# timing error can move some combination of the coefficients by more than 10×.
MAX_CONDITION = 1e3
# The columns of `design`, in the order of `coefficients` (records.planner.TERMS names the terms).
COUNTS = ("steps", "flop", "bytes", "state_bytes", "rows")
_MIN_POINTS = len(COUNTS) + 1
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
    residuals: tuple[Residual, ...]  # each with its loo_predicted_s (analyze.prediction reads them)


@dataclass(frozen=True)
class CostModel:
    """Rates of one device; a rate of math.inf means the term contributes nothing.

    Not a record: the rates may be infinite, which a record (JSON) cannot hold;
    analyze.planner.model_row writes one as a records.planner.ModelRow.
    """

    device: str
    seconds_per_step: float
    flop_per_s: float
    bytes_per_s: float  # the rows' traffic
    source: str  # "fitted" or "assumed"
    quality: FitQuality | None
    # A counted model's own seconds per step and per FLOP, fitted to its cells with this model's bytes/s
    # (analyze.counted_fit); None: it takes this model's rates (an assumed model, or none measured).
    counted: tuple[float, float] | None = None
    counted_quality: FitQuality | None = None
    state_bytes_per_s: float = math.inf  # the optimizer state's traffic (an assumed model: its bytes_per_s)
    seconds_per_row: float = 0.0  # 0: none (an assumed model quotes none)


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
    """Count the steps, training FLOP, bytes moved and rows of one epoch.

    Steps, training FLOP, bytes moved (the rows', the state's) and rows of one epoch (COUNTS; a
    counted model's: CountedWorkload.work).

    FLOP are those the matrix products execute (theory.forward_backward_flops_counted, which
    FlopCounterMode confirms): the 3× rule also counts the first layer's input gradient, which
    is never computed, and would inflate the fitted FLOP/s - above this CPU's peak, measured.

    Bytes moved, a deliberately simple count of fp32 traffic to and from memory, in two kinds that
    run at different rates (issue 42):
      * `bytes`, every row's: its input and target read once, rows · (features + 1) · 4, and its
        activations written in forward and read back in backward, 2 · theory.activation_bytes(rows,
        widths) (input, hidden output and logits; the input is re-read by the first layer's weight
        gradient);
      * `state_bytes`, the optimizer's: steps · 2 · theory.adam_fp32_bytes(widths), because each Adam
        step reads parameters, gradients and both moments and writes them back (the gradients by backward).
    Caches are ignored, so for small models this over-counts the traffic that reaches DRAM.
    """
    if isinstance(w, CountedWorkload):
        return w.work()
    widths = w.widths
    steps = theory.steps_per_epoch(w.rows, w.batch_size)
    data = w.rows * (w.features + 1) * theory.FP32_BYTES
    activations = 2 * theory.activation_bytes(w.rows, widths)
    return {
        "steps": float(steps),
        "flop": float(theory.forward_backward_flops_counted(w.rows, widths)),
        "bytes": float(data + activations),
        "state_bytes": float(steps * 2 * theory.adam_fp32_bytes(widths)),
        "rows": float(w.rows),
    }


def _model_from_coefficients(
    device: str, coefficients: np.ndarray, source: str, quality: FitQuality | None
) -> CostModel:
    per_step, per_flop, per_byte, per_state_byte, per_row = (float(c) for c in coefficients)
    return CostModel(
        device,
        per_step,
        _rate(per_flop),
        _rate(per_byte),
        source,
        quality,
        state_bytes_per_s=_rate(per_state_byte),
        seconds_per_row=per_row,
    )


def _rate(seconds_per_unit: float) -> float:
    return math.inf if seconds_per_unit <= 0 else 1.0 / seconds_per_unit


def coefficients(model: CostModel, counted: bool = False) -> np.ndarray:
    """Return a model's coefficients in COUNTS order.

    Seconds per step, per FLOP, per byte of the rows, per byte of the state and per row (COUNTS):
    `predict` is the dot product with a workload's `design` row; `counted`: those of a counted model
    (its own per step and per FLOP where fitted, the machine's other rates)."""
    shared = [1.0 / model.bytes_per_s, 1.0 / model.state_bytes_per_s, model.seconds_per_row]
    if counted and model.counted is not None:
        return np.array([*model.counted, *shared])
    return np.array([model.seconds_per_step, 1.0 / model.flop_per_s, *shared])


def design(workloads: Sequence[AnyWorkload]) -> np.ndarray:
    """Return the COUNTS of each workload's epoch, one row each: design @ coefficients(model) predicts them all."""
    rows = [[work(w)[count] for count in COUNTS] for w in workloads]
    return np.array(rows, dtype=float).reshape(len(workloads), len(COUNTS))


def terms(model: CostModel, w: AnyWorkload) -> dict[str, float]:
    """Return the modelled seconds of each term.

    Modelled seconds of each term: overhead_s, compute_s, memory_s, state_s, per_row_s (a counted
    model's at its own rates)."""
    seconds = coefficients(model, isinstance(w, CountedWorkload)) * design([w])[0]
    return dict(zip(("overhead_s", "compute_s", "memory_s", "state_s", "per_row_s"), (float(s) for s in seconds)))


def predict(model: CostModel, w: AnyWorkload) -> float:
    """Modelled seconds of one epoch of `w` on `model.device`."""
    return sum(terms(model, w).values())


def assumed(
    device: str,
    seconds_per_step: float,
    flop_per_s: float,
    bytes_per_s: float,
    seconds_per_row: float = 0.0,
    state_bytes_per_s: float | None = None,
) -> CostModel:
    """Build a model from quoted rates rather than measurements.

    A model from quoted rates rather than measurements (source "assumed"); the optimizer state
    moves at `bytes_per_s` unless `state_bytes_per_s` says otherwise."""
    state = bytes_per_s if state_bytes_per_s is None else state_bytes_per_s
    for name, seconds in (("seconds_per_step", seconds_per_step), ("seconds_per_row", seconds_per_row)):
        if not (seconds >= 0 and math.isfinite(seconds)):
            raise ValueError(f"{name} must be >= 0, got {seconds}")
    for name, rate in (("flop_per_s", flop_per_s), ("bytes_per_s", bytes_per_s), ("state_bytes_per_s", state)):
        if not rate > 0:
            raise ValueError(f"{name} must be > 0 (math.inf drops the term), got {rate}")
    return CostModel(
        device,
        float(seconds_per_step),
        float(flop_per_s),
        float(bytes_per_s),
        "assumed",
        None,
        state_bytes_per_s=float(state),
        seconds_per_row=float(seconds_per_row),
    )


# --- fitting ---------------------------------------------------------------------------


def _weighted_design(design: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    # Dividing each equation by its measured time makes the residuals relative errors,
    # so a 10 ms epoch counts as much as a 100 s one. `seconds` may hold many resamples (rows).
    return design / seconds[..., None]


def leave_one_out(design: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Predict each point by a fit without its workload.

    Each point predicted by a fit without its workload: every point of the same workload
    (the same design row, e.g. a grid cell that is also a benchmark cell) is held out with it."""
    predicted = np.empty(len(seconds))
    for held_out in range(len(seconds)):
        keep = np.any(design != design[held_out], axis=1)
        predicted[held_out] = design[held_out] @ fit_coefficients(design[keep], seconds[keep])
    return predicted


def _validate_points(points: Sequence[tuple[AnyWorkload, float]]) -> None:
    if len(points) < _MIN_POINTS:
        raise ValueError(f"fit needs at least {_MIN_POINTS} measured (workload, seconds) points, got {len(points)}")
    for w, seconds in points:
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"measured epoch time must be a positive finite number of seconds, got {seconds} for {w}")


def fit_coefficients(rows: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Fit only the coefficients of `fit`, without its quality.

    Only the fitted coefficients (`coefficients`' order) of `fit`, without its quality: `rows` is
    `design(workloads)`, `seconds` their measured epochs, or a stack of resampled epochs (resamples ×
    workloads), each refitted on its own (resamples × len(COUNTS))."""
    if np.any(~(seconds > 0)) or not np.all(np.isfinite(seconds)):
        raise ValueError("measured epoch times must be positive finite numbers of seconds")
    return nnls(_weighted_design(rows, seconds))[0]


def fit(device: str, points: Sequence[tuple[AnyWorkload, float]]) -> CostModel:
    """Fit the rates to measured (workload, epoch seconds) points.

    Fit the rates (seconds per step, FLOP/s, the rows' and the state's bytes/s, seconds per row) to
    measured (workload, epoch seconds) points.

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
    loo = leave_one_out(rows, seconds)
    condition = condition_number(weighted)
    identifiable = condition <= MAX_CONDITION
    quality = FitQuality(
        points=len(points),
        r2=r_squared(seconds, predicted),
        median_abs_rel_error=float(np.median(np.abs(relative))),
        max_abs_rel_error=float(np.max(np.abs(relative))),
        loo_median_abs_rel_error=float(np.median(np.abs(loo - seconds) / seconds)),
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
                loo_predicted_s=float(held_out),
            )
            for (w, _), s, p, r, held_out in zip(points, seconds, predicted, relative, loo)
        ),
    )
    return _model_from_coefficients(device, fitted, "fitted", quality)


def _collinearity_warning(condition: float, workloads: Sequence[AnyWorkload]) -> str:
    varied = [axis for axis in AXES if len({getattr(w, axis, None) for w in workloads}) > 1]
    return (
        f"the overhead, compute, memory, state and per-row terms are not separately identifiable from these points "
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
    """Return where the GPU turns from slower to faster along `values`.

    Where the GPU turns from slower to faster along `values` (see `break_even`): the one rule
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
