"""A GPU modelled from a device profile: a step costs the larger of its host's work and its device's.

The host's work is what the host does per step whatever the batch: Python, autograd and one launch
per dispatched op. A profile measures it on near-empty models (its `ladder`): seconds per step
against ops per step is a line, fixed cost plus cost per op. The user's model dispatches so many ops
a step (records.model.ModelProfile.step_ops, counted on the CPU), so its host time is read off that
line. A profile without a ladder (one recorded from earlier runs) has the textbook MLP's step
instead, and the host time scales with ops from it.

The device's work is each launched kernel's floor (a CUDA graph's replay), the step's FLOP at the
profile's best matmul rate and its bytes at the device memory's bandwidth. On a GPU the host
queues kernels ahead of the device, so the step takes the larger of the two; on a CPU the same
thread does both, so it takes their sum. An epoch is its steps times the step; the copies and the
start-up are the profile's too (planner.break_even_curves adds them).

Every figure can be read at its point or as draws (analyze.profile_draws): the same formulas give
the point curves and the resampled ones, so the break-even intervals carry the profile's spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import costmodel
from accel_choice.analyze.costmodel import AnyWorkload
from accel_choice.analyze.profile_draws import ESTIMATE_DRAWS, ESTIMATE_SEED, Draws, estimate_of
from accel_choice.records.device_profile import (
    DeviceProfile,
    Figure,
    ProfileUse,
    StepFigure,
    UsedFigure,
)

# timing.matmul_precision → the profile's matmul rate the fp32 path runs at (TF32 where torch may use it).
PRECISION = {"highest": "fp32", "high": "tf32", "medium": "bf16"}  # "medium" lets torch use bf16 inside
TEXTBOOK_STEP = "textbook 32-48-1"


@dataclass(frozen=True)
class StepWork:
    """What one step of a workload asks of a device: dispatched ops, launched kernels, FLOP and bytes."""

    ops: int
    kernels: int
    flop: float
    bytes: float


@dataclass(frozen=True)
class Values:
    """The profile's figures the model reads, each as an array of draws (one draw: the point)."""

    ladder_ops: np.ndarray | None  # (models,)
    ladder_s: np.ndarray | None  # (models, draws)
    reference_ops: tuple[int, ...]  # each reference step's ops, in reference_batch's order
    reference_batch: tuple[int, ...]
    reference_s: np.ndarray | None  # (batch sizes, draws)
    kernel_floor_s: np.ndarray
    flop_per_s: np.ndarray
    bytes_per_s: np.ndarray
    copy_bytes_per_s: np.ndarray | None  # host → device, the fastest large copy
    startup_s: np.ndarray


@dataclass(frozen=True)
class Chosen:
    """Which of a profile's figures the model reads (the rates at the best size, the copy it takes)."""

    flop: Figure
    precision: str
    bandwidth: Figure
    copy: Figure | None
    copy_memory: str | None


def choose(profile: DeviceProfile, matmul_precision: str) -> Chosen:
    """Choose the profile's matmul rate, memory bandwidth and host → device copy rate.

    The matmul rate at `matmul_precision` (fp32 where the profile has no TF32) at its best size, the device
    memory's bandwidth at its largest size, and the fastest of the largest host → device copies."""
    wanted = PRECISION.get(matmul_precision, "fp32")
    precision = wanted if wanted in profile.precisions() else "fp32"
    rates = [r.rate for r in profile.matmul if r.precision == precision]
    # The bandwidth of the largest copy measured: smaller ones run from the caches (this VM's CPU: 85 GB/s at
    # 1 MiB against 21 GB/s at 64 MiB, docs/profile.md); the planner's bytes are an epoch's, mostly not cached.
    by_size = sorted(profile.memory_bandwidth, key=lambda r: r.size or 0)
    bandwidths = [r.rate for r in by_size[-1:]]
    if not rates or not bandwidths:
        raise ValueError(f"the profile of {profile.name} has no {precision} matmul rate or no memory bandwidth")
    copies = [c for c in profile.copies if c.direction == "host_to_device"]
    largest = {c.memory: c for c in sorted(copies, key=lambda c: c.bytes)}  # each memory's largest copy
    fastest = max(largest.values(), key=lambda c: c.rate.estimate.point, default=None)
    return Chosen(
        flop=max(rates, key=lambda f: f.estimate.point),
        precision=precision,
        bandwidth=bandwidths[0],
        copy=None if fastest is None else fastest.rate,
        copy_memory=None if fastest is None else fastest.memory,
    )


def _references(profile: DeviceProfile) -> list[StepFigure]:
    return sorted((s for s in profile.reference_steps if s.model == TEXTBOOK_STEP), key=lambda s: s.batch_size)


