"""Measure a device profile's raw values: steps, dispatch, rates, copies and start-up, in interleaved rounds.

`measure(device_type, plan)` returns a RawProfile: every figure's values, one per round, with what the
record names of the device and its host. cli.profile turns it into a records.device_profile.DeviceProfile
(analyze.profile_draws makes each figure's estimate); this module imports no analysis.

The order is the timing discipline's. First the runtime's first call (`context_startup_s`, with CUDA
asked through NVML so nothing initialises it before the clock), then a fresh textbook MLP's first
training step (`first_step_s`: less the warm step's median, later). Then each step model's ops are
counted on the CPU (measure.op_count), and every figure is built, warmed and calibrated once: its
repetitions per value are fixed so that one value takes about `plan.target_s`. Then `plan.rounds`
rounds: each round times every figure once, the figures of a kind (the step models, the matmuls...)
in an order rotated by one from round to round, the kinds in a rotated order too. A step model's
value is seconds per step over N steps, the device synchronised before each clock read and never
between steps, each step's loss copied into a slot made before the clock (as steps.train_epoch does).

Needs torch alone: it runs on a bare GPU machine (docs/gpu.md) and on the CPU (its CPU twin).
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from accel_choice.measure import device_rates as rates
from accel_choice.measure import devices
from accel_choice.measure import model as models
from accel_choice.measure.op_count import count_step
from accel_choice.measure.steps import Trainer
from accel_choice.records.model import ModelSpec

SEED = 20261206
SPEC = ModelSpec(hidden=48, lr=1e-3)  # the textbook MLP's; a ladder model's loss (BCE) and Adam (fused)
TEXTBOOK = "textbook 32-48-1"
FEATURES = 32
REFERENCE_BATCHES = (32, 512)
LADDER_WIDTH, LADDER_BATCH = 4, 8
KiB, MiB = 1 << 10, 1 << 20
CPU = torch.device("cpu")
NO_DEVICE_ADVICE = "Run it where torch sees that device; --device cpu profiles this machine's CPU."


@dataclass(frozen=True)
class Plan:
    """Say what a profile measures and how long it times each value."""

    rounds: int
    target_s: float  # seconds one round's value of one figure is timed for (its reps are fixed once)
    warm_steps: int  # untimed steps of each step model before calibration (the first step costs ~19×)
    depths: tuple[int, ...]
    matmul_sizes: tuple[int, ...]
    bandwidth_bytes: tuple[int, ...]
    copy_bytes: tuple[int, ...]
    floor_kernels: int = 100  # kernels in the CUDA graph replayed for the kernel floor
    dispatch_warm: int = 1000
    max_reps: int = 1_000_000


def plan_for(device_type: str, quick: bool = False, rounds: int | None = None) -> Plan:
    """Return the full plan (half a minute on a 2-core CPU; planned: one to two on a GPU) or the quick one."""
    gpu = device_type != "cpu"
    if quick:
        plan = Plan(3, 0.004, 3, (1, 2, 4, 8), (64, 128), (1 * MiB,), (4 * KiB, 1 * MiB), floor_kernels=20)
    elif gpu:
        sizes = (256, 512, 1024, 2048, 4096)
        moved = (1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB, 256 * MiB)
        plan = Plan(9, 0.1, 20, (1, 2, 4, 8), sizes, moved, (4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB))
    else:
        plan = Plan(9, 0.15, 20, (1, 2, 4, 8), (128, 256, 512, 1024), (1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB), ())
    if rounds is not None:
        plan = Plan(**{**plan.__dict__, "rounds": rounds})
    return plan


@dataclass
class RawStep:
    """Hold a step model's values (seconds per step, one per round) and its counted ops and kernels."""

    model: str
    batch_size: int
    ops: int
    kernels: int
    seconds: list[float] = field(default_factory=list)


@dataclass
class RawProfile:
    """Hold every figure's raw values (one per round; start-up and first step: one a run) and the names."""

    device: dict[str, Any]  # name, device_type, capability, device_memory_bytes, driver, cuda
    host: dict[str, Any]  # host_cpu, host_cores, threads, torch_version
    machine: str  # the host's name: the label of every figure's values
    plan: Plan
    ladder: list[RawStep]
    reference_steps: list[RawStep]
    op_dispatch: list[float]
    kernel_floor: list[float] | None
    matmul: dict[tuple[int, str], list[float]]  # (n, precision): FLOP/s
    bandwidth: dict[int, list[float]]  # bytes: B/s (read and write counted)
    copies: dict[tuple[str, str, int], list[float]]  # (direction, memory, bytes): B/s
    context_startup_s: float
    first_step_raw_s: float  # the fresh model's first step, whole
    first_step_s: float  # less the warm step's median (B = 32): what the first step costs beyond a warm one
    contention: dict[str, Any]  # while the rounds ran: wall and process CPU seconds, load average before and after


