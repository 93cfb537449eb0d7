"""Training timing: one timed epoch per variant (a timing job's records), the aggregated cells, and the full
path of one epoch per format and variant. A variant is (device, precision, placement, loader, batch size):
VARIANT_KEYS. Times are seconds, measured with `time.perf_counter()`; a loss that was not finite is null.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from accel_choice.records import (
    Count,
    LoadAverage,
    NonNegative,
    NonNegativeSeconds,
    Positive,
    PositiveCount,
    Seconds,
    Sha256,
    one_per_repeat,
    record,
)
from accel_choice.records.environment import Environment
from accel_choice.records.estimate import PositiveEstimate, columns, point_of, quartiles
from accel_choice.records.model import Dtype
from accel_choice.records.launch import CellLaunchChecks, LaunchChecks, launch_checked, launch_columns
from accel_choice.records.sentinel import SentinelSummary
from accel_choice.records.upgrades import without_beside, without_rehearsal


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
        """Return the VARIANT_KEYS values: one aggregated cell, one matched comparison row per key."""
        return tuple(getattr(self, key) for key in VARIANT_KEYS)

    @property
    def name(self) -> str:
        """Name the variant: 'cpu fastpath 1 thread', 'cuda fp16 streamed fastpath' (+ ' compiled'); no batch size."""
        compiled = " compiled" if self.compiled else ""
        if self.device == "cpu":
            return f"cpu {self.loader} {self.threads} thread{'s' if self.threads != 1 else ''}{compiled}"
        return f"{self.device} {self.precision} {self.placement} {self.loader}{compiled}"

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Variant:
        """Return the variant of a mapping that holds the VARIANT_KEYS (a comparison row of comparison.json)."""
        return cls(**{key: row[key] for key in VARIANT_KEYS})


# One aggregated cell per value of these fields.
VARIANT_KEYS = tuple(field.name for field in dataclasses.fields(Variant))


def variant_fields(row: Variant) -> dict[str, Any]:
    """Return the VARIANT_KEYS fields of a record, cell or row, to build another record of the same variant."""
    return {key: getattr(row, key) for key in VARIANT_KEYS}


@record
class Invariants:
    """Section 28.3.5's checks on one timed epoch; a timing job fails when one breaks."""

    samples_eq_rows: bool
    eval_samples_eq_rows: bool
    steps_eq_ceil_rows_over_batch: bool
    # The textbook's samples_per_s == samples / epoch_s holds by construction: both are read from the raw epochs.


# torch.set_float32_matmul_precision (timing.matmul_precision): "highest" keeps fp32 matmuls in fp32;
# "high" lets CUDA use TF32 (and the CPU bf16 passes where oneDNN offers them), "medium" bf16.
MatmulPrecision = Literal["highest", "high", "medium"]


