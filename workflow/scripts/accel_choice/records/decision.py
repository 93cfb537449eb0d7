"""The decision: the verdict, the six-step decision sheet and the derived tables, as numbers and codes.

The `decide` rule writes these; the `report` rule renders them in words. Nothing here is prose:
a status or an outcome is a code, and every figure a sentence would state is a field.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from accel_choice.records import Count, Fraction, NonNegative, Positive, PositiveCount, Seconds, record
from accel_choice.records.data import BenchmarkGenerator, DataWarning, NorthstarGenerator, UserDataSource
from accel_choice.records.environment import Environment
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import Variant
from accel_choice.records.fullpath import FullPathRow
from accel_choice.records.upgrades import without_beside

# Status codes of a decision-sheet step.
Status = Literal[
    "measured",  # timed in this run
    "checked",  # looked up in this run (the device probe)
    "computed",  # from formulas
    "computed_and_measured",  # a formula bound beside a measured peak
    "measured_on_both_devices",
    "cpu_measured_gpu_missing",  # the CPU side measured; the GPU side: see `missing`
    "missing",  # see `missing`
]
# Why a GPU figure is absent.
Missing = Literal["not_measurable_here", "accelerator_off", "not_planned"]
# The verdict: the GPU only when its speedup interval clears the threshold; undecided when it straddles it.
Outcome = Literal["GPU", "CPU", "undecided"]
# How the verdict came about.
Reason = Literal[
    "gpu_pays_off",
    "below_threshold",
    "interval_straddles_threshold",
    "run_contaminated",
    "gpu_visible_not_measured",
    "no_gpu_visible",
]
UNDECIDED_REASONS = ("interval_straddles_threshold", "run_contaminated")


@record
class FlaggedJob:
    """A timing job that may have measured something else than the code: the machine ran at another speed
    (the sentinel), the hypervisor stole CPU, other processes used the CPU, or the load average rose."""

    table: str  # "cpu" or "gpu": the training table the job belongs to
    job: str  # e.g. "rep2" (a CPU job), "bs64.rep2" (a GPU job)
    record: str  # its timing record, results/..., the file a re-measurement replaces
    reasons: tuple[str, ...]


@record
class RunTrust:
    """How much of the run's timing rests on clean jobs: its timing jobs, the flagged ones, and whether more
    than `limit` (aggregate.bad_run_share) of them were flagged - a contaminated run, whose measured
    outcomes are undecided (analyze.trust)."""

    jobs: PositiveCount
    flagged: tuple[FlaggedJob, ...]
    limit: Fraction
    contaminated: bool

    def __post_init__(self) -> None:
        if len(self.flagged) > self.jobs:
            raise ValueError(f"{len(self.flagged)} flagged of {self.jobs} jobs")
        if self.contaminated != (len(self.flagged) > self.limit * self.jobs):
            raise ValueError(f"contaminated {self.contaminated} with {len(self.flagged)} of {self.jobs} flagged")


@record
class GpuVisibility:
    """What the device probe (or, without one, the environment record) saw."""

    visible: bool
    kind: Literal["cuda", "mps"] | None
    names: tuple[str, ...]
    cuda_version: str | None
    driver: str | None
    torch_version: str | None
    source: Literal["probe", "environment"]


@record
class EvidenceValue:
    """One number (or name) behind a sheet step; the renderer words it."""

    name: str
    value: bool | int | float | str | None
    unit: str | None = None


@record
class SheetStep:
    """One step of section 28.3.5's GPU decision sheet: its status and the figures behind it."""

    step: int
    status: Status
    missing: Missing | None = None
    evidence: tuple[EvidenceValue, ...] = ()

    def value(self, name: str) -> float | int | str | None:
        for item in self.evidence:
            if item.name == name:
                return item.value
        raise KeyError(f"step {self.step} has no evidence {name!r}")


@record
class CpuConfiguration:
    """A CPU training configuration the verdict names, and its epoch (the cell's point)."""

    loader: str
    batch_size: PositiveCount
    threads: PositiveCount
    compiled: bool
    epoch_s: Seconds

    @staticmethod
    def of(cell: Any) -> dict[str, Any]:
        """Return the fields of a training cell's configuration, to build a record that names it."""
        return {
            "loader": cell.loader,
            "batch_size": cell.batch_size,
            "threads": cell.threads,
            "compiled": cell.compiled,
            "epoch_s": cell.epoch_s.point,
        }


@record
class FastestEpoch(CpuConfiguration):
    """The fastest CPU training epoch and the arithmetic rate it achieved (3× rule)."""

    flop_3x: Count
    flop_per_s_3x: Positive
    figures: Literal["formula", "counted"]  # the 3× rule on the textbook's formula, or on the counted forward


