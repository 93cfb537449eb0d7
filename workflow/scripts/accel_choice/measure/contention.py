"""Was anything else using the CPU while we measured?

The 1-minute load average reacts slowly (a 5-second sampled exponential average), so a
short burst from a neighbour barely moves it. `/proc/stat` counts every core's busy time
directly: the machine's busy CPU-seconds during a window minus this process's own CPU
time is the CPU that something else took - other processes, or the hypervisor (steal).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (idle and iowait are not busy)


def cpu_ticks(stat: str = "/proc/stat") -> list[int] | None:
    """The all-cores line of /proc/stat, column by column, in clock ticks since boot (`SC_CLK_TCK`
    per second); None where the file cannot be read (not Linux)."""
    try:
        with open(stat, encoding="ascii") as handle:
            return [int(field) for field in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def machine_busy_seconds() -> float | None:
    """All cores' busy CPU-seconds since boot; None where /proc/stat is missing (not Linux)."""
    ticks = cpu_ticks()
    if ticks is None:
        return None
    return sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks)) / os.sysconf("SC_CLK_TCK")


@dataclass
class ForeignCpu:
    wall_s: float
    own_cpu_s: float
    foreign_cpu_s: float | None  # CPU-seconds used by anything but this process

    @property
    def share(self) -> float | None:
        """Foreign CPU in cores, on average over the window (0.5 = half a core busy elsewhere)."""
        if self.foreign_cpu_s is None or self.wall_s <= 0:
            return None
        return max(self.foreign_cpu_s, 0.0) / self.wall_s


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
