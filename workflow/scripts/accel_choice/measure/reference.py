"""The reference a training cell is checked against (issue 25, accuracy; GPU cells: issue 42 item 5): the
plain loop a user writes - `zero_grad`, forward, loss, `backward`, `step` over the same loader - timed by
`torch.utils.benchmark.Timer`, not by this project's clock, in the same timing job as the cell and
interleaved with its epochs (measure.training.measure_interleaved). A cell's epoch over its reference
(analyze.aggregate.versus_reference) is what the harness adds to, or takes from, the user's loop:
1.0 is an accurate harness, whatever the machine. The CPU cells have one, and so has a GPU job's eager fp32
resident variant: its model and data on the device, batches sliced there, as a user's loop has them.

The Timer reads `clock(device)`: the device synchronised, then `time.perf_counter()` (torch's own default
synchronises whichever accelerator `torch.accelerator` sees, CUDA included, and would start CUDA in a CPU
job on a GPU machine; this one touches only the variant's device).

The reference shares only the model, optimizer and loss factories and the loader with the pipeline
(the same work); its loop, its state and its clock are its own. Like a user's loop it trains on from
epoch to epoch (the pipeline starts each timed epoch from the seeded weights: the same shapes, so
the same work). `Timer.timeit(number)` warms up by running the statement twice, then times `number`
runs and reports their mean: a job times the reference once, in its middle round (measure.training),
beside the variant's own epoch of that round, as the mean of EPOCHS epochs (one epoch alone moved the
per-job ratio by up to 15 % on a quiet 2-core VM; the pipeline's side is a median of the job's epochs).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from torch.utils import benchmark

from accel_choice.measure.devices import synchronize
from accel_choice.measure.loaders import make_loader
from accel_choice.measure.model import build, make_loss, make_optimizer, outputs
from accel_choice.measure.placement import placed
from accel_choice.records.launch import launch_checked
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import Variant

EPOCHS = 3  # timed epochs of a reference per job (after the Timer's two warm-up runs)


def has_reference(variant: Variant) -> bool:
    """Variants with a plain-loop reference: eager fp32 on host data (the CPU cells) and eager fp32 resident
    on the device (a GPU job's, records.launch.launch_checked). Autocast, a scaler, streamed or prefetched
    batches and a compiled forward are not a plain loop's."""
    on_host = variant.device == "cpu" and variant.placement == "host"
    return (on_host and variant.precision == "fp32" and not variant.compiled) or launch_checked(variant)


def clock(device: torch.device) -> Callable[[], float]:
    """`time.perf_counter()` read after the device's queued work is done (a no-op wait on the CPU)."""

    def read() -> float:
        synchronize(device)
        return time.perf_counter()

    return read


def plain_epoch(variant: Variant, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec, seed: int) -> Callable[[], None]:
    """One epoch of the plain loop over `variant`'s loader (x, y host tensors, y as the loss takes it), on the
    variant's device: a resident variant's data copied there first, its batches sliced there."""
    device = torch.device(variant.device)
    model = build(spec, x.shape[1:], seed).to(device)
    optimizer = make_optimizer(model, spec.lr, device, spec.optimizer)
    loss_fn = make_loss(spec)
    loader = make_loader(variant.loader, *placed(variant, x, y), variant.batch_size, shuffle=True, seed=seed)
    model.train()

    def epoch() -> None:
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(outputs(spec, model(xb), yb), yb)
            loss.backward()
            optimizer.step()

    return epoch


class Reference:
    """The plain loop of one variant under a Timer; `time()` is its seconds per epoch."""

    def __init__(self, variant: Variant, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec, seed: int):
        if not has_reference(variant):
            raise ValueError(f"{variant.name}: only eager fp32 host or resident variants have a plain-loop reference")
        epoch = plain_epoch(variant, x, y, spec, seed)
        self.timer = benchmark.Timer(
            stmt="epoch()",
            timer=clock(torch.device(variant.device)),
            globals={"epoch": epoch},
            num_threads=variant.threads,
            label="plain loop",
            description=variant.name,
        )

    def time(self) -> float:
        """Seconds per epoch, the mean of EPOCHS (torch.utils.benchmark with `clock`: the device synchronised
        before each `time.perf_counter` read, none inside the loop; torch's threads set to the variant's)."""
        return float(self.timer.timeit(number=EPOCHS).median)