@record
class EpochMeasurement(Variant):
    """One timed training epoch and one evaluation pass of one variant (measure.training.measure_interleaved):
    the fields a training job's records and the cost-model grid's share."""

    grad_scaler: bool
    matmul_precision: MatmulPrecision  # torch's float32 matmul precision while the epochs ran
    optimizer_impl: str  # which implementation stepped the optimizer: 'Adam fused', 'Adam for-loop', ...
    # The dtypes the model held and returned (its evaluation's output, under the variant's autocast): the
    # weights stay fp32 (autocast lowers the work, not the weights); an fp32 variant's output is fp32.
    param_dtype: Literal["fp32"]
    output_dtype: Dtype
    repeat: Count
    samples: Count
    steps: Count
    epoch_s_each: tuple[Seconds, ...]  # every timed epoch of the job, in the order run: the raw times, stored once
    epoch_cpu_s: NonNegativeSeconds
    eval_s_each: tuple[Seconds, ...]  # every timed evaluation pass, one a round
    eval_samples: Count
    eval_loss: float | None  # null: not finite
    eval_accuracy: float | None
    final_loss: float | None
    mean_train_loss: float | None
    finite: bool
    nonfinite_step: Count | None
    # The most updates the GradScaler skipped (an inf/NaN gradient) in any timed epoch; null: no scaler.
    scaler_skipped_steps: Count | None
    peak_memory_bytes: Count | None  # torch.cuda.max_memory_allocated over the epochs; null: not CUDA
    epoch_memory_bytes: Count | None  # the epoch's own: its peak less what was allocated when it began
    warmup_steps: Count
    warmup_first_step_s: Seconds
    warmup_steady_step_s: Seconds
    # Untimed updates before each timed epoch, all they changed put back (measure.rehearsal); 0 before 2026-12-08.
    rehearsal_steps: Count
    loadavg_before: LoadAverage
    loadavg_after: LoadAverage
    foreign_cpu_share: NonNegative | None
    context_startup_s: Seconds | None
    initial_weights_sha256: Sha256
    final_weights_sha256: Sha256
    invariants: Invariants

    def __post_init__(self) -> None:
        if self.precision == "fp32" and self.output_dtype != "fp32":
            raise ValueError(f"{self.name}: an fp32 variant returned {self.output_dtype} outputs")
        if self.finite != (self.nonfinite_step is None):
            raise ValueError(f"finite is {self.finite} but nonfinite_step is {self.nonfinite_step!r}")
        if (self.scaler_skipped_steps is None) == self.grad_scaler or (self.scaler_skipped_steps or 0) > self.steps:
            raise ValueError(
                f"scaler_skipped_steps {self.scaler_skipped_steps!r} must be null exactly without a GradScaler "
                f"(grad_scaler {self.grad_scaler}) and at most steps {self.steps}"
            )
        if (self.peak_memory_bytes is None) != (self.epoch_memory_bytes is None) or (
            self.epoch_memory_bytes is not None and self.epoch_memory_bytes > self.peak_memory_bytes
        ):
            raise ValueError(
                f"epoch_memory_bytes {self.epoch_memory_bytes!r} must be null with peak_memory_bytes "
                f"{self.peak_memory_bytes!r}, and at most it"
            )
        if not self.epoch_s_each or not self.eval_s_each:
            raise ValueError(f"{self.name}: a record holds at least one timed epoch and evaluation")

    @property
    def epoch_s(self) -> float:
        """Return the median of the timed epochs (epoch_s_each)."""
        return statistics.median(self.epoch_s_each)

    @property
    def eval_s(self) -> float:
        """Return the median of the timed evaluation passes (eval_s_each)."""
        return statistics.median(self.eval_s_each)

    @property
    def samples_per_s(self) -> float:
        """Return the epoch's throughput: samples / epoch_s."""
        return self.samples / self.epoch_s


@record
class TrainingRecord(EpochMeasurement):
    """One timed epoch of one variant in one timing job, where every variant of the batch size runs."""

    position_in_job: Count  # the variant's place in the job's interleaved order
    same_final_weights_across_variants: bool
    # The one-off start-up: from before the job's first device call to the end of its first
    # variant's first warm-up step, less a steady step (context_startup_s on a GPU is part of it),
    # plus, for a later variant, its own first step's excess over a steady one.
    startup_s: NonNegativeSeconds
    # The launch floor, eager step and kernel count of a GPU job's eager fp32 resident variant
    # (records.launch, measure.gpu_checks); null for every other variant.
    launch: LaunchChecks | None
    # Seconds per epoch of the plain loop (measure.reference, torch.utils.benchmark.Timer: the mean of
    # its timed epochs) in the job's middle round beside this variant's; null where the variant has none
    # (compiled, autocast, streamed or prefetched). A variant with launch checks has one.
    reference_epoch_s: Seconds | None = None
    # A compiled variant's torch.compile mode (timing.compile_mode) and the graph breaks dynamo met while its
    # job compiled (a compiled model that breaks runs the code between its graphs eagerly); null when eager.
    compile_mode: str | None = None
    graph_breaks: Count | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.compile_mode is None or self.graph_breaks is None) == self.compiled:
            raise ValueError(
                f"compile_mode {self.compile_mode!r} and graph_breaks {self.graph_breaks!r} must be set exactly "
                f"for a compiled variant (compiled {self.compiled})"
            )
        if (self.launch is None) == launch_checked(self) or (launch_checked(self) and self.reference_epoch_s is None):
            raise ValueError(
                f"launch {self.launch!r} and reference_epoch_s {self.reference_epoch_s!r} must both be set exactly for "
                f"an eager fp32 resident variant, and launch null otherwise ({self.name})"
            )
        if self.launch is not None:
            self.launch.check_device(self.device)