def ladder_model(depth: int, seed: int) -> nn.Sequential:
    """Build a near-empty model, seeded: `depth` × (Linear(4, 4), ReLU), then a one-output head."""
    torch.manual_seed(seed)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(LADDER_WIDTH, LADDER_WIDTH), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(LADDER_WIDTH, 1))


def batch(features: int, batch_size: int, device: torch.device, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Make one fixed batch (inputs, 0/1 targets as a float column) on the CPU and place it on `device`."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, features, generator=generator)
    y = (torch.rand(batch_size, 1, generator=generator) > 0.5).float()
    return x.to(device), y.to(device)


class StepModel:
    """Time one model's eager training step, N steps a value, each loss copied into its own slot."""

    def __init__(self, label: str, make: Any, features: int, batch_size: int, device: torch.device):
        # Counted on a CPU copy of the same weights: the dispatcher sees the same ops on every device.
        counted = count_step(Trainer(make(), SPEC, CPU), *batch(features, batch_size, CPU, SEED))
        self.raw = RawStep(label, batch_size, counted.ops, counted.kernels)
        self.trainer = Trainer(make().to(device), SPEC, device)
        self.xb, self.yb = batch(features, batch_size, device, SEED)
        self.device = device
        self.slots: list[torch.Tensor] = []
        self.timed = rates.Timed(("step", label, batch_size), self.run, work=1, rate=False)

    def run(self, reps: int) -> float:
        """Return the seconds of `reps` steps: synchronised before and after, never between steps."""
        if len(self.slots) < reps:  # made before the clock, once per size
            self.losses = torch.full((reps,), math.nan, device=self.device)
            self.slots = list(self.losses.unbind())
        slots, step, xb, yb = self.slots, self.trainer.step, self.xb, self.yb
        devices.synchronize(self.device)
        start = time.perf_counter()
        for index in range(reps):
            slots[index].copy_(step(xb, yb))
        devices.synchronize(self.device)
        return time.perf_counter() - start


def textbook(seed: int = SEED) -> nn.Module:
    """Build the textbook MLP 32 -> 48 -> 1, seeded (measure.model.build)."""
    return models.build(SPEC, (FEATURES,), seed)


def first_step_seconds(device: torch.device) -> float:
    """Time a fresh textbook MLP's first training step at B = 32, whole; call it before other training.

    It holds the first-call costs: the allocator, kernels, library handles, Adam's state. The Trainer is
    made before the clock (its fused Adam imports torch._dynamo: about a second, on every device)."""
    trainer = Trainer(textbook().to(device), SPEC, device)
    xb, yb = batch(FEATURES, REFERENCE_BATCHES[0], device, SEED + 1)
    devices.synchronize(device)
    start = time.perf_counter()
    trainer.step(xb, yb)
    devices.synchronize(device)
    return time.perf_counter() - start


def context_startup_seconds(device: torch.device) -> float:
    """Time the runtime's first call (`torch.zeros(1)` on the device, then a sync); call it first.

    On CUDA it is the driver's and the context's start-up; on the CPU the same call, tiny."""
    start = time.perf_counter()
    torch.zeros(1, device=device)
    devices.synchronize(device)
    return time.perf_counter() - start


def target_device(device_type: str) -> torch.device:
    """Return the device to profile; raise devices.DeviceUnavailable (one line) where there is none.

    CUDA is asked through NVML: its context is made by context_startup_seconds, on the clock."""
    if device_type == "cpu":
        return torch.device("cpu")
    return devices.require(device_type, who="accel-choice profile", advice=NO_DEVICE_ADVICE)


def calibrate(timed: rates.Timed, target_s: float, max_reps: int) -> None:
    """Fix `timed.reps` so that one value takes about `target_s`.

    One untimed run first (a cold first call would make the reps far too few), then the reps doubled
    until a run takes a quarter of the target, then scaled; these runs warm it further."""
    timed.run(1)
    reps = 1
    while True:
        seconds = max(timed.run(reps), 1e-9)
        if seconds >= target_s / 4 or reps >= max_reps:
            break
        reps *= 2
    timed.reps = max(1, min(max_reps, round(reps * target_s / seconds)))


def rotated(items: Sequence[Any], by: int) -> list[Any]:
    """Return `items` started at position `by` (mod its length): the order turns from round to round."""
    if not items:
        return []
    by %= len(items)
    return [*items[by:], *items[:by]]


def run_rounds(groups: Sequence[Sequence[rates.Timed]], rounds: int) -> dict[tuple[object, ...], list[float]]:
    """Time every Timed once a round; each round rotates the groups and each group's own order."""
    values: dict[tuple[object, ...], list[float]] = {t.key: [] for group in groups for t in group}
    for index in range(rounds):
        for group in rotated(groups, index):
            for timed in rotated(group, index):
                values[timed.key].append(timed.value())
    return values


def describe(device: torch.device) -> dict[str, Any]:
    """Name the device as the record does: name, capability, memory, driver (NVML if importable), CUDA."""
    named: dict[str, Any] = dict(device_type=device.type, capability=None, driver=None, cuda=torch.version.cuda)
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        nvml = devices.nvml_library()
        driver = None if nvml is None else devices.nvml_answer(nvml.nvmlSystemGetDriverVersion)
        named |= dict(
            name=props.name,
            capability=f"{props.major}.{props.minor}",
            device_memory_bytes=int(props.total_memory),
            driver=driver.decode() if isinstance(driver, bytes) else driver,
        )
    elif device.type == "mps":
        memory = getattr(torch.mps, "recommended_max_memory", lambda: None)()
        named |= dict(name=f"Apple GPU (MPS) on {host_cpu() or 'this Mac'}", device_memory_bytes=memory or None)
    else:
        named |= dict(name=host_cpu() or "CPU", device_memory_bytes=host_memory_bytes())
    return named


def host_cpu() -> str | None:
    """Return the host CPU's model (/proc/cpuinfo, else platform.processor()); None where neither says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def host_memory_bytes() -> int | None:
    """Return the host's physical memory in bytes (a CPU profile's device memory); None where unknown."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) or None
    except (ValueError, OSError, AttributeError):
        return None


