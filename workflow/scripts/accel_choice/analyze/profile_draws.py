"""A device profile's figures as the planner draws them: one machine at random, then its values bootstrapped.

A profile's figure holds raw values per machine (records.device_profile). Machines of one kind differ:
this project's four H200s ran the same step between 0.86 and 1.4 ms (docs/gpu.md). A user who rents
"an H200" gets one of them, so a break-even for "a GPU like this" must carry the spread between
machines, not only the uncertainty of their median. One draw therefore picks a machine uniformly,
the same machine for every figure that has it (a slow host slows every step of it), then bootstraps
that machine's values and takes their median (its own rounds' noise). A figure without the drawn
machine draws among its own machines. A datasheet's figure is one quoted value and never moves.

A figure's estimate (records.estimate.PositiveEstimate) is the percentile interval of that draw, so
the interval a profile shows is the spread the break-evens receive. Draws are seeded: the same
profile and seed give the same draws (numpy's default_rng).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

import numpy as np

from accel_choice.records.device_profile import DATASHEET, DRAWN, Figure, Machine, Source, Unit
from accel_choice.records.estimate import PositiveEstimate

LEVEL = 0.95
ESTIMATE_DRAWS = 4000  # draws behind a figure's own interval
ESTIMATE_SEED = 20261206  # the figures' intervals are the same each time a profile is made from the same values


def figure(source: Source, unit: Unit, values: Mapping[str, Sequence[float]], reference: str) -> Figure:
    """A figure from its raw values per machine, with its estimate (the draw's percentile interval)."""
    machines = tuple(Machine(machine=label, values=tuple(float(v) for v in vs)) for label, vs in values.items())
    medians = [statistics.median(m.values) for m in machines]
    point = statistics.median(medians)
    if source == "datasheet":
        estimate = PositiveEstimate(point=point, low=point, high=point, level=LEVEL, method=DATASHEET, jobs=1)
    else:
        drawn = draw_figure(machines, ESTIMATE_DRAWS, np.random.default_rng(ESTIMATE_SEED))
        tail = (1 - LEVEL) / 2
        low, high = (float(np.quantile(drawn, q)) for q in (tail, 1 - tail))
        estimate = PositiveEstimate(
            point=point, low=min(low, point), high=max(high, point), level=LEVEL, method=DRAWN, jobs=len(machines)
        )
    return Figure(source=source, unit=unit, machines=machines, estimate=estimate, reference=reference)


def _bootstrap_median(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The median of `values` resampled at the positions `rows` (draws × len(values))."""
    return np.median(values[rows], axis=1)


def draw_figure(
    machines: Sequence[Machine], draws: int, rng: np.random.Generator, chosen: np.ndarray | None = None
) -> np.ndarray:
    """`draws` values of one figure: a machine (`chosen[i]`, an index into `machines`, or uniform), then
    the median of its values resampled with replacement."""
    picks = rng.integers(len(machines), size=draws) if chosen is None else chosen
    out = np.empty(draws)
    for index, machine in enumerate(machines):
        mine = picks == index
        if not mine.any():
            continue
        values = np.asarray(machine.values, dtype=float)
        if len(values) == 1:
            out[mine] = values[0]
            continue
        rows = rng.integers(len(values), size=(int(mine.sum()), len(values)))
        out[mine] = _bootstrap_median(values, rows)
    return out


class Draws:
    """Joint draws of a profile's figures: one machine label per draw, shared by every figure that has it."""

    def __init__(self, labels: Sequence[str], draws: int, seed: int):
        if draws < 1:
            raise ValueError(f"draws must be at least 1, got {draws}")
        self.labels = tuple(dict.fromkeys(labels))
        self.draws = draws
        self.rng = np.random.default_rng(seed)
        self.machine = self.rng.integers(len(self.labels), size=draws) if self.labels else np.zeros(0, dtype=int)

    def of(self, fig: Figure | None) -> np.ndarray | None:
        """`draws` values of `fig` (None for a figure the profile lacks); a datasheet's value in every draw."""
        if fig is None:
            return None
        if fig.source == "datasheet":
            return np.full(self.draws, fig.estimate.point)
        own = [m.machine for m in fig.machines]
        chosen = np.empty(self.draws, dtype=int)
        shared = np.array([own.index(label) if label in own else -1 for label in self.labels], dtype=int)
        mapped = shared[self.machine] if len(self.labels) else np.full(self.draws, -1)
        missing = mapped < 0
        chosen[~missing] = mapped[~missing]
        chosen[missing] = self.rng.integers(len(own), size=int(missing.sum()))
        return draw_figure(fig.machines, self.draws, self.rng, chosen)


def points(figures: Sequence[Figure | None]) -> list[np.ndarray | None]:
    """Each figure's point as a one-draw array (None stays None): the point curves use the same code."""
    return [None if f is None else np.array([f.estimate.point]) for f in figures]
