"""What the model could take in: the training step's own samples per second at the scale scenario's
width (features → hidden → 1, Adam on BCE, fp32), on batches already in memory - the rate a
streaming reader has to sustain for the step, not the reader, to set the pace.

`blocks` timed blocks of `steps` steps each, after a warm-up of the same length (allocator, kernels,
Adam's state): a block's samples over its seconds is one chunk of the rate's interval. On a GPU the
device is synchronised before every clock read and never inside a block, the batches are resident
(the copy is timed on its own: `copy_rate`, each pinned batch copied once), so the step rate is the
device's alone.
"""

from __future__ import annotations

import time

import torch

from accel_choice.analyze.scale import rate
from accel_choice.measure.devices import synchronize
from accel_choice.measure.model import build_model
from accel_choice.measure.steps import Trainer
from accel_choice.records.model import ModelSpec
from accel_choice.records.scale import Rate

BATCHES = 16  # distinct batches the steps cycle through


def _batches(
    features: int, batch_size: int, seed: int, device: torch.device
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCHES, batch_size, features, generator=generator)
    y = (x[..., 0] > 0).float()
    return [(x[i].to(device), y[i].to(device)) for i in range(BATCHES)]


def step_rate(
    device: torch.device, features: int, hidden: int, batch_size: int, *, steps: int, blocks: int, seed: int
) -> Rate:
    """Samples per second of training steps on in-memory batches (see the module's text)."""
    model = build_model(features, hidden, seed).to(device)
    trainer = Trainer(model, ModelSpec(hidden=hidden, lr=1e-3), device)  # an eager fp32 step
    trainer.prime()
    batches = _batches(features, batch_size, seed, device)
    for i in range(steps):  # warm-up: as long as a timed block
        trainer.step(*batches[i % BATCHES])
    amounts, seconds = [], []
    for _ in range(blocks):
        synchronize(device)
        start = time.perf_counter()
        for i in range(steps):
            trainer.step(*batches[i % BATCHES])
        synchronize(device)
        seconds.append(time.perf_counter() - start)
        amounts.append(float(steps * batch_size))
    return rate(amounts, seconds)


def copy_rate(device: torch.device, features: int, batch_size: int, *, copies: int, blocks: int, seed: int) -> Rate:
    """Bytes per second of host→device copies of pinned batches (features and target), one per batch."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCHES, batch_size, features + 1, generator=generator).pin_memory()
    for i in range(copies):
        x[i % BATCHES].to(device, non_blocking=True)
    amounts, seconds = [], []
    for _ in range(blocks):
        synchronize(device)
        start = time.perf_counter()
        for i in range(copies):
            x[i % BATCHES].to(device, non_blocking=True)
        synchronize(device)
        seconds.append(time.perf_counter() - start)
        amounts.append(float(copies * x[0].numel() * 4))
    return rate(amounts, seconds)