@record
class Contamination:
    """A repeat that shared the machine, and why (other processes' CPU, a rising load average)."""

    repeat: Count
    reasons: tuple[str, ...]


@record
class TrainingCell(Variant):
    """One variant aggregated over its finite repeats: the raw epoch and evaluation times of every job,
    the estimates made from them, flags and throughput. Spreads of the jobs (min, max, quartiles of the
    job medians) are read from the raw times (properties), never stored twice."""

    grad_scaler: bool
    repeats: PositiveCount
    jobs: tuple[str, ...]  # each repeat's job (io.paths.CPU_JOB, GPU_JOB): cells of the same jobs pair job by job
    samples: Count
    steps: Count
    epoch_s_jobs: tuple[tuple[Seconds, ...], ...]  # every timed epoch, one tuple per repeat (job)
    eval_s_jobs: tuple[tuple[Seconds, ...], ...]
    epoch_s: PositiveEstimate  # the cell's epoch time with its interval at its level
    samples_per_s: PositiveEstimate  # samples / epoch_s
    eval_s: PositiveEstimate
    mean_train_loss_median: float | None
    eval_accuracy_median: float | None
    warmup_first_over_steady_median: Positive
    rehearsal_steps: Count  # untimed updates before each timed epoch, every job's alike (TrainingRecord's)
    loadavg_max: NonNegative
    noisy: bool
    noise_reasons: tuple[str, ...]
    eval_noisy: bool
    same_final_weights_across_variants: bool
    peak_memory_bytes_max: Count | None
    epoch_memory_bytes_max: Count | None  # the largest epoch's own memory (peak less its baseline)
    contaminated: tuple[Contamination, ...]
    context_startup_s_median: Seconds | None
    startup_s_jobs: tuple[NonNegativeSeconds, ...]  # each job's one-off start-up (TrainingRecord.startup_s)
    epoch_s_over_fastpath: (
        PositiveEstimate | None
    )  # this cell's epoch over the fast path's, same device/precision/placement/B
    versus_fastpath: Literal["slower", "faster", "no_difference"] | None  # decided by the interval and the noise floor
    # Each job's plain-loop epoch (TrainingRecord.reference_epoch_s), and this cell's epoch over it with
    # a paired interval (analyze.aggregate.versus_reference); null where the cell has no reference.
    reference_s_jobs: tuple[Seconds, ...] | None = None
    epoch_s_over_reference: PositiveEstimate | None = None
    graph_breaks: Count | None = None  # a compiled cell: the most graph breaks a job of it met
    # An eager fp32 resident cell's launch checks, one value per job (analyze.gpu_checks); null for the rest.
    launch: CellLaunchChecks | None

    def __post_init__(self) -> None:
        one_per_repeat(self, "jobs", "epoch_s_jobs", "eval_s_jobs", "startup_s_jobs", "reference_s_jobs")
        if (self.launch is None) == launch_checked(self) or (
            self.launch is not None and self.launch.jobs != self.repeats
        ):
            raise ValueError(
                f"launch must hold one value per repeat exactly for an eager fp32 resident cell ({self.name})"
            )
        if (self.reference_s_jobs is None) != (self.epoch_s_over_reference is None):
            raise ValueError("reference_s_jobs and epoch_s_over_reference are null together or not at all")
        for name in ("epoch_s", "eval_s"):
            jobs, estimate = getattr(self, f"{name}_jobs"), getattr(self, name)
            point = point_of(estimate.method, jobs) if all(jobs) else None
            if point is not None and not math.isclose(estimate.point, point, rel_tol=1e-12):
                raise ValueError(
                    f"{name}.point {estimate.point!r} is not what {estimate.method!r} makes of {name}_jobs "
                    f"({point!r}): a damaged record"
                )
        if not math.isclose(self.samples_per_s.point, self.samples / self.epoch_s.point, rel_tol=1e-9):
            raise ValueError(f"samples_per_s {self.samples_per_s.point!r} is not samples / epoch_s")

    @property
    def confidence(self) -> float:
        """Return the level of the cell's intervals."""
        return self.epoch_s.level

    @property
    def startup_s_median(self) -> float:
        """Return the jobs' median one-off start-up."""
        return statistics.median(self.startup_s_jobs)

    @property
    def epoch_s_runs(self) -> tuple[float, ...]:
        """Return each job's median epoch (TrainingRecord.epoch_s), in job order."""
        return tuple(statistics.median(job) for job in self.epoch_s_jobs)

    @property
    def eval_s_runs(self) -> tuple[float, ...]:
        return tuple(statistics.median(job) for job in self.eval_s_jobs)

    @property
    def epoch_s_min(self) -> float:
        return min(self.epoch_s_runs)

    @property
    def epoch_s_max(self) -> float:
        return max(self.epoch_s_runs)

    @property
    def epoch_s_iqr(self) -> float:
        q1, q3 = quartiles(self.epoch_s_runs)
        return q3 - q1

    @property
    def step_us(self) -> float:
        """Return the epoch's point over its steps, in microseconds."""
        return self.epoch_s.point / self.steps * 1e6

    def table_row(self) -> dict[str, Any]:
        """Return the cell as one row of tables/{cpu,gpu}_training.csv: its fields, each estimate as its columns
        (records.estimate.columns: point, ci_low, ci_high) with its method, and the jobs' spread."""
        estimates = ("epoch_s", "samples_per_s", "eval_s", "epoch_s_over_fastpath", "epoch_s_over_reference")
        row = {name: getattr(self, name) for name in self.__dataclass_fields__ if name not in (*estimates, "launch")}
        row["contaminated"] = tuple(c.repeat for c in self.contaminated)
        for name in estimates:
            row.update(columns(name, getattr(self, name)))
        row |= launch_columns(self.launch)
        spread = ("epoch_s_runs", "epoch_s_min", "epoch_s_max", "epoch_s_iqr")
        return (
            row
            | {name: getattr(self, name) for name in spread}
            | {
                "eval_s_min": min(self.eval_s_runs),
                "eval_s_max": max(self.eval_s_runs),
                "samples_per_s_min": self.samples / self.epoch_s_max,
                "samples_per_s_max": self.samples / self.epoch_s_min,
                "step_us": self.step_us,
                "interval_method": self.epoch_s.method,
                "confidence": self.confidence,
            }
        )