@record
class StepScaling:
    """How the time per optimizer step grew from the smallest to the largest CPU batch size, with the
    ratio's interval (analyze.decision_intervals.cell_ratio: paired over the jobs that timed both cells).

    `growth`: "overhead" when the whole interval lies below half the growth of the samples per step
    (a fixed per-step cost, Python and dispatch, dominates at small batches), "work" when it lies at
    or above it, "undecided" when it straddles it. `overhead_bound` is growth == "overhead".
    """

    threads: PositiveCount  # the fastest CPU cell's: both cells ran at it (and compiled as it was)
    smallest_batch: PositiveCount
    largest_batch: PositiveCount
    samples_ratio: Positive
    step_time_ratio: Estimate  # the largest batch's time per step over the smallest's
    growth: Literal["overhead", "work", "undecided"]
    overhead_bound: bool

    def __post_init__(self) -> None:
        if self.step_time_ratio.point <= 0:
            raise ValueError(f"step_time_ratio {self.step_time_ratio.point!r} must be positive")
        if self.overhead_bound != (self.growth == "overhead"):
            raise ValueError(f"overhead_bound {self.overhead_bound} with growth {self.growth!r}")


@record
class MemoryCheck:
    """The memory a training job of this model needs against what the machines have.

    `bound_bytes` = Adam fp32 state + forward and backward activations at the largest batch size
    + the data matrix held in memory. `host_memory_bytes` is the smallest node that measured (the
    training tables'), never the machine that decides. `fits_*` is None where the capacity is unknown.
    `figures`: "formula" (the textbook MLP: Adam fp32 4·P·4), or "counted" (a user's model: `adam_bytes` holds its
    parameters, gradients, buffers and optimizer state, counted by profile_model).
    """

    figures: Literal["formula", "counted"]
    adam_bytes: Count
    activation_bytes: Count
    data_bytes: Count
    batch_size: PositiveCount
    bound_bytes: Count
    host_memory_bytes: Count | None
    device_memory_bytes: Count | None
    fits_host: bool | None
    fits_device: bool | None


@record
class DeviceComparison:
    """Each device's fastest full path over `epochs` epochs (its one-off costs and start-up paid once) and
    the speedup CPU/GPU with its interval (Welch t on the per-job full paths: each job's training and
    evaluation epochs, the load, conversion, copy and start-up medians held fixed), beside the speedup
    per further epoch."""

    cpu: FullPathRow
    gpu: FullPathRow
    speedup: Estimate  # over `epochs` epochs, one-off costs paid once; its jobs: the repeats it rests on
    epochs: PositiveCount  # the epochs the real job trains (gpu.epochs, or the Northstar selection's)
    speedup_per_epoch: Estimate  # training + evaluation only: what each further epoch gains
    speedup_without_startup: Positive
    threshold: Positive
    gpu_wins: bool  # the whole interval above the threshold
    # Epochs after which a GPU path's per-epoch gain (train + eval) over the best CPU path repays its
    # extra one-off costs (start-up, copies, load and convert, against the CPU's), for the GPU path
    # that repays soonest (break_even_gpu); 0: none to repay; None: no GPU path is faster per epoch.
    break_even_epochs: NonNegative | None
    break_even_gpu: FullPathRow | None
    # The best CPU configuration's epoch + evaluation timed in the GPU's jobs, where they timed it: the CPU side of a
    # paired speedup_per_epoch (the `cpu` row's figures are from the CPU's own jobs); None: Welch between the two.
    cpu_beside_per_epoch_s: Positive | None = None

    def __post_init__(self) -> None:
        if self.speedup.point <= 0:
            raise ValueError(f"speedup {self.speedup.point!r} must be positive")
        if self.gpu_wins != (self.speedup.low > self.threshold):
            raise ValueError(
                f"gpu_wins {self.gpu_wins} with speedup.low {self.speedup.low} and threshold {self.threshold}"
            )
        if (self.break_even_epochs is None) != (self.break_even_gpu is None):
            raise ValueError("break_even_epochs and break_even_gpu are both set or both null")


@record
class TiedConfiguration(CpuConfiguration):
    """A CPU configuration not measurably slower than the fastest: its epoch over the fastest's
    with the interval (the tie: its low end at or below 1, or inside the run's noise floor; a close cell of the
    fastest's jobs may read wholly below 1, paired round by round)."""

    over_fastest: Estimate  # its epoch over the fastest's


