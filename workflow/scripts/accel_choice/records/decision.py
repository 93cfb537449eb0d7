"""The decision: the verdict, the six-step decision sheet and the derived tables, as numbers and codes.

The `decide` rule writes these; the `report` rule renders them in words. Nothing here is prose:
a status or an outcome is a code, and every figure a sentence would state is a field.
"""

from __future__ import annotations

from typing import Literal

from accel_choice.records import Count, NonNegative, Positive, PositiveCount, Seconds, record
from accel_choice.records.environment import Environment
from accel_choice.records.training import FullPathRow, VariantFields

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
# How the verdict came about.
Outcome = Literal["gpu_pays_off", "below_threshold", "spreads_overlap", "gpu_visible_not_measured", "no_gpu_visible"]


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
class FastestEpoch:
    """The fastest CPU training epoch and the arithmetic rate it achieved (3× rule)."""

    loader: str
    batch_size: PositiveCount
    epoch_s: Seconds
    flop_3x: Count
    flop_per_s_3x: Positive


@record
class StepScaling:
    """How the time per optimizer step grew from the smallest to the largest CPU batch size.

    `overhead_bound`: the step time grew by less than half the growth of the samples per step,
    so a fixed per-step cost (Python, dispatch) dominates at small batches.
    """

    smallest_batch: PositiveCount
    largest_batch: PositiveCount
    samples_ratio: Positive
    step_time_ratio: Positive
    overhead_bound: bool


@record
class MemoryCheck:
    """The memory a training job of this model needs against what the machines have.

    `bound_bytes` = Adam fp32 state + forward and backward activations at the largest batch size
    + the data matrix held in memory. `fits_*` is None where the capacity is unknown.
    """

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
    """Each device's fastest full path of one epoch, the GPU with its fixed start-up."""

    cpu: FullPathRow
    gpu: FullPathRow
    speedup: Positive
    speedup_low: Positive
    speedup_high: Positive
    speedup_without_startup: Positive
    spreads_overlap: bool
    threshold: Positive
    gpu_wins: bool
    break_even_epochs: NonNegative | None  # epochs after which the start-up is repaid; None: never


@record
class Verdict:
    """CPU or GPU, the outcome code that says why, and the figures the report states."""

    device: Literal["CPU", "GPU"]
    outcome: Outcome
    gpu_measured: bool
    gpu: GpuVisibility
    threshold: Positive
    fastest_cpu_path: FullPathRow
    fastest_cpu_epoch: FastestEpoch
    scaling: StepScaling | None  # None with a single CPU batch size
    memory: MemoryCheck
    comparison: DeviceComparison | None

    def __post_init__(self) -> None:
        if (self.device == "GPU") != (self.outcome == "gpu_pays_off"):
            raise ValueError(f"device {self.device} with outcome {self.outcome}")
        if self.gpu_measured != (self.comparison is not None):
            raise ValueError("a comparison exists exactly when a GPU was measured")


@record
class GpuMemory(VariantFields):
    """A GPU cell's measured peak memory against the bound the formulas give for it."""

    peak_bytes: Count | None
    bound_bytes: Count  # Adam fp32 + forward and backward activations + the resident matrix where data live there
    peak_over_bound: NonNegative | None


@record(schema="decision")
class Decision:
    """tables/decision.json: the verdict, the decision sheet and the full path it rests on."""

    verdict: Verdict
    sheet: tuple[SheetStep, ...]
    full_path: tuple[FullPathRow, ...]
    gpu_memory: tuple[GpuMemory, ...]
    environment: Environment


@record(schema="full-path")
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


@record(schema="theory")
class TheoryTable:
    """tables/theory.json: parameters, Adam state and per-batch estimates of the benchmark model."""

    widths: tuple[PositiveCount, ...]
    params: Count
    adam_fp32_bytes: Count
    input_bytes: Count
    rows: PositiveCount
    bandwidth_gb_s: Positive
    input_transfer_s_assumed: NonNegative
    table: tuple[TheoryRow, ...]


@record
class DataRow:
    """One dataset: its size, balance and the hashes of its exported files."""

    dataset: str
    rows: PositiveCount
    features: PositiveCount
    positive_rate: NonNegative
    matrix_sha256: str
    parquet_bytes: Count
    parquet_sha256: str
    csv_bytes: Count
    csv_sha256: str


@record(schema="data-table")
class DataTable:
    """tables/data.json: the datasets of this run."""

    table: tuple[DataRow, ...]


@record(schema="decision-sheet")
class DecisionSheet:
    """tables/decision_sheet.json: the six steps (the same as in decision.json), on their own."""

    steps: tuple[SheetStep, ...]