def nearest(batch_sizes: Sequence[int], batch_size: int) -> int:
    """Return the index of the reference step whose batch size is nearest `batch_size`.

    The index of the reference step whose batch size is nearest `batch_size` (in log): the one a profile
    without a ladder scales by ops."""
    return min(range(len(batch_sizes)), key=lambda i: abs(math.log(batch_sizes[i] / batch_size)))


def values(profile: DeviceProfile, chosen: Chosen, draws: Draws | None = None) -> Values:
    """Return the figures the model reads: their points (`draws` None), or `draws` of each."""

    def read(fig: Figure | None) -> np.ndarray | None:
        if fig is None:
            return None
        return np.array([fig.estimate.point]) if draws is None else draws.of(fig)

    size = 1 if draws is None else draws.draws
    zero = np.zeros(size)
    references = _references(profile)
    startup = [read(f) for f in (profile.context_startup_s, profile.first_step_s)]
    return Values(
        ladder_ops=np.array([s.ops for s in profile.ladder], dtype=float) if profile.ladder else None,
        ladder_s=np.stack([read(s.seconds) for s in profile.ladder]) if profile.ladder else None,  # type: ignore[misc]
        reference_ops=tuple(s.ops for s in references),
        reference_batch=tuple(s.batch_size for s in references),
        reference_s=np.stack([read(s.seconds) for s in references]) if references else None,  # type: ignore[misc]
        kernel_floor_s=read(profile.kernel_floor_s) if profile.kernel_floor_s else zero,  # type: ignore[arg-type]
        flop_per_s=read(chosen.flop),  # type: ignore[arg-type]
        bytes_per_s=read(chosen.bandwidth),  # type: ignore[arg-type]
        copy_bytes_per_s=read(chosen.copy),
        startup_s=sum((s for s in startup if s is not None), zero),
    )


def host_step_s(v: Values, work: StepWork, batch_size: int) -> np.ndarray:
    """Return the host's seconds per step: the ladder's line at the step's ops, or the textbook step scaled by ops."""
    if v.ladder_ops is not None and v.ladder_s is not None:
        x, s = v.ladder_ops, v.ladder_s
        dx = x - x.mean()
        slope = (dx[:, None] * (s - s.mean(axis=0))).sum(axis=0) / (dx**2).sum()
        slope = np.maximum(slope, 0.0)
        fixed = s.mean(axis=0) - slope * x.mean()
        through_origin = (x[:, None] * s).sum(axis=0) / (x**2).sum()  # a line with no fixed cost
        slope, fixed = np.where(fixed < 0, through_origin, slope), np.maximum(fixed, 0.0)
        return fixed + slope * work.ops
    if v.reference_s is None or not v.reference_ops:
        raise ValueError("a profile without a ladder needs the textbook MLP's reference step")
    i = nearest(v.reference_batch, batch_size)
    return v.reference_s[i] * work.ops / v.reference_ops[i]


def device_step_s(v: Values, work: StepWork) -> np.ndarray:
    """Return the device's own seconds per step: each kernel's floor, the FLOP and the bytes at the profile's rates."""
    return work.kernels * v.kernel_floor_s + work.flop / v.flop_per_s + work.bytes / v.bytes_per_s


