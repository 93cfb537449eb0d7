"""A device profile: what the planner needs to know of a device and its host, each figure with its source.

`accel-choice profile --device cuda` measures one (measure.device_profile); the repository ships profiles
of GPUs under config/gpu_profiles/, whose figures may also be `recorded` from this project's earlier
measured runs (docs/gpu.md) or taken from the vendor's `datasheet`. Every figure keeps its raw values,
one tuple per machine, and the Estimate derived from them (analyze.profile_draws): the planner draws
from the same values, so the interval a figure shows is the spread the planner's break-evens carry.

The record is written on bare GPU machines too (torch and numpy only): it uses nothing but `record`
and the standard library, and its checks are its own `__post_init__`s.
"""

from __future__ import annotations

import re
import statistics
from typing import Literal

from accel_choice.records import Count, Positive, PositiveCount, record
from accel_choice.records.estimate import PositiveEstimate

Source = Literal["measured", "recorded", "datasheet"]
Unit = Literal["s", "FLOP/s", "B/s"]
DeviceType = Literal["cpu", "cuda", "mps"]
Precision = Literal["fp32", "tf32", "bf16"]
Direction = Literal["host_to_device", "device_to_host"]
Memory = Literal["pageable", "pinned"]
# How a figure's estimate is made (analyze.profile_draws): the planner's own draw of a new machine (t on the
# machines' log medians), one machine's values bootstrapped, or a datasheet's one value.
PREDICTED = "a new machine: t on the machines' log medians"
BOOTSTRAPPED = "one machine: its values bootstrapped"
DATASHEET = "datasheet: one quoted value"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@record
class Machine:
    """One machine's raw values of a figure: one value per round of a run (or one recorded value)."""

    machine: str  # a label: the host's name in a measured profile, "A".."D" in docs/gpu.md's H200 runs
    values: tuple[Positive, ...]

    def __post_init__(self) -> None:
        if not self.machine or not self.values:
            raise ValueError("a machine has a label and at least one value")


@record
class Figure:
    """One figure of a profile: its raw values per machine, where they come from, and their estimate.

    The point is the median of the machines' medians; the interval is the spread the planner draws
    from (analyze.profile_draws): a new machine of the kind, or one machine's values bootstrapped.
    """

    source: Source
    unit: Unit
    machines: tuple[Machine, ...]
    estimate: PositiveEstimate
    reference: str  # measured: the command, host and date; recorded: the document and run; datasheet: the vendor's

    def __post_init__(self) -> None:
        if not self.machines or not self.reference:
            raise ValueError("a figure has at least one machine and names where it comes from (reference)")
        labels = [m.machine for m in self.machines]
        if len(set(labels)) != len(labels):
            raise ValueError(f"one entry per machine, found {labels}")
        if self.source == "datasheet" and (len(self.machines) != 1 or len(self.machines[0].values) != 1):
            raise ValueError("a datasheet figure is one quoted value")
        expected = point(self)
        if abs(self.estimate.point - expected) > 1e-9 * expected:
            raise ValueError(
                f"estimate.point {self.estimate.point!r} is not the median of the machines' medians {expected!r}"
            )
        method = DATASHEET if self.source == "datasheet" else PREDICTED if len(labels) >= 2 else BOOTSTRAPPED
        if self.estimate.method != method or self.estimate.jobs != len(self.machines):
            raise ValueError(
                f"a {self.source} figure's estimate is made by {method!r} from its {len(labels)} machine(s)"
            )


def point(figure: Figure) -> float:
    """Return the median of the machines' medians: a figure's value."""
    return statistics.median(statistics.median(m.values) for m in figure.machines)


@record
class StepFigure:
    """The seconds of one eager training step (forward, loss, backward, fused Adam) of one model, and
    what the step dispatches (counted on the CPU by measure.op_count): every aten op, and those that
    launch work on a device (not views, not profiler marks)."""

    model: str  # "textbook 32-48-1", or a near-empty ladder model "ladder depth 4"
    batch_size: PositiveCount
    ops: PositiveCount
    kernels: Count
    seconds: Figure

    def __post_init__(self) -> None:
        if self.kernels > self.ops or self.seconds.unit != "s":
            raise ValueError(f"{self.model}: kernels {self.kernels} <= ops {self.ops}, seconds in s")


@record
class Rate:
    """A rate at one size: a matmul's FLOP/s (`size` n of an n×n by n×n product, at `precision`) or the
    device memory's bandwidth (`size` bytes copied from one buffer to another, read and write counted)."""

    size: PositiveCount | None  # null: a datasheet's peak, quoted for no particular size
    rate: Figure
    precision: Precision | None  # a matmul's; null: memory bandwidth

    def __post_init__(self) -> None:
        if self.rate.unit != ("FLOP/s" if self.precision else "B/s"):
            raise ValueError(f"a matmul rate is in FLOP/s and a bandwidth in B/s, found {self.rate.unit}")
        if (self.size is None) != (self.rate.source == "datasheet"):
            raise ValueError("a measured or recorded rate has its size; a datasheet's peak has none")


@record
class Copy:
    """A copy between host and device memory of `bytes` bytes: its rate in bytes per second."""

    direction: Direction
    memory: Memory  # of the host's side: pageable, or pinned (page-locked, copied by DMA)
    bytes: PositiveCount
    rate: Figure

    def __post_init__(self) -> None:
        if self.rate.unit != "B/s":
            raise ValueError(f"a copy's rate is in B/s, found {self.rate.unit}")


