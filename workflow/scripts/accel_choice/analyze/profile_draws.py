"""A device profile's figures as the planner draws them: the figure of a new machine of that kind.

A profile's figure holds raw values per machine (records.device_profile). Machines of one kind differ:
this project's H200s ran the same step between 0.84 and 1.41 ms (docs/gpu.md). A user who rents
"an H200" gets one more machine of that kind, so a break-even for "a GPU like this" must carry the
spread between machines, not only the uncertainty of their median.

So, where a figure has two or more machines, one draw is a new machine's value: the machines' log
medians give a mean m and a spread s, and a new machine lies at exp(m + s·√(1 + 1/M)·t), t from
Student's t with M − 1 degrees of freedom (the prediction interval of a normal sample). Every
figure of one draw takes the same quantile of its t (a slow machine is slow in every figure). A
figure of one machine cannot say how machines differ: a draw bootstraps that machine's own values,
and the calibration harness shows how little such an interval covers (analyze.planner_calibration).
A datasheet's figure is one quoted value and never moves.

A figure's estimate (records.estimate.PositiveEstimate) is the percentile interval of that draw, so
the interval a profile shows is the spread the break-evens receive. Draws are seeded: the same
profile and seed give the same draws. `figure` needs numpy only (it runs on a bare GPU machine);
`Draws` also needs scipy (the planner's jobs).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

import numpy as np

from accel_choice.records.device_profile import BOOTSTRAPPED, DATASHEET, PREDICTED, Figure, Machine, Source, Unit
from accel_choice.records.estimate import PositiveEstimate

LEVEL = 0.95
ESTIMATE_DRAWS = 4000  # draws behind a figure's own interval
ESTIMATE_SEED = 20261206  # the figures' intervals are the same each time a profile is made from the same values


def _log_medians(machines: Sequence[Machine]) -> np.ndarray:
    return np.log([statistics.median(m.values) for m in machines])


def _new_machine(machines: Sequence[Machine], t: np.ndarray) -> np.ndarray:
    """A new machine's value at each of `t`, Student's t variates with len(machines) − 1 degrees of freedom."""
    logs = _log_medians(machines)
    spread = float(np.std(logs, ddof=1)) * math.sqrt(1 + 1 / len(logs))
    return np.exp(logs.mean() + spread * t)


def _bootstrap(machine: Machine, draws: int, rng: np.random.Generator) -> np.ndarray:
    """The median of `machine`'s values resampled with replacement, `draws` times."""
    values = np.asarray(machine.values, dtype=float)
    if len(values) == 1:
        return np.full(draws, values[0])
    return np.median(values[rng.integers(len(values), size=(draws, len(values)))], axis=1)


def figure(source: Source, unit: Unit, values: Mapping[str, Sequence[float]], reference: str) -> Figure:
    """Build a figure from its raw values per machine, with its estimate (the draw's percentile interval)."""
    machines = tuple(Machine(machine=label, values=tuple(float(v) for v in vs)) for label, vs in values.items())
    point = statistics.median(statistics.median(m.values) for m in machines)
    if source == "datasheet":
        estimate = PositiveEstimate(point=point, low=point, high=point, level=LEVEL, method=DATASHEET, jobs=1)
        return Figure(source=source, unit=unit, machines=machines, estimate=estimate, reference=reference)
    rng = np.random.default_rng(ESTIMATE_SEED)
    if len(machines) >= 2:
        drawn = _new_machine(machines, rng.standard_t(len(machines) - 1, ESTIMATE_DRAWS))
    else:
        drawn = _bootstrap(machines[0], ESTIMATE_DRAWS, rng)
    estimate = estimate_of(drawn, point, len(machines))
    return Figure(source=source, unit=unit, machines=machines, estimate=estimate, reference=reference)


def estimate_of(drawn: np.ndarray, point: float, machines: int) -> PositiveEstimate:
    """Return the percentile interval of `drawn` at LEVEL around `point`.

    The percentile interval of `drawn` at LEVEL around `point` (widened to hold it), by the method a
    figure of `machines` machines is drawn with: a new machine's prediction, or one machine's bootstrap."""
    tail = (1 - LEVEL) / 2
    low, high = (float(np.quantile(drawn, q)) for q in (tail, 1 - tail))
    return PositiveEstimate(
        point=point,
        low=min(low, point),
        high=max(high, point),
        level=LEVEL,
        method=PREDICTED if machines >= 2 else BOOTSTRAPPED,
        jobs=machines,
    )


class Draws:
    """Joint draws of a profile's figures: one quantile per draw, shared by every figure (a slow machine is
    slow throughout: its seconds at that quantile, its rates at the opposite one); a figure of one machine
    bootstraps its values instead."""

    def __init__(self, draws: int, seed: int):
        if draws < 1:
            raise ValueError(f"draws must be at least 1, got {draws}")
        self.draws = draws
        self.rng = np.random.default_rng(seed)
        self.quantile = self.rng.uniform(size=draws)

    def of(self, fig: Figure | None) -> np.ndarray | None:
        """`draws` values of `fig` (None for a figure the profile lacks); a datasheet's value in every draw."""
        if fig is None:
            return None
        if fig.source == "datasheet":
            return np.full(self.draws, fig.estimate.point)
        if len(fig.machines) >= 2:
            from scipy import special  # here, not at the top: a GPU machine's profile command has no scipy

            # A slow machine takes more seconds and moves fewer FLOP and bytes a second: a rate's quantile is 1 − u.
            quantile = self.quantile if fig.unit == "s" else 1 - self.quantile
            # Student t's quantiles: scipy.special's stdtrit, what scipy.stats.t.ppf calls, without scipy.stats'
            # import (about a second of each planner job).
            return _new_machine(fig.machines, special.stdtrit(len(fig.machines) - 1, quantile))
        return _bootstrap(fig.machines[0], self.draws, self.rng)
