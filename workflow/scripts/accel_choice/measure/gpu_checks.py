"""The launch checks of a GPU job's eager fp32 resident variant (issue 42 item 5, records.launch): what one
training step costs the device itself, beside what it costs the job.

- **The launch floor**: one whole training step (forward, loss, backward, the optimizer's step) captured as
  a CUDA graph, as PyTorch's CUDA Graphs notes capture a whole network: warmed up on a side stream, the
  gradients set to None before the capture (backward then allocates them from the graph's private pool),
  Adam and AdamW `capturable=True`, a static batch. Replaying it launches every kernel at once, so its time
  per step is the device's own, free of the host's Python and dispatch.
- **The eager step** on the same static batch, timed the same way (`seconds_per_step`): the host's dispatch
  included, the loader's work not. On the CPU, where there are no CUDA graphs, it is what the same code
  times, and the floor is null with its status.
- **The kernels one warmed step launches**, counted by torch.profiler (CUDA: the kernels; the CPU twin: the
  aten ops), with the device time they sum to. The profiler is on only here, after every clock.

Clocks: `time.perf_counter()`, the device synchronised before each read and never inside a timed loop;
everything timed is warmed up first. The checks run after the job's epochs (measure.training) on a fresh
model from the same seed: they change no timed variant's weights.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from accel_choice.analyze import theory
from accel_choice.measure.devices import synchronize
from accel_choice.measure.model import build, make_loss, make_optimizer, outputs
from accel_choice.measure.placement import placed, variant_batches
from accel_choice.records.launch import LaunchChecks, launch_checked
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import Variant

log = logging.getLogger(__name__)

ROUNDS = 3  # timed rounds of the floor and of the eager step; each records their median
MAX_STEPS = 256  # steps per timed round: the epoch's, at most this many (microseconds each: well above the clock)
CAPTURE_WARMUP = 3  # eager steps on a side stream before the capture (PyTorch's whole-network example)


class StaticStep:
    """One training step of a variant on one static batch - a fresh seeded model, its optimizer (capturable on
    CUDA), the first batch of the variant's loader copied to fixed addresses - as a graph captures it."""

    def __init__(self, variant: Variant, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec, seed: int):
        self.device, self.spec = torch.device(variant.device), spec
        self.model = build(spec, x.shape[1:], seed).to(self.device)
        self.model.train()
        capturable = self.device.type == "cuda"  # Adam's capturable state lives on CUDA devices only
        self.optimizer = make_optimizer(self.model, spec.lr, self.device, spec.optimizer, capturable=capturable)
        self.loss_fn = make_loss(spec)
        first = next(iter(variant_batches(variant, x, y, placed(variant, x, y), shuffle=True, seed=seed)))
        self.x, self.y = (tensor.clone() for tensor in first)

    def forward_backward_step(self) -> torch.Tensor:
        """Forward, loss, backward and the optimizer's step: what the graph captures."""
        loss = self.loss_fn(outputs(self.spec, self.model(self.x), self.y), self.y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def eager(self) -> torch.Tensor:
        """Return the whole step as a user's loop runs it: zero_grad, then forward, loss, backward, step."""
        self.optimizer.zero_grad(set_to_none=True)
        return self.forward_backward_step()


def capture(step: StaticStep, warmup: int = CAPTURE_WARMUP) -> torch.cuda.CUDAGraph:
    """Capture the whole step as a CUDA graph.

    The whole step captured as a CUDA graph, after `warmup` eager steps on a side stream (the optimizer's
    lazy state and the allocator's blocks made outside the capture)."""
    side, current = torch.cuda.Stream(step.device), torch.cuda.current_stream(step.device)
    side.wait_stream(current)
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step.eager()
    current.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    step.optimizer.zero_grad(set_to_none=True)  # backward allocates the gradients from the graph's pool
    with torch.cuda.graph(graph):
        step.forward_backward_step()
    return graph


def seconds_per_step(run: Callable[[], Any], device: torch.device, steps: int, rounds: int = ROUNDS) -> float:
    """Time `run`: the median over `rounds` of one round's seconds per call.

    The median over `rounds` of one round's seconds per call of `run`: one untimed round first, then each
    round's `steps` calls between two clock reads, the device synchronised before each read only."""
    for _ in range(steps):
        run()
    per_step = []
    for _ in range(rounds):
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            run()
        synchronize(device)
        per_step.append((time.perf_counter() - t0) / steps)
    return statistics.median(per_step)


def count_kernels(run: Callable[[], Any], device: torch.device) -> tuple[int | None, float | None]:
    """Count what one call of `run` launched, and the device time it sums to.

    What one call of `run` launched, by torch.profiler, and the device time it sums to: on CUDA the
    device's activities (kernels, copies, memsets) and their durations; elsewhere the aten ops and their
    self CPU time. (None, None) where the profiler reported none (CUPTI unavailable). No clock runs here."""
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    synchronize(device)
    with profile(activities=activities) as profiler:
        run()
        synchronize(device)
    if cuda:
        found = [e for e in profiler.events() if e.device_type == DeviceType.CUDA]
        seconds = sum(e.time_range.elapsed_us() for e in found) * 1e-6
    else:
        found = [e for e in profiler.events() if e.device_type == DeviceType.CPU and e.name.startswith("aten::")]
        seconds = sum(e.self_cpu_time_total for e in found) * 1e-6
    return (len(found), seconds) if found else (None, None)


def launch_checks(variant: Variant, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec, seed: int) -> LaunchChecks:
    """Run the launch checks of an eager fp32 resident variant.

    The eager step timed, the same step replayed as a CUDA graph and timed (CUDA only), then one warmed
    eager step's launches counted, for an eager fp32 resident variant (x, y host tensors, y as the loss takes
    it). A step that cannot be captured (a host sync or a CPU tensor in the model's code) is logged and
    recorded as capture_failed; the job goes on."""
    if not launch_checked(variant):
        raise ValueError(f"{variant.name}: only eager fp32 resident variants get the launch checks")
    step = StaticStep(variant, x, y, spec, seed)
    device, steps = step.device, min(theory.steps_per_epoch(x.shape[0], variant.batch_size), MAX_STEPS)
    eager_s = seconds_per_step(step.eager, device, steps)
    floor_s, status = None, "no_cuda_graphs"
    if device.type == "cuda":
        try:
            graph = capture(step)
        except RuntimeError as error:  # what torch raises for an operation a capture cannot hold
            log.warning("%s: the training step could not be captured as a CUDA graph: %s", variant.name, error)
            status = "capture_failed"
        else:
            floor_s, status = seconds_per_step(graph.replay, device, steps), "replayed"
            del graph  # its private memory pool goes with it
    kernels, kernel_s = count_kernels(step.eager, device)
    return LaunchChecks(
        status=status,
        launch_floor_step_s=floor_s,
        eager_step_s=eager_s,
        replay_steps=steps,
        counted="cuda_kernels" if device.type == "cuda" else "cpu_ops",
        step_kernels=kernels,
        step_kernels_device_s=kernel_s,
    )