@record
class Verdict:
    """CPU or GPU, the outcome code that says why, and the figures the report states."""

    device: Literal["CPU", "GPU"]  # what to use now: the CPU unless the GPU was shown to pay off
    outcome: Outcome
    reason: Reason
    speedup_interval: tuple[Positive, Positive] | None  # CPU/GPU full path, when a GPU was measured
    repeats_to_settle: PositiveCount | None  # undecided: jobs per side that settle it with 80 % power
    noise_floor: NonNegative | None  # the run's, from the sentinel: CPU differences below it are no evidence
    confidence: Fraction
    gpu_measured: bool
    gpu: GpuVisibility
    threshold: Positive
    fastest_cpu_path: FullPathRow
    fastest_cpu_epoch: FastestEpoch
    fastest_cpu_ties: tuple[TiedConfiguration, ...]  # CPU configurations not measurably slower than the fastest
    scaling: StepScaling | None  # None with a single CPU batch size
    memory: MemoryCheck
    comparison: DeviceComparison | None
    trust: RunTrust | None  # None: the run's flags were not assessed (a verdict made outside the workflow)

    def __post_init__(self) -> None:
        if (self.device == "GPU") != (self.outcome == "GPU") or (self.outcome == "GPU") != (
            self.reason == "gpu_pays_off"
        ):
            raise ValueError(f"device {self.device} with outcome {self.outcome} and reason {self.reason}")
        if (self.outcome == "undecided") != (self.reason in UNDECIDED_REASONS):
            raise ValueError(f"outcome {self.outcome} with reason {self.reason}")
        if (self.speedup_interval is None) != (self.comparison is None):
            raise ValueError("a speedup interval exists exactly when a GPU was measured")
        if self.gpu_measured != (self.comparison is not None):
            raise ValueError("a comparison exists exactly when a GPU was measured")
        contaminated = self.trust is not None and self.trust.contaminated
        if (self.reason == "run_contaminated") != (contaminated and self.comparison is not None):
            raise ValueError(f"reason {self.reason} with a contaminated run: {contaminated}")


@record
class GpuMemory(Variant):
    """A GPU cell's measured memory against the bound the formulas give for it: the epoch's own
    (its peak less what was allocated when it began), beside the absolute peak."""

    peak_bytes: Count | None  # max_memory_allocated: the cuBLAS workspace and everything else alive included
    epoch_bytes: Count | None  # the epoch's own memory: what the bound is compared with
    bound_bytes: Count  # analyze.theory.memory_bound_bytes: what the formulas say one epoch holds
    epoch_over_bound: NonNegative | None


@record(schema="decision", version=10)
class Decision:
    """tables/decision.json: the verdict, the decision sheet and the full path it rests on."""

    verdict: Verdict
    sheet: tuple[SheetStep, ...]
    full_path: tuple[FullPathRow, ...]
    gpu_memory: tuple[GpuMemory, ...]
    environment: Environment
    UPGRADES: ClassVar = {9: without_beside}  # version 9 had no cpu_beside_per_epoch_s (records.upgrades)


@record(schema="full-path", version=3)
class FullPathTable:
    """tables/full_path.json: load + convert + transfer + train + eval per format and variant."""

    rows: tuple[FullPathRow, ...]


@record
class TheoryRow:
    """Section 28.3.4's estimates for one batch size (computed), with the measured rate beside them."""

    batch_size: PositiveCount
    steps_per_epoch: PositiveCount
    forward_flop_per_batch: Count
    forward_backward_flop_per_batch_3x: Count
    forward_backward_flop_per_batch_counted: Count
    forward_backward_flop_per_epoch_3x: Count
    forward_activation_bytes_per_batch: Count
    batch_transfer_s_assumed: NonNegative
    achieved_gflop_per_s_3x: Positive | None


@record(schema="theory", version=3)
class TheoryTable:
    """tables/theory.json: parameters, training state and per-batch estimates of the timed model: the
    textbook's formulas for its MLP (`figures` "formula"), the counts of tables/model_profile.json for a
    user's model ("counted", `widths` null)."""

    model: str  # records.model.TEXTBOOK or the factory
    figures: Literal["formula", "counted"]
    widths: tuple[PositiveCount, ...] | None
    params: Count
    adam_fp32_bytes: (
        Count  # parameters, gradients and optimizer state: 4·P·4 by the formula (Adam fp32); counted: with buffers
    )
    input_bytes: Count
    rows: PositiveCount
    bandwidth_gb_s: Positive
    input_transfer_s_assumed: NonNegative
    table: tuple[TheoryRow, ...]

    @property
    def model_label(self) -> str:
        """ "32 → 48 → 1" for the textbook MLP, the factory for a user's model."""
        return " → ".join(map(str, self.widths)) if self.widths else self.model


@record
class DataRow:
    """One dataset: its size, balance and the hashes of its exported files."""

    dataset: str
    rows: PositiveCount
    features: PositiveCount
    positive_rate: NonNegative | None  # null: the target is not 0/1
    matrix_sha256: str
    parquet_bytes: Count
    parquet_sha256: str
    csv_bytes: Count
    csv_sha256: str
    # Where the data came from: generated (with its settings) or your own files (each with its sha256).
    source: BenchmarkGenerator | NorthstarGenerator | UserDataSource
    # Where a figure of this data set means nothing: its constant columns, and (the benchmark) epochs of few steps.
    warnings: tuple[DataWarning, ...]


@record(schema="data-table", version=4)
class DataTable:
    """tables/data.json: the datasets of this run."""

    table: tuple[DataRow, ...]


@record(schema="decision-sheet")
class DecisionSheet:
    """tables/decision_sheet.json: the six steps (the same as in decision.json), on their own."""

    steps: tuple[SheetStep, ...]
