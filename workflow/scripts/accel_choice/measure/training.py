"""One timing job: warm up, time one training epoch and one evaluation pass per variant.

A variant is (loader, precision, placement): the CPU job runs every loader in fp32 on host
data; a GPU job runs fp32/fp16/bf16 with data resident on the device (sliced there) or
streamed from the host batch by batch. Measurement discipline (torch.utils.benchmark's,
applied to a whole epoch):
- `time.perf_counter()` around the loop, the device synchronized before each clock read;
- a warm-up on a throw-away copy of the model, so first-call costs (allocator, kernel
  selection, Adam's lazy state) are paid before the clock starts and the timed model
  still starts from the seeded initial weights;
- the load average before and after, the CPU that other processes took during the job
  (`foreign_cpu_share`, from /proc/stat), the process CPU time and (CUDA) the peak
  memory, kept in every record;
- the invariants of section 28.3.5 checked on every record;
- non-finite losses caught without a host sync per step: each step's loss is stored in a
  device buffer and inspected after the clock stops. A non-finite gradient surfaces there
  too: Adam turns it into non-finite weights, hence a non-finite next loss (or non-finite
  final weights, which are checked); with a GradScaler an inf gradient only skips the step.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from typing import Any

import torch

from accel_choice.analyze import theory
from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.measure.devices import peak_memory_bytes, reset_peak_memory, synchronize
from accel_choice.measure.model import build_model, state_sha256
from accel_choice.measure.steps import Trainer, Variant, batches, evaluate, train_epoch, warm_up
from accel_choice.records.training import Invariants, TrainingRecord


class InvariantError(AssertionError):
    """A timing record broke an invariant: the measurement, not the machine, is wrong."""


def load_average() -> list[float]:
    return list(os.getloadavg())


def check_invariants(record: dict[str, Any], rows: int) -> dict[str, bool]:
    """Section 28.3.5: samples == n every epoch; samples_per_s == samples / epoch_s."""
    checks = {
        "samples_eq_rows": record["samples"] == rows,
        "eval_samples_eq_rows": record["eval_samples"] == rows,
        "steps_eq_ceil_rows_over_batch": record["steps"] == theory.steps_per_epoch(rows, record["batch_size"]),
        "samples_per_s_eq_samples_over_epoch_s": record["epoch_s"] > 0
        and math.isclose(record["samples_per_s"], record["samples"] / record["epoch_s"], rel_tol=1e-12),
    }
    broken = [name for name, ok in checks.items() if not ok]
    if broken:
        raise InvariantError(
            f"batch_size={record['batch_size']} loader={record['loader']}: invariant(s) broken: {', '.join(broken)} "
            f"(samples={record['samples']}, rows={rows}, steps={record['steps']}, epoch_s={record['epoch_s']})"
        )
    return checks


def measure_variant(
    variant: Variant,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    *,
    seed: int,
    hidden: int,
    lr: float,
    warmup_steps: int,
    device: torch.device,
    x_device: torch.Tensor | None = None,
    y_device: torch.Tensor | None = None,
) -> dict[str, Any]:
    """Warm up, then time one epoch and one evaluation pass for one variant.

    `x`, `y` are host tensors; `x_device`, `y_device` the same data already on `device`
    (used by the resident placement).
    """
    x_device = x if x_device is None else x_device
    y_device = y if y_device is None else y_device
    model = build_model(x.shape[1], hidden, seed).to(device)
    initial_sha = state_sha256(model)
    reset_peak_memory(device)
    warm = warm_up(
        model,
        lr,
        variant,
        device,
        batches(variant, x, y, batch_size, True, seed + 1, device, x_device, y_device),
        warmup_steps,
    )
    trainer = Trainer(model, lr, variant, device)
    # The same loader seed for every variant: identical batches, so identical work.
    train_batches = batches(variant, x, y, batch_size, True, seed, device, x_device, y_device)
    eval_batches = batches(variant, x, y, batch_size, False, seed, device, x_device, y_device)

    load_before = load_average()
    epoch = train_epoch(trainer, train_batches, theory.steps_per_epoch(x.shape[0], batch_size))
    evaluation = evaluate(trainer, eval_batches)
    load_after = load_average()

    record: dict[str, Any] = {
        "batch_size": batch_size,
        "loader": variant.loader,
        "device": device.type,
        "precision": variant.precision,
        "placement": variant.placement,
        "grad_scaler": variant.uses_scaler,
        "samples": epoch.samples,
        "steps": epoch.steps,
        "epoch_s": epoch.seconds,
        "samples_per_s": epoch.samples / epoch.seconds,
        "epoch_cpu_s": epoch.cpu_seconds,
        "eval_s": evaluation.seconds,
        "eval_samples": evaluation.samples,
        "eval_loss": evaluation.loss,
        "eval_accuracy": evaluation.accuracy,
        "final_loss": epoch.last_loss,
        "mean_train_loss": epoch.mean_loss,
        "finite": epoch.finite,
        "nonfinite_step": epoch.nonfinite_step,
        "peak_memory_bytes": peak_memory_bytes(device),
        "warmup_steps": warm.steps,
        "warmup_first_step_s": warm.first_step_s,
        "warmup_steady_step_s": warm.steady_step_s,
        "threads": torch.get_num_threads(),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "initial_weights_sha256": initial_sha,
        "final_weights_sha256": state_sha256(model),
    }
    record["invariants"] = check_invariants(record, x.shape[0])
    return record


def cpu_variants(loaders: Sequence[str]) -> list[Variant]:
    return [Variant(loader=loader, precision="fp32", placement="host") for loader in loaders]


def gpu_variants(precisions: Sequence[str], placements: Sequence[str], grad_scaler: bool) -> list[Variant]:
    return [
        Variant("fastpath", precision, placement, grad_scaler) for precision in precisions for placement in placements
    ]


def context_startup_seconds(device: torch.device) -> float | None:
    """The device runtime's one-off start-up (CUDA context), a fixed cost kept out of the epoch."""
    if device.type == "cpu":
        return None
    t0 = time.perf_counter()
    torch.zeros(1, device=device)
    synchronize(device)
    return time.perf_counter() - t0


