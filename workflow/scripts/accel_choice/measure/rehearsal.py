"""Rehearse a variant's update before its timed epoch, then put everything it changed back.

A job times its variants interleaved: each timed epoch follows another variant's epoch.
That epoch left the caches holding its own data and code, so the next one's first steps ran cold.
A user's loop runs its epochs back to back and is warm from its second epoch on.
On the 2-vCPU VM the cold start cost the fast path at B=512 (13 steps an epoch) about 15 %
against the plain loop timed warm (docs/statistics.md, "Warm epochs in interleaved rounds").

So before the clock starts, `rehearse` runs a few untimed updates of the variant on its fresh model.
Then it restores the weights and buffers, the optimizer's and the scaler's state, the gradients and the
random streams, all in place: the timed epoch starts where it would have started without them.
The caller checks the weights' hash after it (measure.training.time_epoch), and runs it as the epoch's
compiled code runs: a recompilation there is an error. A plain Python attribute a model changes in its
forward is not put back: no model of the project's keeps one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import torch

from accel_choice.measure.devices import synchronize
from accel_choice.measure.loaders import Batch
from accel_choice.measure.steps import Trainer

# Untimed updates before each timed epoch: 8 closed most of the cold start in one process (2026-12-08).
REHEARSAL_STEPS = 8


def rehearse(trainer: Trainer, batches: Iterable[Batch], steps: int = REHEARSAL_STEPS) -> int:
    """Run up to `steps` updates untimed, then restore what they changed; return the updates run."""
    model, optimizer = trainer.model, trainer.optimizer
    model.train()  # the mode the timed epoch runs in (steps.train_epoch), whatever mode the model came in
    held = _tensors(model)
    weights = {name: tensor.detach().clone() for name, tensor in held.items()}
    state = {param: _copied(values) for param, values in optimizer.state.items()}
    scaler = trainer.scaler.state_dict() if trainer.scaler.is_enabled() else None
    device = trainer.device
    streams = [device] if device.type in ("cuda", "mps") else []
    ran = 0
    # dropout's masks: the timed epoch draws the same ones (the CPU's stream, and the device's)
    with torch.random.fork_rng(devices=streams, device_type=device.type if streams else "cuda"):
        for xb, yb in itertools.islice(batches, steps):  # no batch fetched beyond the last one used
            trainer.step(xb, yb)
            ran += 1
    with torch.no_grad():
        for name, tensor in held.items():
            tensor.copy_(weights[name])
        for param, values in optimizer.state.items():
            _restore(values, state.get(param, {}))
    if scaler is not None:
        trainer.scaler.load_state_dict(scaler)
    optimizer.zero_grad(set_to_none=True)
    synchronize(trainer.device)
    return ran


def _tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Return every parameter and buffer, non-persistent buffers too (a state_dict leaves those out)."""
    found = dict(model.named_parameters(remove_duplicate=False))
    found.update(model.named_buffers(remove_duplicate=False))
    return found


def _copied(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value.detach().clone() if torch.is_tensor(value) else value for key, value in values.items()}


def _restore(values: dict[str, Any], saved: dict[str, Any]) -> None:
    """Put one parameter's optimizer state back in place; drop what the rehearsal added."""
    for key in [key for key in values if key not in saved]:
        del values[key]
    for key, value in saved.items():
        if torch.is_tensor(value) and torch.is_tensor(values.get(key)):
            values[key].copy_(value)
        else:
            values[key] = value
