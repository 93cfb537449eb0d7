"""The cost model's misfit, and a prediction interval that carries it (issue 42).

A fitted model misses its own points for two reasons: its rates rest on a few timed repeats (the
bootstrap refits of analyze.breakeven_interval hold that spread), and its form leaves out whatever
the four terms do not describe (the misfit). The misfit is measured out of sample: each point
predicted by a fit without its workload (`FitQuality.residuals[i].loo_predicted_s`), as a log
ratio, log(measured / predicted), so that measured ≈ predicted · exp(residual).

- `misfit_log_residuals(model)`: those log residuals, one per fitted point; a bootstrap draws from
  them to carry the misfit into a break-even (`misfit_factors` draws them for it).
- `prediction_interval`: one point's interval for a measured epoch of its workload: the refits'
  predictions, each times the exp of a residual drawn from the other workloads' misfit.

Both draw a residual's size with a random sign (`symmetric_draws`): how far another workload's
epoch lay from a fit without it says how far this one may lie, not to which side. Kept with their
signs, the draws of a fit with few points lean one way: the three cells of a counted model, each
predicted by a line through the other two, all miss to the side the curve bends to, and an
interval made of them left its own, well-fitted, cell outside.

Numbers only (numpy): analyze.fit_residuals makes the records of them.
"""

from __future__ import annotations

import numpy as np

from accel_choice.analyze.costmodel import CostModel

# A prediction is floored here before its logarithm: a fit that predicts no time at all misses by a
# factor of 10^12 at most, not by infinity.
_FLOOR_S = 1e-12


def log_residuals(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """log(measured / predicted): positive where the model predicts too little."""
    return np.log(np.asarray(measured, dtype=float) / np.maximum(np.asarray(predicted, dtype=float), _FLOOR_S))


def misfit_log_residuals(model: CostModel, counted: bool = False) -> np.ndarray:
    """Return the model's leave-one-out log residuals.

    The model's leave-one-out log residuals log(measured / predicted by a fit without the point's
    workload), one per point it was fitted to, in the fit's order; `counted`: those of a counted
    model's own cells (analyze.counted_fit), the grid's where it has none. An assumed model has no
    points: an empty array (its misfit is unknown, not zero: say so where it is used).

    How to widen a break-even with it: in every bootstrap resample b, draw one residual r_b
    uniformly from this array (with replacement, independently of the resampled timings), give it
    a random sign, and multiply the model's whole curve - the CPU's epoch seconds at every value of
    the swept axis - by exp(±r_b) before finding the crossing (`misfit_factors` makes these
    factors). One factor per resample, the same along the curve: the misfit at the benchmark's size
    is a level, and a resample's level moves its crossing. The residuals already hold each point's
    own timing noise, so the widened interval counts that noise twice (once resampled, once in the
    misfit): on the safe side.
    """
    quality = model.counted_quality if counted and model.counted_quality is not None else model.quality
    if quality is None:
        return np.zeros(0)
    measured = np.array([r.measured_s for r in quality.residuals], dtype=float)
    held_out = np.array([r.loo_predicted_s for r in quality.residuals], dtype=float)
    return log_residuals(measured, held_out)


def misfit_factors(model: CostModel, resamples: int, seed: int, counted: bool = False) -> np.ndarray:
    """Draw `resamples` misfit factors exp(±r_b).

    `resamples` factors exp(±r_b), each r_b drawn uniformly from `misfit_log_residuals(model,
    counted)` with a random sign (`symmetric_draws`, numpy's default_rng(seed)): multiply resample b's
    CPU curve by factors[b] (e.g. `cpu_s = (cpu_coefficients @ design.T) * factors[:, None]`). Ones
    where the model has no residuals (an assumed model)."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    return np.exp(symmetric_draws(misfit_log_residuals(model, counted), resamples, seed))


def symmetric_draws(residuals: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Draw `size` values of ±|r| from `residuals`.

    `size` draws of ±|r|: r uniformly from `residuals` (with replacement), the sign by a fair coin,
    both from default_rng(seed); zeros where there are no residuals."""
    values = np.abs(np.asarray(residuals, dtype=float))
    if values.size == 0:
        return np.zeros(size)
    rng = np.random.default_rng(seed)
    return rng.choice(values, size=size, replace=True) * rng.choice([-1.0, 1.0], size=size)


def prediction_interval(
    refitted_s: np.ndarray, misfit: np.ndarray, predicted_s: float, confidence: float, seed: int
) -> tuple[float, float]:
    """Return the (low, high) seconds interval for a measured epoch of one workload.

    (low, high) seconds for a measured epoch of one workload: the percentile interval at
    `confidence` of refitted_s[b] · exp(±misfit[j_b]) (`symmetric_draws(misfit, ..., seed)`), widened
    where needed to hold `predicted_s` (the point fit's prediction).

    `refitted_s`: the workload's epoch predicted by each bootstrap refit (the parameters' uncertainty);
    `misfit`: leave-one-out log residuals of the *other* workloads (the model's misfit; the point's own
    would grade it on its own miss). No misfit (none to draw from): the refits' spread alone.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    refitted = np.asarray(refitted_s, dtype=float)
    if refitted.size == 0 or not np.all(np.isfinite(refitted)):
        raise ValueError("prediction_interval needs at least one finite refitted prediction")
    draws = np.maximum(refitted, _FLOOR_S) * np.exp(symmetric_draws(misfit, refitted.size, seed))
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return min(float(low), predicted_s), max(float(high), predicted_s)
