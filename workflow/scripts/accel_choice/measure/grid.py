"""The planner's grid: timed epochs per workload (rows × features × hidden × B) for the cost model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.measure.model import targets
from accel_choice.measure.sentinel import Sentinel
from accel_choice.measure.devices import context_startup_seconds
from accel_choice.measure.finite import finite_or_none
from accel_choice.measure.training import measure_interleaved, prepare_variant
from accel_choice.records.model import ModelSpec
from accel_choice.records.grid import GridRecord, Workload
from accel_choice.records.sentinel import SentinelReadings
from accel_choice.records.training import Invariants, Variant


def synthetic_tensors(workload: Workload, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded standard-normal features and a 0/1 target: the cost of an epoch does not depend on the values."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(workload.rows, workload.features, generator=generator)
    y = (torch.randn(workload.rows, 1, generator=generator) > 0).float()
    return x, y


def measure_grid(
    workloads: Sequence[Workload],
    repeat: int,
    *,
    device: str,
    seed: int,
    lr: float,
    warmup_steps: int,
    epochs: int = 1,
) -> tuple[list[GridRecord], SentinelReadings]:
    """Time the grid's workloads.

    `epochs` timed epochs per workload (fast path, fp32; data resident on the device), every
    workload warmed up first, then the rounds interleaved as in the main timing jobs (the order
    turns round from round to round and with the repeat) with the drift sentinel around them."""
    target = torch.device(device)
    startup = context_startup_seconds(target)
    placement = "host" if target.type == "cpu" else "resident"
    meter = ForeignCpuMeter().start()
    sentinel = Sentinel(target)
    prepared = []
    for workload in workloads:
        x, y = synthetic_tensors(workload, seed)
        spec = ModelSpec(hidden=workload.hidden, lr=lr)  # the textbook MLP at the workload's width
        prepared.append(
            prepare_variant(
                Variant(
                    device=target.type,
                    precision="fp32",
                    placement=placement,
                    loader="fastpath",
                    batch_size=workload.batch_size,
                    threads=torch.get_num_threads(),
                    compiled=False,
                ),
                x,
                targets(spec, y),
                grad_scaler=False,
                seed=seed,
                spec=spec,
                warmup_steps=warmup_steps,
            )
        )
    measured = measure_interleaved(prepared, epochs, repeat, sentinel)
    foreign = meter.stop()
    records = [
        grid_record(timed, workload, repeat=repeat, context_startup_s=startup, foreign_cpu_share=foreign.share)
        for workload, timed in zip(workloads, measured)
    ]
    return records, sentinel.readings()


def grid_record(
    timed: dict[str, Any],
    workload: Workload,
    *,
    repeat: int,
    context_startup_s: float | None,
    foreign_cpu_share: float | None,
) -> GridRecord:
    """Return the grid's record of one workload from measure_interleaved's result (a non-finite loss is null)."""
    left_out = ("final_weights_each", "position_in_job", "reference_epoch_s")  # what only a training job's record keeps
    return GridRecord(
        **{
            **{key: value for key, value in timed.items() if key not in left_out},
            "eval_loss": finite_or_none(timed["eval_loss"]),
            "final_loss": finite_or_none(timed["final_loss"]),
            "mean_train_loss": finite_or_none(timed["mean_train_loss"]),
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