def measure(device_type: str, plan: Plan, threads: int) -> RawProfile:
    """Measure a device profile's raw values on `device_type` at `threads` torch threads (restored after)."""
    device = target_device(device_type)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with devices.matmul_precision("highest"):  # fp32 everywhere but the tf32 matmuls, which set their own
            return _measure(device, plan)
    finally:
        torch.set_num_threads(before)


def _measure(device: torch.device, plan: Plan) -> RawProfile:
    """Measure in the module's order: start-up, first step, ops counted, warm-up and calibration, rounds."""
    startup = context_startup_seconds(device)
    first = first_step_seconds(device)
    ladder = [
        StepModel(f"ladder depth {d}", lambda d=d: ladder_model(d, SEED), LADDER_WIDTH, LADDER_BATCH, device)
        for d in plan.depths
    ]
    reference = [StepModel(TEXTBOOK, textbook, FEATURES, b, device) for b in REFERENCE_BATCHES]
    steps = [m.timed for m in (*ladder, *reference)]
    for model in (*ladder, *reference):
        model.run(plan.warm_steps)
    floor = rates.kernel_floor(device, plan.floor_kernels)
    single = [rates.op_dispatch(device)] + ([floor] if floor is not None else [])
    single[0].run(plan.dispatch_warm)
    precisions = rates.matmul_precisions(device)
    matmuls = [rates.matmul(device, n, p) for p in precisions for n in plan.matmul_sizes]
    moved = [rates.bandwidth(device, size) for size in plan.bandwidth_bytes]
    copies: list[rates.Timed] = []
    if device.type != "cpu":
        buffers = rates.HostBuffers(device)
        for memory in rates.copy_memories(device):
            for direction in ("host_to_device", "device_to_host"):
                copies += [rates.host_copy(buffers, direction, memory, size) for size in plan.copy_bytes]
    groups = [g for g in (steps, single, matmuls, moved, copies) if g]
    for timed in (t for group in groups for t in group):
        calibrate(timed, plan.target_s, plan.max_reps)
    load_before, cpu_start, wall_start = load_average(), time.process_time(), time.perf_counter()
    values = run_rounds(groups, plan.rounds)
    contention = dict(
        wall_s=time.perf_counter() - wall_start,
        cpu_s=time.process_time() - cpu_start,
        load_before=load_before,
        load_after=load_average(),
    )
    for model in (*ladder, *reference):
        model.raw.seconds = values[model.timed.key]
    warm_b32 = statistics.median(reference[0].raw.seconds)
    return RawProfile(
        device=describe(device),
        host=dict(
            host_cpu=host_cpu(),
            host_cores=os.cpu_count(),
            threads=torch.get_num_threads(),
            torch_version=str(torch.__version__),
        ),
        machine=platform.node() or "this machine",
        plan=plan,
        ladder=[m.raw for m in ladder],
        reference_steps=[m.raw for m in reference],
        op_dispatch=values[("op_dispatch",)],
        kernel_floor=values[("kernel_floor",)] if floor is not None else None,
        matmul={(key[1], key[2]): values[key] for key in (t.key for t in matmuls)},
        bandwidth={key[1]: values[key] for key in (t.key for t in moved)},
        copies={(key[1], key[2], key[3]): values[key] for key in (t.key for t in copies)},
        context_startup_s=startup,
        first_step_raw_s=first,
        first_step_s=first - warm_b32,
        contention=contention,
    )


def load_average() -> float | None:
    """Return the 1-minute load average (other processes' demand on the cores); None where there is none."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
