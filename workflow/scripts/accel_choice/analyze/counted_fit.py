"""A counted model's own rates in the cost model: its seconds per step and per FLOP, fitted to its
measured cells with the grid's bandwidth (docs/own-model.md#your-model-in-the-planner).

The grid fits one device's rates to textbook MLPs. Another model runs at other rates: more modules
per step (norms, dropout, residual adds) cost more per step, and a convolution does fewer FLOP per
second than a matrix product. Fitted to the MLPs' rates, the worked examples' cells came out
30-57 % slower than modelled. So a counted model keeps the grid's rates of the rows' and the
state's bytes and its seconds per row (memory traffic and the loop's per-row work are the
machine's) and gets its own per-step and per-FLOP seconds, by the same non-negative least squares
on relative errors, from its own cells (costmodel.nnls with the kept terms' share as an offset):

    epoch seconds ≈ steps · s_model + FLOP · f_model + (the grid's seconds of the bytes and rows)

Its cells vary in batch size only, so FLOP and rows per epoch are the same in each: the fit tells
per step from per row (its per-FLOP seconds carry whatever its rows cost beyond the grid's per-row
seconds), which is what the break-even curves along rows and batch size need. The MLP fit is
left exactly as it was (the textbook's numbers do not move), and the counted rates' quality - its
leave-one-out error above all - is reported on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from accel_choice.analyze import costmodel, model_work
from accel_choice.analyze.costmodel import CostModel, FitQuality
from accel_choice.analyze.model_work import CountedWorkload
from accel_choice.records.planner import Residual

TERMS = ("overhead", "compute")


def counted_coefficients(rows: np.ndarray, seconds: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Return the counted model's coefficients per resample.

    The counted model's coefficients (costmodel.coefficients' order) per resample: `rows` the counted
    cells' design (points × terms), `seconds` their epochs (points, or resamples × points), `grid` the
    grid's coefficients (terms, or resamples × terms), whose all but the first two (per byte of the
    rows and of the state, per row) the counted model keeps."""
    kept = np.asarray(grid)[..., 2:]
    target = 1 - (kept[..., None, :] * rows[:, 2:]).sum(axis=-1) / seconds
    fitted, _ = costmodel.nnls(rows[:, :2] / seconds[..., None], target)
    return np.concatenate([fitted, np.broadcast_to(kept, (*fitted.shape[:-1], kept.shape[-1]))], axis=-1)


def fit_counted(model: CostModel, points: Sequence[tuple[CountedWorkload, float]]) -> CostModel:
    """`model` with a counted model's own rates fitted to `points`, and their quality."""
    if not points:
        return model
    rows = costmodel.design([w for w, _ in points])
    seconds = np.array([float(s) for _, s in points])
    if np.any(~(seconds > 0)) or not np.all(np.isfinite(seconds)):
        raise ValueError("measured epoch times must be positive finite numbers of seconds")
    grid = costmodel.coefficients(model)
    fitted = counted_coefficients(rows, seconds, grid)
    predicted = rows @ fitted
    relative = (predicted - seconds) / seconds
    loo = np.empty(len(points))
    for held_out in range(len(points)):
        keep = np.arange(len(points)) != held_out
        alone = counted_coefficients(rows[keep], seconds[keep], grid) if keep.any() else grid
        loo[held_out] = rows[held_out] @ alone
    condition = costmodel.condition_number(rows[:, :2] / seconds[:, None])
    sizes = len({w.batch_size for w, _ in points})
    identifiable = sizes > 1 and condition <= costmodel.MAX_CONDITION
    quality = FitQuality(
        points=len(points),
        r2=costmodel.r_squared(seconds, predicted),
        median_abs_rel_error=float(np.median(np.abs(relative))),
        max_abs_rel_error=float(np.max(np.abs(relative))),
        loo_median_abs_rel_error=float(np.median(np.abs(loo - seconds) / seconds)),
        terms_used=tuple(name for name, c in zip(TERMS, fitted[:2]) if c > 0),
        condition_number=condition,
        identifiable=identifiable,
        warning=None
        if identifiable
        else (
            f"its cells hold {sizes} batch size{'s' if sizes != 1 else ''} (condition number {condition:.3g}): "
            "its seconds per step and per FLOP cannot be told apart, so its curves along rows and batch size "
            "rest on an arbitrary split; time more batch sizes (timing.batch_sizes)"
        ),
        residuals=tuple(
            Residual(
                **model_work.identity(w),
                measured_s=float(s),
                predicted_s=float(p),
                rel_error=float(r),
                device=model.device,
                loo_predicted_s=float(held_out),
            )
            for (w, _), s, p, r, held_out in zip(points, seconds, predicted, relative, loo)
        ),
    )
    return replace(model, counted=(float(fitted[0]), float(fitted[1])), counted_quality=quality)
