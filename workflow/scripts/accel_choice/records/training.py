"""Training timing: one timed epoch per variant (a timing job's records), the aggregated cells,
and the full path of one epoch per format and variant.

A variant is (device, precision, placement, loader, batch size): VARIANT_KEYS. Times are
seconds, measured with `time.perf_counter()`; a loss that was not finite is null.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from typing import Any, Literal

from accel_choice.records import (
    Count,
    Fraction,
    LoadAverage,
    NonNegative,
    NonNegativeSeconds,
    Positive,
    PositiveCount,
    Seconds,
    Sha256,
    ordered,
    record,
)
from accel_choice.records.environment import Environment
from accel_choice.records.sentinel import SentinelReadings, SentinelSummary


@record
class Variant:
    """What identifies a training variant; every record of one variant's timings starts with these. Its
    `name` is the one way a variant is named (reports, the comparison, the figures)."""

    device: str
    precision: str
    placement: str
    loader: str
    batch_size: PositiveCount
    threads: PositiveCount  # torch's intra-op threads (timing.threads): a CPU configuration's own dimension
    compiled: bool  # the forward through torch.compile (timing.compile); its compilation is a one-off cost

    @property
    def key(self) -> tuple[Any, ...]:
        """The VARIANT_KEYS values: one aggregated cell, one matched comparison row per key."""
        return tuple(getattr(self, key) for key in VARIANT_KEYS)

    @property
    def name(self) -> str:
        """'cpu fastpath 1 thread' or 'cuda fp16 streamed fastpath' (+ ' compiled'); the batch size is not in it."""
        compiled = " compiled" if self.compiled else ""
        if self.device == "cpu":
            return f"cpu {self.loader} {self.threads} thread{'s' if self.threads != 1 else ''}{compiled}"
        return f"{self.device} {self.precision} {self.placement} {self.loader}{compiled}"

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Variant:
        """The variant of a mapping that holds the VARIANT_KEYS (a comparison row of comparison.json)."""
        return cls(**{key: row[key] for key in VARIANT_KEYS})


# One aggregated cell per value of these fields.
VARIANT_KEYS = tuple(field.name for field in dataclasses.fields(Variant))


def variant_fields(row: Variant) -> dict[str, Any]:
    """The VARIANT_KEYS fields of a record, cell or row, to build another record of the same variant."""
    return {key: getattr(row, key) for key in VARIANT_KEYS}


@record
class Invariants:
    """Section 28.3.5's checks on one timed epoch; a timing job fails when one breaks."""

    samples_eq_rows: bool
    eval_samples_eq_rows: bool
    steps_eq_ceil_rows_over_batch: bool
    samples_per_s_eq_samples_over_epoch_s: bool


@record
class EpochMeasurement(Variant):
    """One timed training epoch and one evaluation pass of one variant (measure.training.measure_interleaved):
    the fields a training job's records and the cost-model grid's share."""

    grad_scaler: bool
    repeat: Count
    samples: Count
    steps: Count
    epoch_s: Seconds  # the median of epoch_s_each
    epoch_s_each: tuple[Seconds, ...]  # every timed epoch of the job, in the order run
    samples_per_s: Positive
    epoch_cpu_s: NonNegativeSeconds
    eval_s: Seconds  # the median of eval_s_each
    eval_s_each: tuple[Seconds, ...]
    eval_samples: Count
    eval_loss: float | None  # null: not finite
    eval_accuracy: float | None
    final_loss: float | None
    mean_train_loss: float | None
    finite: bool
    nonfinite_step: Count | None
    peak_memory_bytes: Count | None  # torch.cuda.max_memory_allocated over the epochs; null: not CUDA
    epoch_memory_bytes: Count | None  # the epoch's own: its peak less what was allocated when it began
    warmup_steps: Count
    warmup_first_step_s: Seconds
    warmup_steady_step_s: Seconds
    loadavg_before: LoadAverage
    loadavg_after: LoadAverage
    foreign_cpu_share: NonNegative | None
    context_startup_s: Seconds | None
    initial_weights_sha256: Sha256
    final_weights_sha256: Sha256
    invariants: Invariants

    def __post_init__(self) -> None:
        if self.finite != (self.nonfinite_step is None):
            raise ValueError(f"finite is {self.finite} but nonfinite_step is {self.nonfinite_step!r}")
        if (self.peak_memory_bytes is None) != (self.epoch_memory_bytes is None) or (
            self.epoch_memory_bytes is not None and self.epoch_memory_bytes > self.peak_memory_bytes
        ):
            raise ValueError(
                f"epoch_memory_bytes {self.epoch_memory_bytes!r} must be null with peak_memory_bytes "
                f"{self.peak_memory_bytes!r}, and at most it"
            )
        for name in ("epoch_s", "eval_s"):
            each = getattr(self, f"{name}_each")
            if not each or not math.isclose(getattr(self, name), statistics.median(each), rel_tol=1e-12):
                raise ValueError(f"{name} {getattr(self, name)!r} is not the median of {name}_each {each!r}")


