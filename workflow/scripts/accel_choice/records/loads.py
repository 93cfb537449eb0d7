"""The data path, timed: load and convert per dataset and file format, the host <-> device copies, and
the device probe that says which accelerator the copies (and the GPU jobs) go to.

Times are seconds, measured with `time.perf_counter()`; a stage that does no work (CSV has no
Arrow-to-pandas step) is 0. Each timing file carries the wall-clock interval of its measurement
(`time.time()` at the start and end: no two timing jobs overlap) and the environment it ran in.
"""

from __future__ import annotations

import math
import statistics
from typing import Literal

from accel_choice.records import (
    Count,
    LoadAverage,
    NonNegative,
    NonNegativeSeconds,
    PositiveCount,
    Seconds,
    one_per_repeat,
    ordered,
    record,
)
from accel_choice.records.environment import Environment
from accel_choice.records.estimate import Estimate, PositiveEstimate
from accel_choice.records.training import Contamination

# The stages of loading one file, in order; `total_s` is their sum within one pass.
LOAD_STAGES = ("read_s", "to_pandas_s", "to_numpy_s", "to_torch_s", "total_s")


def _check_interval(interval: tuple[float, float]) -> None:
    if interval[0] > interval[1]:
        raise ValueError(f"wall_interval {list(interval)} ends before it starts")


# --- load and convert --------------------------------------------------------------------------


@record
class PassStages:
    """One timed pass over a file: read, Arrow to pandas (Parquet only), pandas to numpy fp32, numpy to torch."""

    read_s: Seconds
    to_pandas_s: NonNegativeSeconds
    to_numpy_s: NonNegativeSeconds
    to_torch_s: NonNegativeSeconds
    total_s: Seconds

    def __post_init__(self) -> None:
        stages = self.read_s + self.to_pandas_s + self.to_numpy_s + self.to_torch_s
        if not math.isclose(self.total_s, stages, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"total_s {self.total_s!r} is not the sum of the stages ({stages!r})")


@record
class FileLoad:
    """One file loaded in one timing job, stage by stage.

    Each stage is its median over the timed passes (`pass_stages`, kept); `total_s` is the median
    of the per-pass totals, so it need not equal the sum of the stage medians.
    """

    dataset: str
    format: str
    file: str
    file_bytes: Count
    rows: Count
    features: Count
    tensor_bytes: Count
    tensor_dtype: str
    torch_shares_numpy_buffer: bool
    read_s: Seconds
    to_pandas_s: NonNegativeSeconds
    to_numpy_s: NonNegativeSeconds
    to_torch_s: NonNegativeSeconds
    total_s: Seconds
    passes: PositiveCount
    pass_stages: tuple[PassStages, ...]
    matches_generated_data: bool

    def __post_init__(self) -> None:
        if len(self.pass_stages) != self.passes:
            raise ValueError(f"{len(self.pass_stages)} pass_stages for {self.passes} passes")
        for stage in LOAD_STAGES:
            runs = [getattr(run, stage) for run in self.pass_stages]
            ordered(
                min(runs), getattr(self, stage), max(runs), f"min(pass_stages.{stage}) {stage} max(pass_stages.{stage})"
            )


@record(schema="load-convert-job", version=3)
class LoadConvertJob:
    """timing/load_convert/rep<r>.json: one repeat of loading every file (dataset x format), the files'
    passes interleaved in one process; the contamination readings cover the whole job."""

    loads: tuple[FileLoad, ...]
    threads: PositiveCount
    loadavg_before: LoadAverage
    loadavg_after: LoadAverage
    foreign_cpu_share: NonNegative | None  # null: /proc/stat not readable (not Linux)
    repeat: Count
    wall_interval: tuple[float, float]
    environment: Environment

    def __post_init__(self) -> None:
        if not self.loads:
            raise ValueError("a load/convert job that loaded no file")
        keys = [(load.dataset, load.format) for load in self.loads]
        if len(set(keys)) != len(keys):
            raise ValueError(f"a file loaded twice in one job: {keys}")
        _check_interval(self.wall_interval)


@record
class LoadCell:
    """One dataset and format aggregated over its repeats: each stage's median, the total's spread, flags,
    and each job's load and conversion (the full path's one-off terms, with the spread of their jobs)."""

    dataset: str
    format: str
    repeats: PositiveCount
    rows: Count
    file_bytes: Count
    tensor_bytes: Count
    read_s_median: Seconds
    to_pandas_s_median: NonNegativeSeconds
    to_numpy_s_median: NonNegativeSeconds
    to_torch_s_median: NonNegativeSeconds
    load_s_jobs: tuple[Seconds, ...]  # each job's read + Arrow-to-pandas (its stage medians), in repeat order
    convert_s_jobs: tuple[NonNegativeSeconds, ...]  # each job's pandas-to-numpy + numpy-to-torch
    total_s: PositiveEstimate  # its jobs' median passes: geometric mean and t interval (analyze.job_intervals)
    total_s_min: Seconds
    total_s_max: Seconds
    total_s_iqr: NonNegative
    noisy: bool
    noise_reasons: tuple[str, ...]
    mb_per_s: NonNegative  # file bytes over total_s.point, 1 MB = 1e6 bytes
    contaminated: tuple[Contamination, ...]

    def __post_init__(self) -> None:
        ordered(self.total_s_min, self.total_s.point, self.total_s_max, "total_s_min total_s.point total_s_max")
        one_per_repeat(self, "load_s_jobs", "convert_s_jobs")
        if self.noisy != bool(self.noise_reasons):
            raise ValueError(f"noisy is {self.noisy} but noise_reasons is {list(self.noise_reasons)}")


