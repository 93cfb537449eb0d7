"""The planner's tables: the cost model, the FLOP check and exercise 4's scenario (the break-even
curves are in records.breakeven, the workloads and timing jobs of the grid the cost model is fitted
to in records.grid).

Times are seconds; a rate the cost model dropped (an infinite rate, which JSON cannot hold) is null.
"""

from __future__ import annotations

import math
from typing import Literal

from accel_choice.records import Count, NonNegative, NonNegativeSeconds, Positive, PositiveCount, Seconds, record
from accel_choice.records import ordered

from accel_choice.records.breakeven import ModelSource
from accel_choice.records.device_profile import ProfileUse
from accel_choice.records.environment import Environment
from accel_choice.records.grid import Workload, steps_per_epoch
from accel_choice.records.model import TEXTBOOK

# Where the GPU's copy rate and start-up come from: measured in this run, assumed (your number), a device
# profile's, or none in the profile (a start-up counted as zero seconds).
Source = Literal["measured", "assumed", "profile", "none in the profile"]
CopyMemory = Literal["pageable", "pinned"]


# --- tables/cost_model.json --------------------------------------------------------------------


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
        """The textbook MLP's workload; a counted model's is analyze.model_work.CountedWorkload."""
        if self.features is None or self.hidden is None:
            raise ValueError(f"{self.model}: a counted model's workload comes from its profile")
        return Workload(rows=self.rows, features=self.features, hidden=self.hidden, batch_size=self.batch_size)