@record
class TrainingRecord(EpochMeasurement):
    """One timed epoch of one variant in one timing job, where every variant of the batch size runs."""

    position_in_job: Count  # the variant's place in the job's interleaved order
    same_final_weights_across_variants: bool
    # The one-off start-up: from before the job's first device call to the end of its first
    # variant's first warm-up step, less a steady step (context_startup_s on a GPU is part of it),
    # plus, for a later variant, its own first step's excess over a steady one.
    startup_s: NonNegativeSeconds


@record(schema="training-job", version=4)
class TrainingJob:
    """timing/{cpu,gpu}/bs<B>.rep<r>.json: every variant of one batch size, timed in one process,
    with the job's drift sentinel."""

    records: tuple[TrainingRecord, ...]
    wall_interval: tuple[float, float]  # time.time() at the start and end: no two timing jobs overlap
    environment: Environment
    sentinel: SentinelReadings
    probe: dict[str, Any] | None = None  # GPU jobs: what torch saw on the job's node


@record
class Contamination:
    """A repeat that shared the machine, and why (other processes' CPU, a rising load average)."""

    repeat: Count
    reasons: tuple[str, ...]


@record
class TrainingCell(Variant):
    """One variant aggregated over its finite repeats: medians with spread, flags, throughput."""

    grad_scaler: bool
    repeats: PositiveCount
    samples: Count
    steps: Count
    epoch_s_jobs: tuple[tuple[Seconds, ...], ...]  # every timed epoch, one tuple per repeat (job)
    epoch_s_runs: tuple[Seconds, ...]  # each job's median epoch
    epoch_s_median: Seconds  # the median of every epoch of every job
    epoch_s_ci_low: Seconds  # its interval at `confidence`: bootstrap over jobs, then epochs
    epoch_s_ci_high: Seconds
    epoch_s_min: Seconds  # the fastest and slowest job's median
    epoch_s_max: Seconds
    epoch_s_iqr: NonNegative
    epoch_s_iqr_over_median: NonNegative
    samples_per_s: Positive
    samples_per_s_ci_low: Positive
    samples_per_s_ci_high: Positive
    samples_per_s_min: Positive
    samples_per_s_max: Positive
    step_us_median: Positive
    eval_s_jobs: tuple[tuple[Seconds, ...], ...]
    eval_s_median: Seconds
    eval_s_ci_low: Seconds
    eval_s_ci_high: Seconds
    eval_s_min: Seconds
    eval_s_max: Seconds
    eval_s_iqr: NonNegative
    mean_train_loss_median: float | None
    eval_accuracy_median: float | None
    warmup_first_over_steady_median: Positive
    loadavg_max: NonNegative
    noisy: bool
    noise_reasons: tuple[str, ...]
    eval_noisy: bool
    same_final_weights_across_variants: bool
    peak_memory_bytes_max: Count | None
    epoch_memory_bytes_max: Count | None  # the largest epoch's own memory (peak less its baseline)
    contaminated: tuple[Contamination, ...]
    context_startup_s_median: Seconds | None
    startup_s_median: NonNegativeSeconds  # the jobs' one-off start-up (TrainingRecord.startup_s)
    epoch_s_over_fastpath: Positive | None  # this cell's epoch over the fast path's, same device/precision/placement/B
    epoch_s_over_fastpath_ci_low: Positive | None  # paired: both loaders ran in the same jobs
    epoch_s_over_fastpath_ci_high: Positive | None
    versus_fastpath: Literal["slower", "faster", "no_difference"] | None  # decided by the interval and the noise floor
    confidence: Fraction

    def __post_init__(self) -> None:
        ordered(self.epoch_s_min, self.epoch_s_median, self.epoch_s_max, "epoch_s_min epoch_s_median epoch_s_max")
        ordered(
            self.epoch_s_ci_low,
            self.epoch_s_median,
            self.epoch_s_ci_high,
            "epoch_s_ci_low epoch_s_median epoch_s_ci_high",
        )
        ordered(
            self.eval_s_ci_low, self.eval_s_median, self.eval_s_ci_high, "eval_s_ci_low eval_s_median eval_s_ci_high"
        )
        ordered(
            self.samples_per_s_ci_low,
            self.samples_per_s,
            self.samples_per_s_ci_high,
            "samples_per_s_ci_low samples_per_s samples_per_s_ci_high",
        )
        if self.epoch_s_over_fastpath is not None:
            ordered(
                self.epoch_s_over_fastpath_ci_low or 0.0,
                self.epoch_s_over_fastpath,
                self.epoch_s_over_fastpath_ci_high or 0.0,
                "epoch_s_over_fastpath_ci_low epoch_s_over_fastpath epoch_s_over_fastpath_ci_high",
            )
        if len(self.epoch_s_jobs) != self.repeats:
            raise ValueError(f"{len(self.epoch_s_jobs)} epoch_s_jobs for {self.repeats} repeats")
        ordered(self.eval_s_min, self.eval_s_median, self.eval_s_max, "eval_s_min eval_s_median eval_s_max")
        ordered(
            self.samples_per_s_min,
            self.samples_per_s,
            self.samples_per_s_max,
            "samples_per_s_min samples_per_s samples_per_s_max",
        )
        if len(self.epoch_s_runs) != self.repeats:
            raise ValueError(f"{len(self.epoch_s_runs)} epoch_s_runs for {self.repeats} repeats")