@record(schema="device-profile", version=1)
class DeviceProfile:
    """A device and its host as the planner models them (docs/planner.md): the step's host cost, the
    device's rates, the copies and the start-up, each figure with its source, values and estimate.

    `ladder`: eager steps of near-empty models of growing depth, whose seconds against their ops give the
    host's fixed cost per step and its cost per dispatched op; `reference_steps`: the textbook MLP's step,
    the one this project times. A figure no run measured is null (or an empty tuple) and the planner
    says what it does without it.
    """

    name: str  # the device's name: "NVIDIA H200", or the CPU's model for a CPU profile
    device_type: DeviceType
    capability: str | None  # CUDA compute capability, "9.0"
    device_memory_bytes: PositiveCount | None
    driver: str | None
    cuda: str | None  # the CUDA version torch was built with
    host_cpu: str | None  # the host's CPU model (null: not recorded)
    host_cores: PositiveCount | None
    threads: PositiveCount | None  # torch's threads on the host while measuring
    torch_version: str | None  # null: figures from more than one torch (see each figure's reference)
    made: str  # YYYY-MM-DD: the newest measured or recorded figure's date
    machines: PositiveCount  # distinct machines behind the figures
    runs: PositiveCount  # profile runs merged into it (a datasheet-only or recorded profile: 1)
    command: str | None  # the command that measured it; null where nothing was measured
    note: str
    reference_steps: tuple[StepFigure, ...]
    ladder: tuple[StepFigure, ...]
    op_dispatch_s: Figure | None  # one tiny eager op on the device, seconds of the host's time
    kernel_floor_s: Figure | None  # one tiny kernel replayed in a CUDA graph: the device's own floor per kernel
    matmul: tuple[Rate, ...]
    memory_bandwidth: tuple[Rate, ...]
    copies: tuple[Copy, ...]
    context_startup_s: Figure | None  # the runtime's first call (driver and context), seconds
    first_step_s: Figure | None  # a fresh model's first training step less a warm step: first-call costs
    timed_s: Positive | None  # the profile command's wall time; null: nothing was measured

    def __post_init__(self) -> None:
        if not _DATE.match(self.made):
            raise ValueError(f"made {self.made!r} is not a date YYYY-MM-DD")
        if self.device_type == "cpu" and (self.kernel_floor_s is not None or self.copies):
            raise ValueError("a CPU profile has no CUDA-graph floor and no host-device copies")
        if any(s.seconds.source == "datasheet" for s in (*self.ladder, *self.reference_steps)):
            raise ValueError("a step's seconds are measured or recorded, never a datasheet's")
        ladder = [s.ops for s in self.ladder]
        if self.ladder and (len(set(ladder)) < 2 or ladder != sorted(ladder)):
            raise ValueError(f"a ladder has models of at least two op counts, in increasing order, found {ladder}")
        measured = any(f.source == "measured" for f in figures(self))
        if measured != (self.command is not None):
            raise ValueError("a profile with measured figures names its command, and only such a profile")
        if not figures(self):
            raise ValueError("a profile holds at least one figure")

    def precisions(self) -> tuple[str, ...]:
        """Return the matmul precisions the profile rates."""
        return tuple(dict.fromkeys(r.precision for r in self.matmul if r.precision))


def figures(profile: DeviceProfile) -> list[Figure]:
    """Return every figure of a profile, steps, rates, copies and single figures alike."""
    found = [s.seconds for s in (*profile.reference_steps, *profile.ladder)]
    found += [r.rate for r in (*profile.matmul, *profile.memory_bandwidth)] + [c.rate for c in profile.copies]
    single = (profile.op_dispatch_s, profile.kernel_floor_s, profile.context_startup_s, profile.first_step_s)
    return found + [f for f in single if f is not None]


def completeness(profile: DeviceProfile) -> tuple[int, int, int]:
    """Say how completely a profile is measured.

    How completely a profile is measured: its measured, recorded and datasheet figures (more is better,
    in that order): planner.gpu_profile "auto" takes the shipped profile with the largest."""
    sources = [f.source for f in figures(profile)]
    return (sources.count("measured"), sources.count("recorded"), sources.count("datasheet"))


# --- what the planner used of a profile (tables/cost_model.json, tables/break_even.json) -------------

Use = Literal["host step", "kernel floor", "matmul", "memory bandwidth", "host-to-device copy", "start-up"]


@record
class UsedFigure:
    """One figure the planner's GPU reads from a profile: its estimate, source and reference."""

    what: Use
    how: str  # e.g. "the ladder's line at 42 ops", "the textbook step scaled by ops", "fp32 at n = 4096"
    source: Source
    machines: PositiveCount
    unit: Unit
    estimate: PositiveEstimate
    reference: str


@record
class ProfileUse:
    """The profile a planner job modelled the GPU from, and each figure it read (the first screen names them)."""

    name: str  # the device's
    file: str  # the profile's file, as configured or shipped
    made: str
    machines: PositiveCount
    measured_by: str | None  # the profile's command; null: nothing in it was measured by one
    figures: tuple[UsedFigure, ...]
    missing: tuple[Use, ...]  # what the profile lacks: counted as none (start-up, kernel floor) or taken elsewhere
    overlapped: bool  # host and device work in parallel (a GPU) or one after the other (a CPU profile)

    @property
    def host_step_machines(self) -> int:
        """Return the machines behind the host step: the design the intervals' coverage is looked up for."""
        return next(f.machines for f in self.figures if f.what == "host step")

    def __post_init__(self) -> None:
        used = [f.what for f in self.figures]
        if len(set(used)) != len(used) or set(used) & set(self.missing):
            raise ValueError(f"each figure is used once, or missing: used {used}, missing {self.missing}")
