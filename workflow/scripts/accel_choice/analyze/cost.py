"""Cost per epoch and per time-to-target at the user's prices, and whether the faster device is
also the cheaper one: decided by intervals, never by two medians alone.

Per epoch: the GPU's cost over the CPU's is price ratio / the speedup of each further epoch (training and
evaluation, DeviceComparison.speedup_per_epoch), so its interval is the price ratio over that speedup's
interval (the prices are exact). To target: each device's
fastest run has its own interval of seconds; one device is cheaper only when the two cost
intervals do not overlap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from accel_choice.records.cost import CostLine, CostOutcome, CostTable
from accel_choice.records.decision import DeviceComparison
from accel_choice.records.estimate import Estimate
from accel_choice.records.time_to_target import TargetRow, TimeToTarget
from accel_choice.records.fullpath import FullPathRow

HOUR = 3600.0


def _fastest_to_target(target: TimeToTarget | None, device: str) -> TargetRow | None:
    if target is None:
        return None
    reached = [r for r in target.rows if r.device == device and r.reached and r.seconds is not None]
    return min(reached, key=lambda r: r.seconds.point if r.seconds else 0.0, default=None)


def cost_line(device: str, per_hour: float, path: FullPathRow, target: TimeToTarget | None) -> CostLine:
    run = _fastest_to_target(target, device)
    price = per_hour / HOUR
    return CostLine(
        device=device,
        per_hour=per_hour,
        path=path,
        epoch_cost=path.total_with_startup_s * price,
        target_run=run.run if run else None,
        target_s=run.seconds if run else None,
        target_cost=run.seconds.scaled(price) if run and run.seconds else None,
    )


def side_of_one(low: float, high: float) -> CostOutcome:
    """GPU cost over CPU cost: the GPU cheaper when the whole interval lies below 1."""
    if high < 1:
        return "gpu_cheaper"
    if low > 1:
        return "cpu_cheaper"
    return "no_difference"


def disjoint(cpu: CostLine, gpu: CostLine) -> CostOutcome | None:
    if cpu.target_cost is None or gpu.target_cost is None:
        return None
    if gpu.target_cost.high < cpu.target_cost.low:
        return "gpu_cheaper"
    if cpu.target_cost.high < gpu.target_cost.low:
        return "cpu_cheaper"
    return "no_difference"


def cost_table(
    full_path: Sequence[FullPathRow],
    comparison: DeviceComparison | None,
    per_hour: Mapping[str, float],
    currency: str,
    target: TimeToTarget | None = None,
    confidence: float = 0.95,
) -> CostTable:
    """Build the cost table: the CPU's line, the GPU's and the comparison between them.

    The CPU's line (its fastest one-epoch full path, start-up included, as the verdict compares
    paths), the GPU's where it was measured (`comparison`, the verdict's) and priced, and the
    comparison between them; `confidence`: the level of the intervals."""
    if "cpu" not in per_hour:
        raise ValueError(f"config key cost.per_hour: no price for the cpu; found {sorted(per_hour)}")
    cpu_path = min((r for r in full_path if r.device == "cpu"), key=lambda r: r.total_with_startup_s)
    lines = [cost_line("cpu", per_hour["cpu"], cpu_path, target)]
    gpu_price = per_hour.get(comparison.gpu.device) if comparison else None
    if comparison is None or gpu_price is None:
        return CostTable(
            currency=currency,
            lines=tuple(lines),
            unpriced=(comparison.gpu.device,) if comparison else (),
            confidence=confidence,
            speedup=None,
            price_ratio=None,
            cost_ratio=None,
            epoch_outcome=None,
            target_outcome=None,
        )
    gpu = cost_line(comparison.gpu.device, gpu_price, comparison.gpu, target)
    price_ratio = gpu_price / per_hour["cpu"]
    low, high = price_ratio / comparison.speedup_per_epoch.high, price_ratio / comparison.speedup_per_epoch.low
    return CostTable(
        currency=currency,
        lines=(lines[0], gpu),
        unpriced=(),
        confidence=comparison.speedup_per_epoch.level,
        speedup=comparison.speedup_per_epoch,
        price_ratio=price_ratio,
        cost_ratio=Estimate(
            point=price_ratio / comparison.speedup_per_epoch.point,
            low=low,
            high=high,
            level=comparison.speedup_per_epoch.level,
            method=f"price ratio over the speedup's interval ({comparison.speedup_per_epoch.method})",
            jobs=comparison.speedup_per_epoch.jobs,
        ),
        epoch_outcome=side_of_one(low, high),
        target_outcome=disjoint(lines[0], gpu),
    )
