"""The drift sentinel: a fixed reference workload timed through every timing job, and what else
could have slowed the job (steal, clock frequency, GPU clocks and throttling).

measure.sentinel takes the readings; analyze.sentinel compares each job with its run.
"""

from __future__ import annotations

import statistics

from accel_choice.records import Count, Fraction, NonNegative, Positive, PositiveCount, Seconds, record


@record
class GpuState:
    """One NVML reading of the job's GPU (nvidia-ml-py), where the driver answers."""

    sm_clock_mhz: Count | None
    memory_clock_mhz: Count | None
    temperature_c: Count | None
    power_w: NonNegative | None
    clocks_event_reasons: Count | None  # NVML's bit mask of why clocks are held down (0: none)
    reasons: tuple[str, ...]  # the mask's active bits by name, idle excluded


@record
class SentinelReadings:
    """A timing job's sentinel: the same fixed work timed at the start, between rounds and at the end.

    `seconds` in the order taken; `median_s` their median is the job's machine speed. `steal_share`:
    CPU the hypervisor took from this VM during the job, in cores on average (/proc/stat).
    """

    workload: str  # what was timed, e.g. "cpu: 64 x mm(256x256) fp32"
    seconds: tuple[Seconds, ...]
    median_s: Seconds
    steal_share: NonNegative | None
    cpu_mhz: tuple[Positive, ...] | None  # mean core clock at the start and the end, where readable
    governor: str | None  # cpufreq scaling governor, where the VM exposes one
    gpu_start: GpuState | None = None
    gpu_end: GpuState | None = None
    # A GPU job's host side, which launches its kernels: the CPU's fixed work (measure.sentinel.WORKLOADS["cpu"])
    # timed right after each tick's device work; null in a CPU job, whose sentinel is the host's.
    host_seconds: tuple[Seconds, ...] | None = None

    @property
    def host_median_s(self) -> float | None:
        return None if self.host_seconds is None else statistics.median(self.host_seconds)

    def __post_init__(self) -> None:
        if not self.seconds:
            raise ValueError("a sentinel holds at least one timing")
        if self.host_seconds is not None and len(self.host_seconds) != len(self.seconds):
            raise ValueError(f"{len(self.host_seconds)} host_seconds for {len(self.seconds)} ticks")
        median = statistics.median(self.seconds)
        if abs(median - self.median_s) > 1e-12 * max(1.0, median):
            raise ValueError(f"median_s {self.median_s} is not the median of seconds ({median})")


@record
class ReferenceStepReadings:
    """A CPU timing job's fixed reference step (measure.reference.ReferenceStep): the same small training
    loop timed once per round, after the round's sentinel tick, on one thread (issue 45 item 2).

    `seconds` one per round, in the order taken; `median_s` their median. A cell's job median over it is
    the cell relative to the job's speed at a dispatch-bound training step.
    """

    workload: str  # what was timed, e.g. "mlp 32-48-1 adam bce: 64 steps of B=32"
    threads: PositiveCount  # torch's threads while it ran: one (measure.reference.ReferenceStep)
    seconds: tuple[Seconds, ...]
    median_s: Seconds

    def __post_init__(self) -> None:
        if not self.seconds:
            raise ValueError("a reference step holds at least one timing")
        median = statistics.median(self.seconds)
        if abs(median - self.median_s) > 1e-12 * max(1.0, median):
            raise ValueError(f"median_s {self.median_s} is not the median of seconds ({median})")


@record
class SentinelJob:
    """One job's sentinel against its run's: the ratio, and whether it is flagged."""

    job: str  # e.g. "bs64.rep2"
    median_s: Seconds
    over_run_median: Positive
    steal_share: NonNegative | None
    reasons: tuple[str, ...]  # empty when the job ran at the run's speed


@record
class SentinelSummary:
    """The run's machine speed (the median of its jobs' sentinel medians) and its noise floor.

    `noise_floor`: half the central 90 % range of the jobs' sentinel medians over their median —
    differences smaller than ± this fraction are not evidence on this machine in this run (None
    with fewer than three jobs).
    """

    workload: str
    run_median_s: Seconds
    noise_floor: NonNegative | None
    tolerance: Positive
    flagged: Count
    jobs: tuple[SentinelJob, ...]
    confidence: Fraction  # the level of the run's intervals, stated beside the floor
    host_run_median_s: Seconds | None = None  # GPU jobs: the median of their host sentinels' medians
