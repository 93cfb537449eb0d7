"""The whole table's shift between two runs, and the gate on it (issue 25: a gate that does not sleep).

A slower commit slows every cell a little; each row's own interval (three jobs a side, 2-4 degrees of
freedom) cannot see 20 %, but the table's rows together can. Here the cells measured on both sides are
grouped by the timing jobs that timed them (their `jobs`: on the CPU every batch size at one thread count,
on a GPU one batch size; one process per repeat); a
job's value is the geometric mean of the median epochs of its cells, and `job_intervals.table_ratio`
makes one B/A with a Welch t interval over all the groups. The gate fails when that interval lies wholly
above 1 + PCT and above the machines' own change (the upper end of the sentinels' B/A, where both runs
have one): a machine that is slower by itself does not fail it. Its level, TABLE_LEVEL, keeps its
false alarm below 1 % in the calibration harness (analyze.calibration.table_gate_rate), so the rows'
gate and this one together stay under 5 %.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accel_choice.analyze.job_intervals import NO_SPREAD_FLAG, table_ratio
from accel_choice.io.results_folder import ResultsFolder
from accel_choice.records.comparison import ComparisonRow, MachineSpeed
from accel_choice.records.estimate import Estimate, columns
from accel_choice.records.training import TrainingCell

TABLE_LEVEL = 0.99
METRIC = "epoch_s"  # what the whole-table gate compares: the training epoch, the time every cell has


@dataclass(frozen=True)
class TableShift:
    """One device's table in B over A: the ratio over its job groups, how many cells and groups it rests on,
    and the machines' own change (the sentinels' B/A upper end; None without a sentinel on both sides)."""

    device: str
    cells: int
    groups: int
    ratio: Estimate
    machine_high: float | None

    def beyond(self, percent: float) -> float:
        """Return what the interval's lower end must pass to fail the gate: 1 + percent and the machines' own change."""
        return max(1 + percent / 100, self.machine_high or 0.0)

    def fails(self, percent: float) -> bool:
        return NO_SPREAD_FLAG not in self.ratio.flags and self.ratio.low > self.beyond(percent)

    def as_json(self) -> dict[str, Any]:
        return (
            {
                "device": self.device,
                "metric": METRIC,
                "cells": self.cells,
                "job_groups": self.groups,
            }
            | columns("ratio", self.ratio, point="ratio_b_over_a")
            | {
                "confidence": self.ratio.level,
                "machine_ratio_ci_high": self.machine_high,
            }
        )


def _job_values(cells: Sequence[TrainingCell]) -> list[float]:
    """A job group's per-job values: in each job (repeat order), the geometric mean of its cells' median epochs.
    Only the cells with the group's full number of jobs count (a cell that lost a job to a non-finite run is
    left out here; its row keeps its own interval)."""
    jobs = max(len(c.epoch_s_jobs) for c in cells)
    full = [c for c in cells if len(c.epoch_s_jobs) == jobs]
    logs = np.array([[math.log(float(np.median(job))) for job in c.epoch_s_jobs] for c in full])
    return [float(v) for v in np.exp(logs.mean(axis=0))]


def table_shifts(a: ResultsFolder, b: ResultsFolder, machine: Sequence[MachineSpeed]) -> list[TableShift]:
    """Per device measured on both sides, the table's B/A over its job groups (TABLE_LEVEL)."""
    sides = [{c.key: c for c in side.training} for side in (a, b)]
    both = sorted(set(sides[0]) & set(sides[1]), key=repr)
    groups: dict[tuple[Any, ...], list[tuple[TrainingCell, TrainingCell]]] = defaultdict(list)
    for key in both:
        ca, cb = sides[0][key], sides[1][key]
        groups[(ca.device, ca.jobs)].append((ca, cb))  # the cells the same jobs timed: a CPU job times every B
    found = []
    for device in sorted({device for device, _ in groups}, key=lambda d: (d != "cpu", d)):
        mine = [pairs for (d, _), pairs in sorted(groups.items(), key=repr) if d == device]
        pairs = [(_job_values([ca for ca, _ in g]), _job_values([cb for _, cb in g])) for g in mine]
        if not any(min(len(pa), len(pb)) >= 2 for pa, pb in pairs):
            continue
        table = "cpu" if device == "cpu" else "gpu"
        high = next((m.ratio.high for m in machine if m.table == table), None)
        found.append(
            TableShift(
                device=device,
                cells=sum(len(g) for g in mine),
                groups=len(mine),
                ratio=table_ratio(pairs, TABLE_LEVEL),
                machine_high=high,
            )
        )
    return found


@dataclass(frozen=True)
class TableRegression:
    """A device's whole table slower in B beyond the gate, with the rows slower than it at their points."""

    shift: TableShift
    rows: tuple[ComparisonRow, ...]

    def line(self, label_a: str, label_b: str, percent: float) -> str:
        s = self.shift
        machine = (
            "" if s.machine_high is None else f" and the machines' own change (sentinel up to {s.machine_high:.3f}×)"
        )
        named = ", ".join(f"{r.name} B={r.batch_size} ({r.part(METRIC).ratio.point:.2f}×)" for r in self.rows)  # type: ignore[union-attr]
        return (
            f"the whole {s.device} table ({s.cells} cells in {s.groups} job group{'s' if s.groups != 1 else ''}): epoch time {label_b}/{label_a} "
            f"{s.ratio.point:.3f} ({s.ratio.level * 100:g} % interval {s.ratio.low:.3f}–{s.ratio.high:.3f}), "
            f"{label_b} slower by more than {percent:g} %{machine}; the cells slower than that at their points: "
            + (named or "none alone")
        )

    def as_json(self, label_a: str, label_b: str, percent: float) -> dict[str, Any]:
        return {"variant": f"whole {self.shift.device} table", "batch_size": None, "metric": METRIC} | {
            "line": self.line(label_a, label_b, percent)
        }


def table_regressions(
    shifts: Sequence[TableShift], rows: Sequence[ComparisonRow], percent: float
) -> list[TableRegression]:
    """Return the devices whose whole table fails the gate, with their rows slower than 1 + percent at their points."""
    return [
        TableRegression(
            shift,
            tuple(
                r
                for r in rows
                if r.device == shift.device
                and r.part(METRIC).ratio is not None
                and r.part(METRIC).ratio.point > 1 + percent / 100  # type: ignore[union-attr]
            ),
        )
        for shift in shifts
        if shift.fails(percent)
    ]