def measure_training_job(
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    repeat: int,
    variants: Sequence[Variant],
    *,
    seed: int,
    hidden: int,
    lr: float,
    warmup_steps: int,
    device: str | torch.device = "cpu",
) -> list[TrainingRecord]:
    """Every variant once, in an order that alternates with the repeat so none always goes first."""
    if not 1 <= batch_size <= x.shape[0]:
        raise ValueError(f"batch size {batch_size} must be between 1 and the data's {x.shape[0]} rows")
    target = torch.device(device)
    startup = context_startup_seconds(target)
    y = y.reshape(-1, 1)
    order = list(variants) if repeat % 2 == 0 else list(reversed(variants))
    measured = []
    meter = ForeignCpuMeter().start()
    for variant in order:
        # A resident copy exists only while a resident variant runs, so it counts in that
        # variant's peak memory and in no other's.
        x_device, y_device = (x.to(target), y.to(target)) if variant.placement == "resident" else (None, None)
        measured.append(
            measure_variant(
                variant,
                x,
                y,
                batch_size,
                seed=seed,
                hidden=hidden,
                lr=lr,
                warmup_steps=warmup_steps,
                device=target,
                x_device=x_device,
                y_device=y_device,
            )
        )
        del x_device, y_device
    foreign = meter.stop()
    # Identical batches in identical order at one precision must give identical weights,
    # whatever the loader or placement: a check that the variants really did the same work.
    weights: dict[str, set[str]] = {}
    for result in measured:
        weights.setdefault(result["precision"], set()).add(result["final_weights_sha256"])
    return [
        training_record(
            result,
            repeat=repeat,
            position_in_job=position,
            context_startup_s=startup,
            foreign_cpu_share=foreign.share,
            same_final_weights_across_variants=len(weights[result["precision"]]) == 1,
        )
        for position, result in enumerate(measured)
    ]


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def training_record(measured: dict[str, Any], **job: Any) -> TrainingRecord:
    """The record of one measured variant (`measure_variant`) with what only its job knows
    (repeat, position, start-up, foreign CPU, whether all variants ended on the same weights).
    Losses that are not finite become null: JSON has no NaN, and `finite` says why."""
    losses = ("eval_loss", "eval_accuracy", "final_loss", "mean_train_loss")
    return TrainingRecord(
        **{
            key: value
            for key, value in measured.items()
            if key not in (*losses, "invariants", "loadavg_before", "loadavg_after")
        },
        **{key: _finite_or_none(measured[key]) for key in losses},
        loadavg_before=tuple(measured["loadavg_before"]),
        loadavg_after=tuple(measured["loadavg_after"]),
        invariants=Invariants(**measured["invariants"]),
        **job,
    )
