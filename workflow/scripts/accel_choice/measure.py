"""One CPU timing job: warm up, time one training epoch and one evaluation pass per loader.

Measurement discipline (torch.utils.benchmark's, applied to a whole epoch):
- `time.perf_counter()` around the loop; on CUDA a synchronize before each clock read;
- a warm-up on a throw-away copy of the model, so first-call costs (allocator, kernel
  selection, Adam's lazy state) are paid before the clock starts and the timed model
  still starts from the seeded initial weights;
- the load average before and after, and the process CPU time, kept in every record;
- the invariants of section 28.3.5 checked on every record.
"""

from __future__ import annotations

import copy
import math
import os
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from . import theory
from .loaders import Batch, make_loader
from .model import build_model, make_optimizer, state_sha256


class InvariantError(AssertionError):
    """A timing record broke an invariant: the measurement, not the machine, is wrong."""


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_average() -> list[float]:
    return list(os.getloadavg())


@dataclass
class EpochResult:
    samples: int
    steps: int
    seconds: float
    cpu_seconds: float
    last_loss: float
    mean_loss: float
    finite: bool


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn: nn.Module, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(xb), yb)
    loss.backward()
    optimizer.step()
    return loss.detach()


def train_epoch(
    model: nn.Module, optimizer: torch.optim.Optimizer, loss_fn: nn.Module, batches: Iterable[Batch], device: torch.device
) -> EpochResult:
    """Time one pass over `batches`, loader iteration included: that is part of the path."""
    model.train()
    samples = steps = 0
    loss_sum = torch.zeros((), device=device)
    last = loss_sum
    synchronize(device)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for xb, yb in batches:
        last = _step(model, optimizer, loss_fn, xb, yb)
        loss_sum += last * xb.shape[0]
        samples += xb.shape[0]
        steps += 1
    synchronize(device)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    params_finite = all(bool(torch.isfinite(p).all()) for p in model.parameters())
    mean_loss = float(loss_sum) / max(samples, 1)
    return EpochResult(samples, steps, seconds, cpu_seconds, float(last), mean_loss, params_finite and math.isfinite(mean_loss))


@dataclass
class EvalResult:
    samples: int
    seconds: float
    loss: float
    accuracy: float


def evaluate(model: nn.Module, loss_fn: nn.Module, batches: Iterable[Batch], device: torch.device) -> EvalResult:
    """One pass under `torch.no_grad()`; loss and accuracy at threshold 0.5 over all samples."""
    model.eval()
    samples = 0
    loss_sum = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.int64)
    synchronize(device)
    t0 = time.perf_counter()
    with torch.no_grad():
        for xb, yb in batches:
            logits = model(xb)
            loss_sum += loss_fn(logits, yb) * xb.shape[0]
            correct += ((logits > 0).to(yb.dtype) == yb).sum()
            samples += xb.shape[0]
    synchronize(device)
    seconds = time.perf_counter() - t0
    return EvalResult(samples, seconds, float(loss_sum) / max(samples, 1), int(correct) / max(samples, 1))


@dataclass
class WarmupResult:
    steps: int
    first_step_s: float
    steady_step_s: float


def warm_up(model: nn.Module, lr: float, loss_fn: nn.Module, batches: Iterable[Batch], steps: int, device: torch.device) -> WarmupResult:
    """Run `steps` optimizer steps on a copy of `model`, cycling through `batches`.

    Returns the first step's time and the median of the last half, so the report can show
    how large the first-call cost was that the warm-up kept out of the timed epoch.
    """
    shadow = copy.deepcopy(model)
    optimizer = make_optimizer(shadow, lr)
    times: list[float] = []
    while len(times) < steps:
        for xb, yb in batches:
            synchronize(device)
            t0 = time.perf_counter()
            _step(shadow, optimizer, loss_fn, xb, yb)
            synchronize(device)
            times.append(time.perf_counter() - t0)
            if len(times) >= steps:
                break
    steady = times[len(times) // 2 :]
    return WarmupResult(len(times), times[0], statistics.median(steady))


def check_invariants(record: dict[str, Any], rows: int) -> dict[str, bool]:
    """Section 28.3.5: samples == n every epoch; samples_per_s == samples / epoch_s."""
    checks = {
        "samples_eq_rows": record["samples"] == rows,
        "eval_samples_eq_rows": record["eval_samples"] == rows,
        "steps_eq_ceil_rows_over_batch": record["steps"] == theory.steps_per_epoch(rows, record["batch_size"]),
        "samples_per_s_eq_samples_over_epoch_s": math.isclose(
            record["samples_per_s"], record["samples"] / record["epoch_s"], rel_tol=1e-12
        ),
    }
    broken = [name for name, ok in checks.items() if not ok]
    if broken:
        raise InvariantError(
            f"batch_size={record['batch_size']} loader={record['loader']}: invariant(s) broken: {', '.join(broken)} "
            f"(samples={record['samples']}, rows={rows}, steps={record['steps']}, epoch_s={record['epoch_s']})"
        )
    return checks


def measure_loader(
    loader: str,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    *,
    seed: int,
    hidden: int,
    lr: float,
    warmup_steps: int,
    device: torch.device,
) -> dict[str, Any]:
    """Warm up, then time one epoch and one evaluation pass for one loader."""
    loss_fn = nn.BCEWithLogitsLoss()
    model = build_model(x.shape[1], hidden, seed).to(device)
    initial_sha = state_sha256(model)
    warm = warm_up(model, lr, loss_fn, make_loader(loader, x, y, batch_size, True, seed + 1), warmup_steps, device)
    optimizer = make_optimizer(model, lr)
    # The same loader seed for every loader kind: identical batches, so identical work.
    train_batches = make_loader(loader, x, y, batch_size, True, seed)
    eval_batches = make_loader(loader, x, y, batch_size, False, seed)

    load_before = load_average()
    epoch = train_epoch(model, optimizer, loss_fn, train_batches, device)
    evaluation = evaluate(model, loss_fn, eval_batches, device)
    load_after = load_average()

    record: dict[str, Any] = {
        "batch_size": batch_size,
        "loader": loader,
        "device": str(device),
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


def measure_training_job(
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    repeat: int,
    loaders: Sequence[str],
    *,
    seed: int,
    hidden: int,
    lr: float,
    warmup_steps: int,
    device: str = "cpu",
) -> list[dict[str, Any]]:
    """Every loader once, in an order that alternates with the repeat so neither always goes first."""
    if not 1 <= batch_size <= x.shape[0]:
        raise ValueError(f"batch size {batch_size} must be between 1 and the data's {x.shape[0]} rows")
    target_device = torch.device(device)
    x, y = x.to(target_device), y.reshape(-1, 1).to(target_device)
    order = list(loaders) if repeat % 2 == 0 else list(reversed(loaders))
    records = []
    for position, loader in enumerate(order):
        record = measure_loader(
            loader, x, y, batch_size, seed=seed, hidden=hidden, lr=lr, warmup_steps=warmup_steps, device=target_device
        )
        record.update(repeat=repeat, position_in_job=position)
        records.append(record)
    # Identical batches in identical order must give identical weights, whatever the loader.
    same_weights = len({r["final_weights_sha256"] for r in records}) == 1
    for record in records:
        record["same_final_weights_across_loaders"] = same_weights
    return records
