"""The planner's residual table: every fit point against its model, with the model's prediction interval
(analyze.fit_residuals), the points outside their intervals named first (issue 42)."""

from __future__ import annotations

import math

from accel_choice.records.model import TEXTBOOK
from accel_choice.records.planner import CostModelTable, FitPoint, Residual
from accel_choice.render.formatting import ms, table


def workload_text(r: Residual) -> str:
    """Render the point's epoch: "8,192 rows, 32 → 48 → 1, B = 512", or a counted model's "`m`, 8,192 rows, B = 512"."""
    if r.model == TEXTBOOK:
        return f"{r.rows:,} rows, {r.features} → {r.hidden} → 1, B = {r.batch_size:,}"
    return f"`{r.model}`, {r.rows:,} rows, B = {r.batch_size:,}"


def _order(r: Residual) -> tuple[bool, float]:
    """Outside first, each group by the size of its miss (a log ratio: 2× over and 2× under weigh alike)."""
    return (bool(r.inside), -abs(math.log(max(r.predicted_s, 1e-12) / r.measured_s)))


def _row(r: Residual, point: FitPoint | None) -> tuple[str, ...]:
    loo = r.loo_rel_error
    flags = [] if point is None else (["noisy"] if point.noisy else []) + (["busy"] if point.busy_repeats else [])
    return (
        r.device,
        r.source or "—",
        workload_text(r),
        ms(r.measured_s) + (f" ({', '.join(flags)})" if flags else ""),
        ms(r.predicted_s),
        f"{r.rel_error:+.1%}",
        "—" if loo is None else f"{loo:+.1%}",
        f"{ms(r.interval_low_s)}–{ms(r.interval_high_s)}",
        "yes" if r.inside else "**no**",
    )


def residual_section(cost_model: CostModelTable | None) -> str:
    """Render the residuals table of the planner's fit points.

    Each point's measured and modelled epoch, the error, the leave-one-out error and the prediction
    interval, the points outside their intervals first and named in the opening lines. Empty where
    the table holds no residuals (no fitted model)."""
    if cost_model is None or not cost_model.residuals:
        return ""
    points = {(p.device, p.source, p.model, p.rows, p.features, p.hidden, p.batch_size): p for p in cost_model.points}
    residuals = sorted(cost_model.residuals, key=_order)
    outside = [r for r in residuals if not r.inside]
    level = f"{100 * cost_model.interval_confidence:g} %"
    opening = (
        f"**{len(outside)} of {len(residuals)} measured points lie outside** the model's {level} prediction "
        "interval: "
        + "; ".join(f"{r.device} {r.source} {workload_text(r)} ({r.rel_error:+.1%})" for r in outside)
        + ". Read the break-evens with that misfit in mind."
        if outside
        else f"All {len(residuals)} measured points lie inside the model's {level} prediction intervals."
    )
    misses = sorted(abs(r.loo_rel_error) for r in residuals if r.loo_rel_error is not None)
    loo = (
        f" Predicted by fits without their workload, the points miss by {100 * misses[len(misses) // 2]:.1f} % "
        f"(median |error|), {100 * misses[-1]:.1f} % at most."
        if misses
        else ""
    )
    rows = [
        _row(r, points.get((r.device, r.source, r.model, r.rows, r.features, r.hidden, r.batch_size)))
        for r in residuals
    ]
    return (
        "### The cost model against its points\n\n"
        + opening
        + loo
        + f" Each interval is where a measured epoch of that workload should fall at {level}: the predictions "
        f"of {cost_model.interval_resamples:,} bootstrap refits (the timed repeats resampled, as for the "
        "break-evens), each times a leave-one-out miss of another workload of the same fit (the model's "
        "misfit, `analyze.prediction`). Error: (modelled − measured) / measured; leave-one-out: the same for a "
        "fit without the point's workload.\n\n"
        + table(
            (
                "device",
                "source",
                "workload",
                "measured ms",
                "modelled ms",
                "error",
                "leave-one-out error",
                f"{level} interval ms",
                "inside",
            ),
            rows,
        )
    )