@record
class NonFiniteRun(Variant):
    """A timed run whose loss or weights went NaN/inf: left out of the medians, named in the report."""

    grad_scaler: bool
    repeat: Count
    nonfinite_step: Count | None
    final_loss: float | None
    mean_train_loss: float | None


@record(schema="training-table", version=13)
class TrainingTable:
    """tables/{cpu,gpu}_training.json: the cells of one device, the runs left out of them, the
    run's drift sentinel (its machine speed, flagged jobs and noise floor), and the memory of the
    nodes that measured (`environment` is the aggregating job's own). A GPU table's `beside`: the CPU's
    fast path, timed in the same jobs as its cells (TrainingJob.beside), each cell naming those jobs."""

    table: tuple[TrainingCell, ...]
    non_finite: tuple[NonFiniteRun, ...]
    sentinel: SentinelSummary
    host_memory_bytes: PositiveCount | None  # the smallest of the timing jobs' nodes; null: one is unknown
    environment: Environment
    beside: tuple[TrainingCell, ...] = ()
    UPGRADES: ClassVar = {11: without_beside, 12: without_rehearsal}  # records.upgrades

    def __post_init__(self) -> None:
        if any(cell.device != "cpu" for cell in self.beside):
            raise ValueError("beside: the CPU's cells timed in a GPU table's jobs, every one on the CPU")
