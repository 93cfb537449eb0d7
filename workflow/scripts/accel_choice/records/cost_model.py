"""The cost model's table, tables/cost_model.json: the points each device's model is fitted to, its
rates and fit quality, and every point's residual with its prediction interval (issue 42). Split
from records.planner, which re-exports these records.

Times are seconds; a rate the cost model dropped (an infinite rate, which JSON cannot hold) is null.
"""

from __future__ import annotations

import math
from typing import Literal

from accel_choice.records import (
    Count,
    Fraction,
    NonNegative,
    NonNegativeSeconds,
    Positive,
    PositiveCount,
    Seconds,
    ordered,
    record,
)
from accel_choice.records.breakeven import ModelSource
from accel_choice.records.device_profile import ProfileUse
from accel_choice.records.environment import Environment
from accel_choice.records.grid import Workload
from accel_choice.records.model import TEXTBOOK

# Where the GPU's copy rate and start-up come from: measured in this run, assumed (your number), a device
# profile's, or none in the profile (a start-up counted as zero seconds).
Source = Literal["measured", "assumed", "profile", "none in the profile"]
CopyMemory = Literal["pageable", "pinned"]


def _check_model(model: str, features: int | None, hidden: int | None) -> None:
    """The textbook MLP has features and hidden; a counted model (analyze.model_work) has neither."""
    if (model == TEXTBOOK) != (features is not None) or (features is None) != (hidden is None):
        raise ValueError(
            f"model {model!r} with features {features} and hidden {hidden}: the textbook MLP has both, "
            "a counted model neither"
        )


@record
class FitPoint:
    """A measured epoch the cost model is fitted to: a grid workload's median over its repeats, or a
    benchmark cell (fast path, fp32; CPU on the host, GPU resident). A benchmark cell of a model other
    than the grid's (your own, or the textbook MLP trained otherwise) is fitted with its counted steps,
    FLOP and bytes (analyze.model_work): `model` names it, and it has no features or hidden."""

    device: str
    source: Literal["grid", "benchmark"]
    rows: PositiveCount
    features: PositiveCount | None  # null: a counted model
    hidden: PositiveCount | None
    batch_size: PositiveCount
    epoch_s: Seconds  # the median over the repeats
    epoch_s_min: Seconds
    epoch_s_max: Seconds
    repeats: PositiveCount
    noisy: bool
    busy_repeats: Count  # repeats measured while other processes were busy (kept, and counted in the report)
    model: str = TEXTBOOK

    def __post_init__(self) -> None:
        ordered(self.epoch_s_min, self.epoch_s, self.epoch_s_max, "epoch_s_min epoch_s epoch_s_max")
        if self.busy_repeats > self.repeats:
            raise ValueError(f"busy_repeats {self.busy_repeats} > repeats {self.repeats}")
        _check_model(self.model, self.features, self.hidden)
        if self.source == "grid" and self.model != TEXTBOOK:
            raise ValueError(f"a grid point is the textbook MLP's, not {self.model!r}")

    @property
    def workload(self) -> Workload:
        """Return the textbook MLP's workload; a counted model's is analyze.model_work.CountedWorkload."""
        if self.features is None or self.hidden is None:
            raise ValueError(f"{self.model}: a counted model's workload comes from its profile")
        return Workload(rows=self.rows, features=self.features, hidden=self.hidden, batch_size=self.batch_size)


