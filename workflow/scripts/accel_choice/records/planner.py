"""The planner's tables: the FLOP check and exercise 4's scenario (the cost model's table is in
records.cost_model, re-exported here; the break-even curves are in records.breakeven, the workloads
and timing jobs of the grid the cost model is fitted to in records.grid).
"""

from __future__ import annotations

import math

from accel_choice.records import Count, NonNegativeSeconds, Positive, PositiveCount, Seconds, record
from accel_choice.records.breakeven import ModelSource
from accel_choice.records.cost_model import CopyMemory as CopyMemory
from accel_choice.records.cost_model import CostModelTable as CostModelTable
from accel_choice.records.cost_model import FitPoint as FitPoint
from accel_choice.records.cost_model import ModelRow as ModelRow
from accel_choice.records.cost_model import Residual as Residual
from accel_choice.records.cost_model import Source as Source
from accel_choice.records.cost_model import TERMS as TERMS
from accel_choice.records.grid import Workload, steps_per_epoch


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
