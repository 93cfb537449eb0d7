"""The cost-model grid's records: the workloads it times and one timing job's records.

A workload is one epoch of the model features → hidden → 1 in fp32 over `rows` rows, in batches
of `batch_size`. measure.grid times them; analyze.planner fits the cost model to them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import ClassVar

from accel_choice.records import (
    PositiveCount,
    record,
)
from accel_choice.records.environment import Environment
from accel_choice.records.sentinel import SentinelReadings
from accel_choice.records.training import EpochMeasurement
from accel_choice.records.upgrades import without_derived, without_rehearsal


def steps_per_epoch(rows: int, batch_size: int) -> int:
    """⌈rows / batch_size⌉: the optimizer steps of one epoch."""
    return -(-rows // batch_size)


@record
class Workload:
    """One epoch of the model features → hidden → 1 in fp32 over `rows` rows, in batches of `batch_size`."""

    rows: PositiveCount
    features: PositiveCount
    hidden: PositiveCount
    batch_size: PositiveCount

    @property
    def widths(self) -> tuple[int, int, int]:
        return (self.features, self.hidden, 1)


def grid_workloads(
    rows: Sequence[int], features: Sequence[int], hidden: Sequence[int], batch_sizes: Sequence[int]
) -> list[Workload]:
    """Return every combination, except batch sizes larger than the rows they would split."""
    return [
        Workload(rows=n, features=d, hidden=h, batch_size=b)
        for n, d, h, b in itertools.product(rows, features, hidden, batch_sizes)
        if b <= n
    ]


# --- the timed grid: timing/cost_model/{device}.rep<r>.json ---------------------------------------


@record
class GridRecord(EpochMeasurement):
    """One timed epoch and evaluation pass of one workload (fast path, fp32, data on the device):
    an EpochMeasurement (the same measure.training.measure_interleaved times it) with the workload's rows, features, hidden."""

    rows: PositiveCount
    features: PositiveCount
    hidden: PositiveCount

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.samples == self.eval_samples == self.rows:
            raise ValueError(
                f"samples {self.samples} and eval_samples {self.eval_samples} must both equal "
                f"rows {self.rows}: one epoch sees every row once"
            )
        if self.steps != steps_per_epoch(self.rows, self.batch_size):
            raise ValueError(
                f"steps {self.steps} is not ⌈rows / batch_size⌉ = {steps_per_epoch(self.rows, self.batch_size)}"
            )

    @property
    def workload(self) -> Workload:
        return Workload(rows=self.rows, features=self.features, hidden=self.hidden, batch_size=self.batch_size)


@record(schema="planner-grid-job", version=9)
class GridJob:
    """timing/cost_model/{device}.rep<r>.json: `planner.epochs_per_job` timed epochs per workload of the grid
    (interleaved rounds), one device, one repeat."""

    records: tuple[GridRecord, ...]
    wall_interval: tuple[float, float]  # time.time() at the start and end: no two timing jobs overlap
    environment: Environment
    sentinel: SentinelReadings  # the drift sentinel timed around the job's rounds (measure.sentinel)
    UPGRADES: ClassVar = {7: without_derived, 8: without_rehearsal}  # archived versions are read (records.upgrades)

    def __post_init__(self) -> None:
        if not self.records:
            raise ValueError("a grid job times at least one workload")
        jobs = {(r.device, r.repeat) for r in self.records}
        if len(jobs) != 1:
            raise ValueError(f"one grid job is one device and one repeat, found (device, repeat) {sorted(jobs)}")
        workloads = [r.workload for r in self.records]
        if len(set(workloads)) != len(workloads):
            raise ValueError("a workload is timed twice in one grid job")
        if self.wall_interval[0] > self.wall_interval[1]:
            raise ValueError(f"wall_interval {self.wall_interval} ends before it starts")