@record
class Residual:
    """One fit point against the fitted model of its device (a counted model's: no features, hidden).

    In tables/cost_model.json every residual of a fitted model also has the point's `source`, its
    prediction by a fit without its workload (`loo_predicted_s`) and the model's prediction interval
    for a measured epoch of its workload (analyze.prediction: the bootstrap refits' spread and the
    other workloads' leave-one-out misfit), and says whether the measured epoch lies inside it. A
    fit's own residuals (analyze.costmodel.FitQuality) have no interval yet: those fields are null.
    """

    rows: PositiveCount
    features: PositiveCount | None
    hidden: PositiveCount | None
    batch_size: PositiveCount
    measured_s: Seconds
    predicted_s: NonNegativeSeconds
    rel_error: float  # (predicted - measured) / measured
    device: str
    model: str = TEXTBOOK
    source: Literal["grid", "benchmark"] | None = None
    loo_predicted_s: NonNegativeSeconds | None = None  # by a fit without this workload
    interval_low_s: NonNegativeSeconds | None = None  # the prediction interval at the table's interval_confidence
    interval_high_s: NonNegativeSeconds | None = None
    inside: bool | None = None  # interval_low_s <= measured_s <= interval_high_s

    def __post_init__(self) -> None:
        _check_model(self.model, self.features, self.hidden)
        expected = (self.predicted_s - self.measured_s) / self.measured_s
        if not math.isclose(self.rel_error, expected, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(
                f"rel_error {self.rel_error!r} is not (predicted_s - measured_s) / measured_s = {expected!r}"
            )
        interval = (self.interval_low_s, self.interval_high_s, self.inside)
        if len({value is None for value in interval}) != 1:
            raise ValueError("interval_low_s, interval_high_s and inside are all set or all null")
        if self.interval_low_s is None or self.interval_high_s is None:
            return
        ordered(
            self.interval_low_s, self.predicted_s, self.interval_high_s, "interval_low_s predicted_s interval_high_s"
        )
        within = self.interval_low_s <= self.measured_s <= self.interval_high_s
        if self.inside != within:
            raise ValueError(
                f"inside {self.inside} but measured_s {self.measured_s!r} lies "
                f"{'inside' if within else 'outside'} {self.interval_low_s!r}..{self.interval_high_s!r}"
            )

    @property
    def loo_rel_error(self) -> float | None:
        """(loo_predicted_s - measured_s) / measured_s: the point's out-of-sample error."""
        return None if self.loo_predicted_s is None else (self.loo_predicted_s - self.measured_s) / self.measured_s


TERMS = ("overhead", "compute", "memory", "state", "per_row")


@record
class ModelRow:
    """The rates of one device's cost model and, for a fitted one, the fit's quality.

    A term the fit dropped has an infinite rate, written as null (flop_per_s, bytes_per_s and
    their GFLOP/s and GB/s); an assumed model has no fit, so its quality fields are null.
    """

    device: str
    source: ModelSource
    seconds_per_step: NonNegativeSeconds
    gflop_per_s: Positive | None  # null: the compute term was dropped (infinite rate)
    gb_per_s: Positive | None  # null: the memory term was dropped (infinite rate)
    flop_per_s: Positive | None
    bytes_per_s: Positive | None
    points: PositiveCount | None
    r2: float | None  # null: no fit, or every measured time equal (R² undefined)
    median_abs_rel_error: NonNegative | None
    max_abs_rel_error: NonNegative | None
    loo_median_abs_rel_error: NonNegative | None
    terms_used: tuple[Literal["overhead", "compute", "memory", "state", "per_row"], ...] | None
    identifiable: bool | None
    warning: str | None
    # A counted model's own rates (analyze.counted_fit), fitted to its cells with this model's bytes/s;
    # null where none was measured (the textbook MLP, an assumed model).
    counted_points: PositiveCount | None = None
    counted_seconds_per_step: NonNegativeSeconds | None = None
    counted_gflop_per_s: Positive | None = None  # null: no compute term in its fit
    counted_median_abs_rel_error: NonNegative | None = None
    counted_loo_median_abs_rel_error: NonNegative | None = None
    counted_warning: str | None = None  # its per-step and per-FLOP seconds cannot be told apart
    # The optimizer state's traffic, at its own rate (null: the term was dropped), and the per-row term
    # (0: dropped by the fit, or none assumed); gb_per_s and bytes_per_s above are the rows' traffic.
    state_gb_per_s: Positive | None = None
    state_bytes_per_s: Positive | None = None
    seconds_per_row: NonNegativeSeconds = 0.0

    def __post_init__(self) -> None:
        counted = (self.counted_points, self.counted_seconds_per_step, self.counted_loo_median_abs_rel_error)
        if len({value is None for value in counted}) != 1 or (
            self.counted_points is None and (self.counted_gflop_per_s is not None or self.counted_warning is not None)
        ):
            raise ValueError("a counted model's points, rates and errors are all set or all null")
        if (
            (self.flop_per_s is None) != (self.gflop_per_s is None)
            or (self.bytes_per_s is None) != (self.gb_per_s is None)
            or (self.state_bytes_per_s is None) != (self.state_gb_per_s is None)
        ):
            raise ValueError("a rate and its GFLOP/s or GB/s must both be null (a dropped term) or both set")
        quality = (
            self.points,
            self.median_abs_rel_error,
            self.max_abs_rel_error,
            self.loo_median_abs_rel_error,
            self.terms_used,
            self.identifiable,
        )
        if self.source in ("assumed", "profile"):
            if any(value is not None for value in (*quality, self.r2, self.warning)):
                raise ValueError("an assumed model has no fit: its quality fields must be null")
            return
        if any(value is None for value in quality):
            raise ValueError("a fitted model has points, errors, terms_used and identifiable")
        if self.median_abs_rel_error > self.max_abs_rel_error:  # type: ignore[operator]
            raise ValueError(
                f"median_abs_rel_error {self.median_abs_rel_error!r} > max_abs_rel_error {self.max_abs_rel_error!r}"
            )
        used = {
            "overhead": self.seconds_per_step > 0,
            "compute": self.flop_per_s is not None,
            "memory": self.bytes_per_s is not None,
            "state": self.state_bytes_per_s is not None,
            "per_row": self.seconds_per_row > 0,
        }
        if tuple(self.terms_used or ()) != tuple(term for term in TERMS if used[term]):
            raise ValueError(
                f"terms_used {self.terms_used} does not match the rates (a dropped term's rate is null, "
                "a dropped overhead or per-row term is 0 s per step or row)"
            )
        if self.identifiable != (self.warning is None):
            raise ValueError("a fit that is not identifiable carries a warning, and only such a fit")


@record(schema="cost-model", version=8)
class CostModelTable:
    """tables/cost_model.json: the cost model of each device, the points it was fitted to and their
    residuals - one per point of a fitted model, in the points' order, each with its prediction
    interval - and the host→device copy and GPU start-up the break-even curves add."""

    models: tuple[ModelRow, ...]
    points: tuple[FitPoint, ...]
    residuals: tuple[Residual, ...]
    interval_confidence: Fraction  # of every residual's prediction interval (aggregate.confidence)
    interval_resamples: PositiveCount  # the bootstrap refits behind them (aggregate.bootstrap_resamples)
    host_to_device_gb_s: Positive
    host_to_device_source: Source  # assumed: report.bandwidth_gb_s
    host_to_device_memory: CopyMemory | None  # measured: the faster of the pageable and pinned matrix copies
    gpu_startup_s: NonNegativeSeconds
    gpu_startup_source: Source  # assumed: planner.gpu_assumed.startup_s
    epochs: PositiveCount
    threads: PositiveCount
    environment: Environment
    gpu_profile: ProfileUse | None  # the profile the GPU row comes from (planner.gpu_profile), where it does

    def __post_init__(self) -> None:
        devices = [m.device for m in self.models]
        if len(set(devices)) != len(devices):
            raise ValueError(f"one model per device, found {devices}")
        if any(m.source == "profile" for m in self.models) != (self.gpu_profile is not None):
            raise ValueError("a profile's GPU row names its profile (gpu_profile), and only it")
        for model in self.models:
            if model.source != "fitted":
                continue
            points = sum(1 for p in self.points if p.device == model.device)
            residuals = sum(1 for r in self.residuals if r.device == model.device)
            fitted = (model.points or 0) + (model.counted_points or 0)
            if not fitted == points == residuals:
                raise ValueError(
                    f"{model.device}: the model counts {fitted} points, the table holds {points} "
                    f"points and {residuals} residuals"
                )
        if not 0 < self.interval_confidence < 1:
            raise ValueError(f"interval_confidence {self.interval_confidence} is not in (0, 1)")
        fitted_devices = {m.device for m in self.models if m.source == "fitted"}
        points = [p for p in self.points if p.device in fitted_devices]
        for point, residual in zip(points, [r for r in self.residuals if r.device in fitted_devices]):
            if _key(point) != _key(residual) or point.epoch_s != residual.measured_s:
                raise ValueError(
                    f"residual {_key(residual)} ({residual.measured_s!r} s) is not the point {_key(point)} "
                    f"({point.epoch_s!r} s) in its place: one residual per point, in order"
                )
            if residual.loo_predicted_s is None or residual.inside is None:
                raise ValueError(f"residual {_key(residual)} has no leave-one-out prediction or interval")


def _key(p: FitPoint | Residual) -> tuple[object, ...]:
    return (p.device, p.source, p.model, p.rows, p.features, p.hidden, p.batch_size)
