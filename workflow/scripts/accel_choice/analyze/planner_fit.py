"""The planner's fitted cost models and what they are fitted to, read from the records one place for
each planner job that needs them (the cost model table, the break-even curves, the scale scenario).

The fit is deterministic, so each job fits the same models from the same records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accel_choice import records
from accel_choice.analyze import aggregate, model_work, planner
from accel_choice.analyze.costmodel import AnyWorkload, CostModel
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.grid import GridJob, GridRecord, Workload
from accel_choice.records.loads import TransferTable
from accel_choice.records.model import ModelProfile
from accel_choice.records.planner import FitPoint
from accel_choice.records.training import TrainingCell, TrainingTable


@dataclass(frozen=True)
class Fitted:
    """The timed grid, the training tables, the fit points and each device's model, with the
    host→device bandwidth and the GPU start-up the curves and the scenario add."""

    grid: list[GridRecord]
    tables: list[TrainingTable]
    benchmark_cells: list[TrainingCell]  # the benchmark's cells at the grid's thread count
    workload: Callable[[int], AnyWorkload]  # the benchmark's epoch at a batch size
    points: list[FitPoint]
    models: dict[str, CostModel]
    gpu_name: str
    bandwidth: float  # bytes/s
    bandwidth_source: str
    bandwidth_memory: str | None
    startup: float
    startup_source: str

    @property
    def host_memory_bytes(self) -> int | None:
        """The smallest node that measured the training tables: not the one running this job."""
        return aggregate.smallest_host_memory(table.host_memory_bytes for table in self.tables)


def read_tables(training: str, gpu_training: Sequence[str]) -> list[TrainingTable]:
    """The CPU training table and, where a GPU was measured, the GPU's."""
    return [records.read(TrainingTable, path) for path in (training, *gpu_training)]


def fit(inputs: Mapping[str, Any], p: Any) -> Fitted:
    """Fit the models from a planner job's inputs (grid, training, gpu_training, transfers, profile)
    and params (rows, features, hidden, textbook, threads, gpu_assumed, assumed_host_to_device_gb_s,
    noise)."""
    grid = [r for path in inputs.get("grid") for r in records.read(GridJob, path).records]
    tables = read_tables(inputs.get("training"), inputs.get("gpu_training") or [])
    train_table = [cell for table in tables for cell in table.table]
    transfer_paths = inputs.get("transfers") or []  # planned only where a GPU is measured
    transfers = records.read(TransferTable, transfer_paths[0]) if transfer_paths else None
    # The benchmark's cells at the grid's thread count (the first of timing.threads): the CPU rates hold for it.
    benchmark_cells = [c for c in train_table if c.threads == p.threads]
    # The grid times the textbook MLP d → hidden → 1 on Adam and BCE. Any other model (your own, or the
    # textbook MLP trained otherwise) enters the fit, and the curves, as its counted profile describes it.
    per_sample = None if p.textbook else model_work.PerSample.of(records.read(ModelProfile, inputs.get("profile")))

    def workload(batch_size: int) -> AnyWorkload:
        if per_sample is None:
            return Workload(rows=p.rows, features=p.features, hidden=p.hidden, batch_size=batch_size)
        return model_work.CountedWorkload(rows=p.rows, batch_size=batch_size, per_sample=per_sample)

    points = planner.grid_points(grid, NoiseRules(**p.noise)) + planner.benchmark_points(benchmark_cells, workload)
    models = planner.device_models(points, p.gpu_assumed, per_sample)
    bandwidth, bandwidth_source, bandwidth_memory = planner.host_to_device_bytes_per_s(
        transfers, p.assumed_host_to_device_gb_s
    )
    startup, startup_source = planner.gpu_startup_seconds(train_table, p.gpu_assumed["startup_s"])
    return Fitted(
        grid=grid,
        tables=tables,
        benchmark_cells=benchmark_cells,
        workload=workload,
        points=points,
        models=models,
        gpu_name=next(name for name in models if name != "cpu"),
        bandwidth=bandwidth,
        bandwidth_source=bandwidth_source,
        bandwidth_memory=bandwidth_memory,
        startup=startup,
        startup_source=startup_source,
    )