@dataclass(frozen=True)
class ProfileModel:
    """A GPU from a profile, for one model's steps (`ops`, `kernels`: records.model.ModelProfile's)."""

    profile: DeviceProfile
    path: str  # how the report names the profile: a shipped one's name, else its file (io.gpu_profiles.label)
    chosen: Chosen
    ops: int
    kernels: int
    point: Values

    @property
    def device(self) -> str:
        return f"{self.profile.name} (profile {self.path})"

    @property
    def overlapped(self) -> bool:
        """Host and device work in parallel (a GPU's queue), or one after the other (a CPU)."""
        return self.profile.device_type != "cpu"

    def work(self, w: AnyWorkload) -> tuple[StepWork, int]:
        """Return one step of `w` (its FLOP and bytes spread evenly over its steps), and the steps of its epoch."""
        counts = costmodel.work(w)
        steps = counts["steps"]
        moved = counts["bytes"] + counts["state_bytes"]  # the rows' traffic and the optimizer state's
        return StepWork(self.ops, self.kernels, counts["flop"] / steps, moved / steps), int(steps)

    def step_parts(self, w: AnyWorkload, v: Values | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return the host's and the device's seconds per step of `w` (each an array over `v`'s draws)."""
        work, _ = self.work(w)
        return self._parts(work, w.batch_size, self.point if v is None else v)

    def _parts(self, work: StepWork, batch_size: int, v: Values) -> tuple[np.ndarray, np.ndarray]:
        return host_step_s(v, work, batch_size), device_step_s(v, work)

    def epoch_draws(self, w: AnyWorkload, v: Values | None = None) -> np.ndarray:
        """Seconds of one epoch of `w` in each draw of `v` (the point where `v` is None)."""
        work, steps = self.work(w)
        host, device = self._parts(work, w.batch_size, self.point if v is None else v)
        return steps * (np.maximum(host, device) if self.overlapped else host + device)

    def epoch_s(self, w: AnyWorkload) -> float:
        """Seconds of one epoch of `w` at the profile's points."""
        return float(self.epoch_draws(w)[0])


def model(profile: DeviceProfile, path: str, matmul_precision: str, ops: int, kernels: int) -> ProfileModel:
    """Build the GPU of `profile` for a model dispatching `ops` ops (`kernels` of them launching work) a step."""
    chosen = choose(profile, matmul_precision)
    return ProfileModel(profile, path, chosen, ops, kernels, values(profile, chosen))


def _used(what: str, how: str, fig: Figure) -> UsedFigure:
    return UsedFigure(
        what=what,  # type: ignore[arg-type]
        how=how,
        source=fig.source,
        machines=len(fig.machines),
        unit=fig.unit,
        estimate=fig.estimate,
        reference=fig.reference,
    )


def use(gpu: ProfileModel, batch_size: int) -> ProfileUse:
    """Return what the planner reads of the profile, each figure with its estimate and source.

    What the planner reads of the profile, each figure with its estimate and source: the first screen
    and the planner section name them. The host step is the model's own (its ops), drawn as the intervals draw it."""
    profile, chosen = gpu.profile, gpu.chosen
    work = StepWork(gpu.ops, gpu.kernels, 0.0, 0.0)
    drawn = values(profile, chosen, Draws(ESTIMATE_DRAWS, ESTIMATE_SEED))
    host = host_step_s(drawn, work, batch_size)
    point = float(host_step_s(gpu.point, work, batch_size)[0])
    references = _references(profile)
    if not profile.ladder:  # the reference step nearest the curves' batch size, as host_step_s reads it
        references = [references[nearest([s.batch_size for s in references], batch_size)]]
    steps = profile.ladder or tuple(references)
    sources = {s.seconds.source for s in steps}
    machines = len({m.machine for s in steps for m in s.seconds.machines})
    how = (
        f"the ladder's line ({len(profile.ladder)} near-empty models) at this model's {gpu.ops} ops a step"
        if profile.ladder
        else f"the textbook MLP's step at B = {steps[0].batch_size} ({steps[0].ops} ops) scaled to this model's "
        f"{gpu.ops} ops a step"
    )
    estimate = estimate_of(host, point, machines)
    figures_used = [
        UsedFigure(
            what="host step",
            how=how,
            source="measured" if "measured" in sources else "recorded",
            machines=machines,
            unit="s",
            estimate=estimate,
            reference=steps[0].seconds.reference,
        ),
        _used("matmul", f"{chosen.precision}, the profile's best rate", chosen.flop),
        _used("memory bandwidth", "the largest copy's rate", chosen.bandwidth),
    ]
    missing = []
    if profile.kernel_floor_s is not None:
        figures_used.append(_used("kernel floor", f"× {gpu.kernels} kernels a step", profile.kernel_floor_s))
    else:
        missing.append("kernel floor")
    if chosen.copy is not None:
        figures_used.append(_used("host-to-device copy", f"{chosen.copy_memory} memory, the largest copy", chosen.copy))
    else:
        missing.append("host-to-device copy")
    parts = [(name, f) for name, f in (("the runtime's context", profile.context_startup_s),
             ("a first step's extra", profile.first_step_s)) if f is not None]  # fmt: skip
    if parts:  # what values() adds up, drawn as the intervals draw it
        first = parts[0][1]
        figures_used.append(
            UsedFigure(
                what="start-up",
                how=" + ".join(name for name, _ in parts),
                source=first.source,
                machines=len(first.machines),
                unit="s",
                estimate=estimate_of(drawn.startup_s, float(gpu.point.startup_s[0]), len(first.machines)),
                reference=first.reference,
            )
        )
    else:
        missing.append("start-up")
    return ProfileUse(
        name=profile.name,
        file=gpu.path,
        made=profile.made,
        machines=profile.machines,
        measured_by=profile.command,
        figures=tuple(figures_used),
        missing=tuple(missing),  # type: ignore[arg-type]
        overlapped=gpu.overlapped,
    )
