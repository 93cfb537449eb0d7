"""The planner's grid: one timed epoch per workload (rows × features × hidden × B) for the cost model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.measure.steps import Variant
from accel_choice.measure.training import context_startup_seconds, measure_variant
from accel_choice.records.grid import GridRecord, Workload
from accel_choice.records.training import Invariants


def synthetic_tensors(workload: Workload, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded standard-normal features and a 0/1 target: the cost of an epoch does not depend on the values."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(workload.rows, workload.features, generator=generator)
    y = (torch.randn(workload.rows, 1, generator=generator) > 0).float()
    return x, y


def measure_grid(
    workloads: Sequence[Workload], repeat: int, *, device: str, seed: int, lr: float, warmup_steps: int
) -> list[GridRecord]:
    """One timed epoch per workload (fast path, fp32; data resident on the device).

    The order alternates with the repeat, as in the main timing jobs, so that no workload
    always runs first or last.
    """
    target = torch.device(device)
    startup = context_startup_seconds(target)
    placement = "host" if target.type == "cpu" else "resident"
    variant = Variant(loader="fastpath", precision="fp32", placement=placement)
    order = list(workloads) if repeat % 2 == 0 else list(reversed(workloads))
    meter = ForeignCpuMeter().start()
    measured = []
    for workload in order:
        x, y = synthetic_tensors(workload, seed)
        x_device, y_device = x.to(target), y.to(target)
        measured.append(
            (
                workload,
                measure_variant(
                    variant,
                    x,
                    y,
                    workload.batch_size,
                    seed=seed,
                    hidden=workload.hidden,
                    lr=lr,
                    warmup_steps=warmup_steps,
                    device=target,
                    x_device=x_device,
                    y_device=y_device,
                ),
            )
        )
    foreign = meter.stop()
    return [
        grid_record(timed, workload, repeat=repeat, context_startup_s=startup, foreign_cpu_share=foreign.share)
        for workload, timed in measured
    ]


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def grid_record(
    timed: dict[str, Any],
    workload: Workload,
    *,
    repeat: int,
    context_startup_s: float | None,
    foreign_cpu_share: float | None,
) -> GridRecord:
    """The grid's record of one workload from measure_variant's result (a loss that is not finite is null)."""
    return GridRecord(
        **{
            **timed,
            "eval_loss": _finite_or_none(timed["eval_loss"]),
            "final_loss": _finite_or_none(timed["final_loss"]),
            "mean_train_loss": _finite_or_none(timed["mean_train_loss"]),
            "loadavg_before": tuple(timed["loadavg_before"]),
            "loadavg_after": tuple(timed["loadavg_after"]),
            "invariants": Invariants(**timed["invariants"]),
        },
        rows=workload.rows,
        features=workload.features,
        hidden=workload.hidden,
        repeat=repeat,
        context_startup_s=context_startup_s,
        foreign_cpu_share=foreign_cpu_share,
    )
