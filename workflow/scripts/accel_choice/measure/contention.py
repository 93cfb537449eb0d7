"""Was anything else using the CPU while we measured?

The 1-minute load average reacts slowly (a 5-second sampled exponential average), so a
short burst from a neighbour barely moves it. `/proc/stat` (psutil's cpu_times where there is
none: macOS, Windows) counts every core's busy time directly: the machine's busy CPU-seconds during a window minus this process's own CPU
time is the CPU that something else took - other processes, or the hypervisor (steal).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any


def load_average() -> list[float]:
    """Return the 1-, 5- and 15-minute load averages, taken around a measurement."""
    return list(os.getloadavg())


_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (idle and iowait are not busy)
_STEAL_FIELD = 7  # user nice system idle iowait irq softirq steal


def cpu_ticks(stat: str = "/proc/stat") -> list[int] | None:
    """Read the all-cores line of /proc/stat.

    The all-cores line of /proc/stat, column by column, in clock ticks since boot (`SC_CLK_TCK`
    per second); None where the file cannot be read (not Linux)."""
    try:
        with open(stat, encoding="ascii") as handle:
            return [int(field) for field in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def _psutil_cpu_times() -> Any | None:
    """psutil's all-cores CPU times, where /proc/stat is missing (macOS, Windows); None without psutil
    (a bare GPU machine: the meters then say they could not read, never a made-up zero)."""
    try:
        import psutil
    except ImportError:
        return None
    return psutil.cpu_times()


def machine_busy_seconds(stat: str = "/proc/stat") -> float | None:
    """All cores' busy CPU-seconds since boot: /proc/stat, else psutil; None where neither can tell."""
    ticks = cpu_ticks(stat)
    if ticks is not None:
        return sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks)) / os.sysconf("SC_CLK_TCK")
    times = _psutil_cpu_times()
    if times is None:
        return None
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)  # busy: all but idle and waiting on I/O


def machine_user_seconds(stat: str = "/proc/stat") -> float | None:
    """All cores' user (and nice) CPU-seconds since boot: /proc/stat, else psutil; None where neither can tell."""
    ticks = cpu_ticks(stat)
    if ticks is not None:
        return sum(ticks[:2]) / os.sysconf("SC_CLK_TCK")
    times = _psutil_cpu_times()
    return None if times is None else times.user + getattr(times, "nice", 0.0)


def steal_seconds(stat: str = "/proc/stat") -> float | None:
    """Return all cores' steal CPU-seconds since boot.

    All cores' steal CPU-seconds since boot (what the hypervisor gave to other guests); None where
    neither /proc/stat nor psutil has a steal column (macOS has none)."""
    ticks = cpu_ticks(stat)
    if ticks is not None:
        return ticks[_STEAL_FIELD] / os.sysconf("SC_CLK_TCK") if len(ticks) > _STEAL_FIELD else None
    times = _psutil_cpu_times()
    return getattr(times, "steal", None) if times is not None else None


@dataclass
class ForeignCpu:
    wall_s: float
    own_cpu_s: float
    foreign_cpu_s: float | None  # CPU-seconds used by anything but this process
    steal_cpu_s: float | None = None  # CPU-seconds the hypervisor took (ForeignUserCpuMeter only)

    @property
    def share(self) -> float | None:
        """Foreign CPU in cores, on average over the window (0.5 = half a core busy elsewhere)."""
        if self.foreign_cpu_s is None or self.wall_s <= 0:
            return None
        return max(self.foreign_cpu_s, 0.0) / self.wall_s

    @property
    def steal_share(self) -> float | None:
        """Steal in cores, on average over the window."""
        if self.steal_cpu_s is None or self.wall_s <= 0:
            return None
        return max(self.steal_cpu_s, 0.0) / self.wall_s


class ForeignCpuMeter:
    """Brackets a measurement window: `start()`, then `stop()` returns the foreign CPU in it.

    /proc/stat ticks are 10 ms, so the reading is meaningful over windows of a second or
    more - a whole timing job, not one short epoch.
    """

    def start(self) -> ForeignCpuMeter:
        self._busy0, self._own0, self._wall0 = machine_busy_seconds(), time.process_time(), time.perf_counter()
        return self

    def stop(self) -> ForeignCpu:
        busy1, own1, wall1 = machine_busy_seconds(), time.process_time(), time.perf_counter()
        own = own1 - self._own0
        foreign = None if busy1 is None or self._busy0 is None else (busy1 - self._busy0) - own
        return ForeignCpu(wall1 - self._wall0, own, foreign)


class ForeignUserCpuMeter:
    """Brackets a window of a job whose work spans child processes (a DataLoader's workers) and the
    kernel (page reclaim and I/O completion in kernel threads, when a read outgrows memory):
    `stop()` returns other processes' *user* CPU in it - the machine's user and nice time less this
    process's and its ended children's - and the hypervisor's steal.

    The kernel's work for the job is system time and not counted, so reading past memory is not taken
    for a neighbour; a neighbour's own computing is user time and is. Children are counted once they
    have been waited for: stop after the workers are joined (a DataLoader joins them at the end of
    its epoch), or their CPU counts as foreign.
    """

    @staticmethod
    def _own_user() -> float:
        t = os.times()
        return t.user + t.children_user

    def start(self) -> ForeignUserCpuMeter:
        self._user0, self._steal0 = machine_user_seconds(), steal_seconds()
        self._own0, self._wall0 = self._own_user(), time.perf_counter()
        return self

    def stop(self) -> ForeignCpu:
        user1, steal1 = machine_user_seconds(), steal_seconds()
        own, wall = self._own_user() - self._own0, time.perf_counter() - self._wall0
        foreign = None if user1 is None or self._user0 is None else (user1 - self._user0) - own
        steal = None if steal1 is None or self._steal0 is None else steal1 - self._steal0
        return ForeignCpu(wall, own, foreign, steal)
