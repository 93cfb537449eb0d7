"""What the measured times cost at the user's prices (`cost.per_hour`, `cost.currency`).

results/tables/cost.json: per device, the fastest one-epoch full path (start-up included, as the
verdict compares them) and the fastest Northstar run to its target, each at the device's price per
hour; and whether the faster device is also the cheaper one, decided by intervals.
"""

from __future__ import annotations

from typing import Literal

from accel_choice.records import Fraction, Positive, record
from accel_choice.records.estimate import Estimate, PositiveEstimate
from accel_choice.records.fullpath import FullPathRow

# gpu_cheaper / cpu_cheaper: the whole interval of the cost ratio lies on one side of 1 (per epoch),
# or the two devices' intervals do not overlap (to target); no_difference otherwise.
CostOutcome = Literal["gpu_cheaper", "cpu_cheaper", "no_difference"]


@record
class CostLine:
    """One device: its price, and what its fastest measured paths cost at it."""

    device: str  # "cpu", or the GPU's kind ("cuda", "mps")
    per_hour: Positive
    path: FullPathRow  # the fastest one-epoch full path; its total with start-up is what the speedup compares
    epoch_cost: Positive  # path.total_with_startup_s at per_hour
    target_run: str | None  # the device's fastest Northstar run to the target; null: none reached it
    target_s: PositiveEstimate | None  # the run's time to target (records.time_to_target), its interval
    target_cost: PositiveEstimate | None  # target_s at per_hour

    def __post_init__(self) -> None:
        if self.path.device != self.device:
            raise ValueError(f"a {self.path.device} path on the {self.device} line")
        if abs(self.epoch_cost - self.path.total_with_startup_s * self.per_hour / 3600) > 1e-9 * self.epoch_cost:
            raise ValueError(f"epoch_cost {self.epoch_cost} is not the path's total with start-up × per_hour / 3600")
        target = (self.target_s, self.target_cost)
        if (self.target_run is None) != (None in target):
            raise ValueError(f"target_run {self.target_run!r} with time and cost {target}")


@record(schema="cost", version=4)
class CostTable:
    """tables/cost.json: the cost lines and, where a GPU was measured and priced, the comparison."""

    currency: str
    lines: tuple[CostLine, ...]
    unpriced: tuple[str, ...]  # devices measured without a price in cost.per_hour
    confidence: Fraction
    # GPU over CPU, per one-epoch full path: price ratio / speedup, its interval from the speedup's.
    speedup: Estimate | None  # the decision's CPU/GPU speedup
    price_ratio: Positive | None
    cost_ratio: Estimate | None  # price_ratio / speedup, its ends from the speedup's
    epoch_outcome: CostOutcome | None
    target_outcome: CostOutcome | None  # null: a device without a run to the target

    def __post_init__(self) -> None:
        devices = [line.device for line in self.lines]
        if not devices or devices[0] != "cpu" or len(set(devices)) != len(devices):
            raise ValueError(f"lines are for {devices}: the CPU first, each device once")
        compared = (self.speedup, self.price_ratio, self.cost_ratio, self.epoch_outcome)
        if (len(devices) == 2) != (None not in compared):
            raise ValueError(f"{len(devices)} device(s) priced but comparison {compared}")
        for name, estimate in (("speedup", self.speedup), ("cost_ratio", self.cost_ratio)):
            if estimate is not None and estimate.low <= 0:
                raise ValueError(f"{name} {estimate!r} must be positive")