@record
class NonFiniteRun(Variant):
    """A timed run whose loss or weights went NaN/inf: left out of the medians, named in the report."""

    grad_scaler: bool
    repeat: Count
    nonfinite_step: Count | None
    final_loss: float | None
    mean_train_loss: float | None


@record(schema="training-table", version=4)
class TrainingTable:
    """tables/{cpu,gpu}_training.json: the cells of one device, the runs left out of them, and the
    run's drift sentinel (its machine speed, flagged jobs and noise floor)."""

    table: tuple[TrainingCell, ...]
    non_finite: tuple[NonFiniteRun, ...]
    sentinel: SentinelSummary
    environment: Environment


@record
class FullPathRow(Variant):
    """One epoch's full path for one file format and training variant (sums of medians).

    load + convert + transfer + train + eval = total; total_min/max add the spread of training,
    evaluation and the copies to the load medians; startup_s is the process's one-off start-up (on
    a GPU the context and first-step costs). What a longer job repeats every epoch is per_epoch_s
    (train + eval, streamed copies inside train); what it pays once is one_off_s (load, convert,
    the resident and prediction copies, start-up).
    """

    format: str
    load_s: NonNegativeSeconds
    convert_s: NonNegativeSeconds
    transfer_s: NonNegativeSeconds
    train_s: Seconds
    eval_s: Seconds
    total_s: Seconds
    total_min_s: Seconds
    total_max_s: Seconds
    startup_s: NonNegativeSeconds
    total_with_startup_s: Seconds
    per_epoch_s: Seconds
    one_off_s: NonNegativeSeconds
    train_share: Positive
    noisy: bool

    def __post_init__(self) -> None:
        ordered(self.total_min_s, self.total_s, self.total_max_s, "total_min_s total_s total_max_s")
        parts = {
            "total_with_startup_s": (self.total_with_startup_s, self.total_s + self.startup_s),
            "per_epoch_s": (self.per_epoch_s, self.train_s + self.eval_s),
            "one_off_s": (self.one_off_s, self.load_s + self.convert_s + self.transfer_s + self.startup_s),
        }
        for name, (value, expected) in parts.items():
            if not math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-12):
                raise ValueError(f"{name} {value!r} is not the sum of its parts ({expected!r})")