@record(schema="load-convert-table", version=6)
class LoadTable:
    """tables/load_convert.json: one cell per (dataset, format)."""

    table: tuple[LoadCell, ...]
    environment: Environment

    def __post_init__(self) -> None:
        keys = [(cell.dataset, cell.format) for cell in self.table]
        if len(set(keys)) != len(keys):
            raise ValueError(f"more than one cell for a (dataset, format): {keys}")


# --- host <-> device copies ----------------------------------------------------------------------


@record
class CopyTiming:
    """One copy timed `passes` times after an untimed one: bytes, the median seconds, GB/s (1 GB = 1e9 bytes)."""

    what: str  # "matrix", "batch B=<B>", "target", "predictions"
    direction: Literal["host_to_device", "device_to_host"]
    memory: Literal["pageable", "pinned"]
    bytes: Count
    seconds: NonNegativeSeconds
    gb_per_s: NonNegative | None  # null: the copy took no measurable time
    passes: tuple[NonNegativeSeconds, ...]

    def __post_init__(self) -> None:
        if not self.passes:
            raise ValueError("a copy timed in no pass")
        ordered(min(self.passes), self.seconds, max(self.passes), "min(passes) seconds max(passes)")
        if (self.gb_per_s is None) != (self.seconds == 0):
            raise ValueError(f"gb_per_s is {self.gb_per_s!r} for {self.seconds!r} seconds")


@record(schema="transfer-job", version=3)
class TransferJob:
    """timing/gpu/transfer.rep<r>.json: the device's start-up and every copy, in one timing job."""

    device: str
    context_startup_s: Seconds | None  # null: no runtime to start (the CPU)
    pin_memory_s: NonNegativeSeconds | None  # null: nothing pinned (pinning is for CUDA)
    matrix_bytes: Count
    copies: tuple[CopyTiming, ...]
    loadavg_before: LoadAverage
    loadavg_after: LoadAverage
    repeat: Count
    wall_interval: tuple[float, float]
    environment: Environment

    def __post_init__(self) -> None:
        _check_interval(self.wall_interval)


@record
class CopyCell:
    """One copy (what, direction, memory) over the repeats: each job's seconds, their median with its interval,
    GB/s from the median; min and max are read from the jobs' seconds."""

    what: str
    direction: Literal["host_to_device", "device_to_host"]
    memory: Literal["pageable", "pinned"]
    bytes: Count
    repeats: PositiveCount
    seconds_jobs: tuple[NonNegativeSeconds, ...]  # each job's median pass, in repeat order
    # The median of the jobs' median passes with its bootstrap interval at aggregate.confidence (jobs, then
    # their passes; a copy can take no measurable time, so an Estimate, not a PositiveEstimate).
    seconds: Estimate
    gb_per_s: NonNegative
    noisy: bool

    def __post_init__(self) -> None:
        one_per_repeat(self, "seconds_jobs")
        ordered(self.seconds_min, self.seconds.point, self.seconds_max, "seconds_min seconds.point seconds_max")
        if self.seconds.low < 0:
            raise ValueError(f"seconds.low {self.seconds.low} below 0: a damaged record")

    @property
    def seconds_min(self) -> float:
        return min(self.seconds_jobs)

    @property
    def seconds_max(self) -> float:
        return max(self.seconds_jobs)


@record
class SecondsSpread:
    """A fixed cost over the repeats: median, min and max seconds."""

    median: Seconds
    min: Seconds
    max: Seconds

    def __post_init__(self) -> None:
        ordered(self.min, self.median, self.max, "min median max")


@record(schema="transfer-table", version=4)
class TransferTable:
    """tables/transfers.json: the copies of every transfer job aggregated, and the fixed costs."""

    device: str
    copies: tuple[CopyCell, ...]  # by direction, memory, bytes
    context_startup_s: SecondsSpread
    pin_memory_s_jobs: tuple[NonNegativeSeconds, ...]  # each job's pinning of the matrix; empty: nothing pinned

    @property
    def pin_memory_s_median(self) -> float | None:
        """Return the jobs' median pinning; None where nothing was pinned."""
        return statistics.median(self.pin_memory_s_jobs) if self.pin_memory_s_jobs else None


# --- the device probe ------------------------------------------------------------------------------


@record
class CudaDevice:
    """One CUDA device as torch.cuda.get_device_properties describes it."""

    index: Count
    name: str
    capability: str  # "<major>.<minor>"
    total_memory_bytes: Count
    multiprocessors: Count
    uuid: str | None = None  # GPU-<uuid> (torch's device properties); null: torch did not say


@record
class VisibleDevices:
    """What accelerators torch sees in one process (measure/devices.probe)."""

    torch_version: str
    cuda_available: bool
    cuda_version: str | None  # the CUDA version torch was built with; null: a CPU build
    cuda_devices: tuple[CudaDevice, ...]
    nvidia_driver: str | None
    mps_available: bool
    accelerator: str | None  # torch.accelerator's current device type, where torch has one

    def __post_init__(self) -> None:
        if not self.cuda_available and (self.cuda_devices or self.nvidia_driver is not None):
            raise ValueError("CUDA devices or a driver listed, but cuda_available is false")
        indexes = [device.index for device in self.cuda_devices]
        if indexes != list(range(len(indexes))):
            raise ValueError(f"cuda_devices have the indexes {indexes}, not 0..{len(indexes) - 1}")


@record(schema="device-probe", version=4)
class DeviceProbe(VisibleDevices):
    """env/devices.json: the probe rule's record of the visible devices, with the fingerprint it ran for."""

    mode: Literal["auto", "require", "off"]  # the accelerator setting
    planned_fingerprint: str  # the fingerprint the workflow planned with (a params: value of the rule)
    fingerprint: str  # the fingerprint of what this job saw
    environment: Environment
