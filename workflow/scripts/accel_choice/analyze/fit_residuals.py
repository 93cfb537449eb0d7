"""The residual of every fit point as tables/cost_model.json holds it: measured, modelled, the point's
leave-one-out prediction, and the model's prediction interval for it (analyze.prediction), with
whether the measured epoch lies inside.

The interval of a point combines the bootstrap refits of its device's model (the same resamples as
the break-even intervals: analyze.breakeven_interval.resampled_fits) with the leave-one-out misfit
of the other workloads of the same fit - the grid's MLPs for an MLP point, a counted model's own
cells for one of its cells (all of the device's others where that fit has no other workload).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from accel_choice.analyze import costmodel, model_work, prediction
from accel_choice.analyze.costmodel import AnyWorkload, CostModel
from accel_choice.analyze.model_work import CountedWorkload
from accel_choice.records.planner import FitPoint, Residual


def table_residuals(
    points: Sequence[FitPoint],
    workloads: Sequence[AnyWorkload],
    models: Mapping[str, CostModel],
    refits: Mapping[tuple[str, bool], np.ndarray],
    *,
    confidence: float,
    seed: int,
) -> tuple[Residual, ...]:
    """Return one residual per point of a fitted model, in the points' order.

    One residual per point of a fitted model, in the points' order. `workloads[i]` is the epoch
    `points[i]` measured (planner.point_workload); `refits[(device, counted)]` the (resamples × 4)
    coefficients of each bootstrap refit (breakeven_interval.resampled_fits). Each point's misfit draws
    are seeded from `seed` and its position, so the same records give the same intervals."""
    if len(points) != len(workloads):
        raise ValueError(f"{len(points)} points but {len(workloads)} workloads")
    fitted = {device for device, model in models.items() if model.source == "fitted"}
    mine = [(p, w) for p, w in zip(points, workloads) if p.device in fitted]
    fits = _fit_residuals(mine, models)
    keys = [(p.device, isinstance(w, CountedWorkload), _identity(w)) for p, w in mine]
    misfit = np.array([prediction.log_residuals(r.measured_s, r.loo_predicted_s) for r in fits])
    # Its own stream: SeedSequence(seed) seeds the resamples (breakeven_interval.resampled_fits).
    seeds = np.random.SeedSequence((seed, 0)).generate_state(max(len(mine), 1))
    residuals = []
    for i, ((point, workload), fit) in enumerate(zip(mine, fits)):
        device, counted, identity = keys[i]
        others = [j for j, (d, c, w) in enumerate(keys) if (d, c) == (device, counted) and w != identity]
        if not others:  # a fit with no other workload: the device's other fits' misfit
            others = [j for j, (d, _, w) in enumerate(keys) if d == device and w != identity]
        refitted = refits[(device, counted)] @ costmodel.design([workload])[0]
        low, high = prediction.prediction_interval(refitted, misfit[others], fit.predicted_s, confidence, int(seeds[i]))
        residuals.append(
            dataclasses.replace(
                fit,
                source=point.source,
                interval_low_s=low,
                interval_high_s=high,
                inside=bool(low <= point.epoch_s <= high),
            )
        )
    return tuple(residuals)


def _identity(w: AnyWorkload) -> tuple[object, ...]:
    return tuple(model_work.identity(w).values())


def _fit_residuals(mine: Sequence[tuple[FitPoint, AnyWorkload]], models: Mapping[str, CostModel]) -> list[Residual]:
    """The fits' own residuals matched to the points: a device's MLP points are its model's fit points
    in order (planner.device_models), its counted cells those of its counted fit."""
    queues: dict[tuple[str, bool], list[Residual]] = {}
    for device, model in models.items():
        for counted, quality in ((False, model.quality), (True, model.counted_quality)):
            queues[(device, counted)] = list(quality.residuals) if quality is not None else []
    matched = []
    for point, workload in mine:
        queue = queues[(point.device, isinstance(workload, CountedWorkload))]
        if not queue:
            raise ValueError(f"{point.device}: no fitted residual left for the point {_identity(workload)}")
        fit = queue.pop(0)
        if (_identity(workload), point.epoch_s) != (
            (fit.model, fit.rows, fit.features, fit.hidden, fit.batch_size),
            fit.measured_s,
        ):
            raise ValueError(f"{point.device}: the point {_identity(workload)} is not its fit's next point {fit}")
        matched.append(fit)
    if any(queues.values()):
        raise ValueError("a fitted model holds residuals of points it was not given")
    return matched