@record
class Residual:
    """One fit point against the fitted model of its device (a counted model's: no features, hidden)."""

    rows: PositiveCount
    features: PositiveCount | None
    hidden: PositiveCount | None
    batch_size: PositiveCount
    measured_s: Seconds
    predicted_s: NonNegativeSeconds
    rel_error: float  # (predicted - measured) / measured
    device: str
    model: str = TEXTBOOK

    def __post_init__(self) -> None:
        _check_model(self.model, self.features, self.hidden)
        expected = (self.predicted_s - self.measured_s) / self.measured_s
        if not math.isclose(self.rel_error, expected, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(
                f"rel_error {self.rel_error!r} is not (predicted_s - measured_s) / measured_s = {expected!r}"
            )


TERMS = ("overhead", "compute", "memory")


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
    terms_used: tuple[Literal["overhead", "compute", "memory"], ...] | None
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

    def __post_init__(self) -> None:
        counted = (self.counted_points, self.counted_seconds_per_step, self.counted_loo_median_abs_rel_error)
        if len({value is None for value in counted}) != 1 or (
            self.counted_points is None and (self.counted_gflop_per_s is not None or self.counted_warning is not None)
        ):
            raise ValueError("a counted model's points, rates and errors are all set or all null")
        if (self.flop_per_s is None) != (self.gflop_per_s is None) or (self.bytes_per_s is None) != (
            self.gb_per_s is None
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
                raise ValueError(f"an {self.source} model has no fit: its quality fields must be null")
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
        }
        if tuple(self.terms_used or ()) != tuple(term for term in TERMS if used[term]):
            raise ValueError(
                f"terms_used {self.terms_used} does not match the rates (a dropped term's rate is null, "
                "a dropped overhead is 0 s per step)"
            )
        if self.identifiable != (self.warning is None):
            raise ValueError("a fit that is not identifiable carries a warning, and only such a fit")


@record(schema="cost-model", version=5)
class CostModelTable:
    """tables/cost_model.json: the cost model of each device, the points it was fitted to and their
    residuals, and the host→device copy and GPU start-up the break-even curves add."""

    models: tuple[ModelRow, ...]
    points: tuple[FitPoint, ...]
    residuals: tuple[Residual, ...]
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


# --- tables/flop_check.json --------------------------------------------------------------------


@record
class FlopRow:
    """One batch size: FlopCounterMode's count and the formula's, per batch and per epoch, and the
    achieved GFLOP/s of the measured CPU fast-path epoch by both counts (null without one)."""

    batch_size: PositiveCount
    rows: PositiveCount
    steps: PositiveCount
    last_batch_rows: PositiveCount
    counted_forward_per_batch: Count
    counted_backward_per_batch: Count
    counted_per_batch: Count
    formula_3x_per_batch: Count
    counted_over_3x: Positive
    epoch_flop_counted: Count
    epoch_flop_3x: Count
    epoch_s: Seconds | None
    gflop_per_s_3x: Positive | None
    gflop_per_s_counted: Positive | None

    def __post_init__(self) -> None:
        if self.counted_forward_per_batch + self.counted_backward_per_batch != self.counted_per_batch:
            raise ValueError(
                f"counted forward {self.counted_forward_per_batch} + backward "
                f"{self.counted_backward_per_batch} != counted_per_batch {self.counted_per_batch}"
            )
        if self.counted_per_batch > self.formula_3x_per_batch or self.epoch_flop_counted > self.epoch_flop_3x:
            raise ValueError("the counter never counts more than the 3× rule")
        if self.steps != steps_per_epoch(self.rows, self.batch_size):
            raise ValueError(
                f"steps {self.steps} is not ⌈rows / batch_size⌉ = {steps_per_epoch(self.rows, self.batch_size)}"
            )
        if self.last_batch_rows > min(self.rows, self.batch_size):
            raise ValueError(f"last_batch_rows {self.last_batch_rows} exceeds the rows or the batch size")
        timed = {self.epoch_s is not None, self.gflop_per_s_3x is not None, self.gflop_per_s_counted is not None}
        if len(timed) != 1:
            raise ValueError("epoch_s and both achieved GFLOP/s are all set (a measured epoch) or all null")


@record(schema="flop-check")
class FlopCheck:
    """tables/flop_check.json: the FLOP formulas against torch's FlopCounterMode, one row per batch size."""

    table: tuple[FlopRow, ...]


# --- tables/scenario.json ----------------------------------------------------------------------


@record
class ScenarioModelled:
    """The cost model's epochs for the scenario: far outside the measured grid, an extrapolation."""

    cpu_epoch_s: Seconds
    gpu_epoch_s_resident: Seconds
    gpu_epoch_s_streamed: Seconds  # resident plus one copy of the input
    gpu_model_source: ModelSource
    host_to_device_copy_s: Seconds

    def __post_init__(self) -> None:
        if not math.isclose(
            self.gpu_epoch_s_streamed, self.gpu_epoch_s_resident + self.host_to_device_copy_s, rel_tol=1e-9
        ):
            raise ValueError(
                f"gpu_epoch_s_streamed {self.gpu_epoch_s_streamed!r} is not gpu_epoch_s_resident "
                f"{self.gpu_epoch_s_resident!r} + host_to_device_copy_s {self.host_to_device_copy_s!r}"
            )


@record(schema="scenario", version=2)
class Scenario:
    """tables/scenario.json: exercise 4's planning sheet (planner.scenario): sizes, memory bounds, the
    transfer estimate at an assumed bandwidth, what to measure, and the modelled epochs."""

    rows: PositiveCount
    features: PositiveCount
    hidden: PositiveCount
    batch_size: PositiveCount
    widths: tuple[PositiveCount, PositiveCount, PositiveCount]
    bandwidth_gb_s: Positive  # assumed (planner.scenario.bandwidth_gb_s)
    input_bytes: Count
    host_memory_bytes: Count | None  # the smallest node that measured (its training tables); null: unknown
    gpu_memory_bytes: Count | None
    fits_in_host_memory: bool | None  # null: the memory is unknown
    fits_in_gpu_memory: bool | None
    params: PositiveCount
    adam_fp32_bytes: Count
    batch_input_bytes: Count
    batch_hidden_bytes: Count
    batch_logit_bytes: Count
    forward_activation_bytes: Count
    forward_backward_activation_bytes: Count
    transfer_s: NonNegativeSeconds
    steps_per_epoch: PositiveCount
    flop_per_epoch_3x: Count
    flop_per_epoch_counted: Count
    to_measure: tuple[str, ...]
    must_stream: bool  # the input is known not to fit where it would have to sit whole
    gpu_memory_source: str  # "measured" (the probed GPU) or where the assumption comes from
    modelled: ScenarioModelled | None = None

    def __post_init__(self) -> None:
        if self.widths != (self.features, self.hidden, 1):
            raise ValueError(f"widths {self.widths} is not (features, hidden, 1)")
        for name, memory in (("host", self.host_memory_bytes), ("gpu", self.gpu_memory_bytes)):
            fits = getattr(self, f"fits_in_{name}_memory")
            if fits != (None if memory is None else self.input_bytes <= memory):
                raise ValueError(
                    f"fits_in_{name}_memory {fits} does not follow from input_bytes {self.input_bytes} "
                    f"and {name}_memory_bytes {memory}"
                )
        if self.must_stream != (self.fits_in_gpu_memory is False or self.fits_in_host_memory is False):
            raise ValueError(f"must_stream {self.must_stream} does not follow from the fits_in_*_memory answers")
        batch = self.batch_input_bytes + self.batch_hidden_bytes + self.batch_logit_bytes
        if self.forward_activation_bytes != batch or self.forward_backward_activation_bytes != 2 * batch:
            raise ValueError(
                f"forward_activation_bytes {self.forward_activation_bytes} is not the batch's input, "
                f"hidden and logit bytes ({batch}), or forward_backward_activation_bytes not twice it"
            )
        if self.steps_per_epoch != steps_per_epoch(self.rows, self.batch_size):
            raise ValueError(f"steps_per_epoch {self.steps_per_epoch} is not ⌈rows / batch_size⌉")

    @property
    def workload(self) -> Workload:
        return Workload(rows=self.rows, features=self.features, hidden=self.hidden, batch_size=self.batch_size)
