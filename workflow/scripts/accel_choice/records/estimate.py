"""A statistic derived from raw measurements: one type for every one (the Estimate), and the one place
its flat spelling in a table (`<name>_ci_low`, `<name>_ci_high`) is written.

On the model of torch.utils.benchmark: the raw times are kept once (a cell's `epoch_s_jobs`, one
tuple of epoch times per timing job), and what is derived from them - a point with its interval at
a level, made by a named method, resting on so many jobs, with the flags it carries - is an Estimate.
Spreads of the raw values (min, max, quartiles) are read from the raw values, never stored twice.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from typing import Any

from accel_choice.records import Count, Fraction, Positive, ordered, record


# The methods a cell's estimate is made by (analyze.bootstrap, analyze.job_intervals), and the one
# definition of each one's point from the raw times: a record whose point is not its raw times' is damaged.
BOOTSTRAP = "percentile bootstrap: jobs, then epochs"  # point: the median of every epoch of every job
JOB_T = "t on log job medians"  # point: the geometric mean of the jobs' medians


def point_of(method: str, jobs: Sequence[Sequence[float]]) -> float | None:
    """Return the point an estimate made by `method` from `jobs` has.

    What an estimate made by `method` from `jobs` (one sequence of times per job) has as its point;
    None for a method whose point is not a function of one cell's times (a ratio)."""
    if method == BOOTSTRAP:
        return statistics.median(value for job in jobs for value in job)
    if method == JOB_T:
        return math.exp(statistics.fmean(math.log(statistics.median(job)) for job in jobs))
    return None


@record
class Estimate:
    """`point` with its interval [`low`, `high`] at `level` (0.95: a 95 % interval), made by `method`
    ("t on log job medians", ...) from `jobs` independent jobs; `flags` say what to read it with."""

    point: float
    low: float
    high: float
    level: Fraction
    method: str
    jobs: Count
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        ordered(self.low, self.point, self.high, "low point high")

    @property
    def half_width_ratio(self) -> float:
        """Half the interval's width over the point: ±x of the point."""
        return (self.high - self.low) / 2 / self.point if self.point else math.inf

    @property
    def interval(self) -> tuple[float, float]:
        return (self.low, self.high)

    def scaled(self, factor: float) -> Estimate:
        """Return the same estimate of `factor` × the quantity (factor > 0)."""
        return dataclasses.replace(self, point=self.point * factor, low=self.low * factor, high=self.high * factor)

    def inverted(self, numerator: float = 1.0) -> Estimate:
        """Return the estimate of `numerator` / the quantity: the interval's ends swap (a rate from a time)."""
        return dataclasses.replace(
            self, point=numerator / self.point, low=numerator / self.high, high=numerator / self.low
        )


@record
class PositiveEstimate(Estimate):
    """An estimate of a quantity that is positive by nature (a time, a rate, a ratio of times): a
    damaged record with a zero or negative end is refused naming the field."""

    point: Positive
    low: Positive
    high: Positive


def positive(estimate: Estimate) -> PositiveEstimate:
    """`estimate` as the estimate of a positive quantity (refused where an end is not above 0)."""
    return PositiveEstimate(**{field.name: getattr(estimate, field.name) for field in dataclasses.fields(Estimate)})


def columns(name: str, estimate: Estimate | None, point: str | None = None) -> dict[str, Any]:
    """Return an estimate's column names in a flat table.

    An estimate's columns in a flat table: `name`, `name_ci_low`, `name_ci_high` (empty for None);
    `point` names the point's column where it is not `name` (a comparison's `epoch_s_ratio_b_over_a`)."""
    point = point or name
    if estimate is None:
        return {point: None, f"{name}_ci_low": None, f"{name}_ci_high": None}
    return {point: estimate.point, f"{name}_ci_low": estimate.low, f"{name}_ci_high": estimate.high}


def flat_row(row: Any, estimates: Sequence[str]) -> dict[str, Any]:
    """Flatten a record into one row of a flat table.

    A record as one row of a flat table: its fields in order, each named in `estimates` (an
    Estimate, or None) as its `columns`."""
    flat: dict[str, Any] = {}
    for field in dataclasses.fields(row):
        value = getattr(row, field.name)
        flat.update(columns(field.name, value) if field.name in estimates else {field.name: value})
    return flat


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """First and third quartile, linear interpolation (numpy's default method)."""
    ordered_values = sorted(values)
    if len(ordered_values) == 1:
        return ordered_values[0], ordered_values[0]
    q1, _, q3 = statistics.quantiles(ordered_values, n=4, method="inclusive")
    return q1, q3
