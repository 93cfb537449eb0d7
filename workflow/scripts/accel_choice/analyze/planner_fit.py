"""The planner's fitted cost models and what they are fitted to, read from the records one place for
each planner job that needs them (the cost model table, the break-even curves, the scale scenario).

The fit is deterministic, so each job fits the same models from the same records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accel_choice import records
from accel_choice.analyze import aggregate, gpu_costs, gpu_profile, model_work, planner
from accel_choice.analyze.costmodel import AnyWorkload, CostModel
from accel_choice.analyze.gpu_profile import ProfileModel
from accel_choice.io import gpu_profiles
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
    models: dict[str, CostModel]  # every device fitted to this run's timings, and an assumed GPU (planner.gpu_assumed)
    profile: ProfileModel | None  # the GPU modelled from a device profile (planner.gpu_profile), where neither
    bandwidth: float  # bytes/s
    bandwidth_source: str
    bandwidth_memory: str | None
    startup: float
    startup_source: str

    @property
    def gpu(self) -> CostModel | ProfileModel:
        """Return the GPU side of every break-even: measured in this run, your assumption, or a profile."""
        if self.profile is not None:
            return self.profile
        return next(model for name, model in self.models.items() if name != "cpu")

    @property
    def gpu_source(self) -> str:
        """Where the GPU side comes from: fitted (measured in this run), assumed, or profile."""
        return "profile" if self.profile is not None else self.gpu.source  # type: ignore[union-attr]

    @property
    def host_memory_bytes(self) -> int | None:
        """Return the memory of the smallest node that measured the training tables: not the one running this job."""
        return aggregate.smallest_host_memory(table.host_memory_bytes for table in self.tables)


def one_rehearsal(grid: list[GridRecord]) -> list[GridRecord]:
    """Return the grid's records; refuse epochs timed cold (an archived job of before measure.rehearsal) beside rehearsed ones."""
    if len({r.rehearsal_steps > 0 for r in grid}) > 1:
        raise ValueError(
            "the planner's grid jobs mix epochs timed cold (rehearsal_steps 0) with rehearsed ones: "
            "re-run the time_cost_model jobs with one version of the workflow"
        )
    return grid


def read_tables(training: str, gpu_training: Sequence[str]) -> list[TrainingTable]:
    """Read the CPU training table and, where a GPU was measured, the GPU's."""
    return [records.read(TrainingTable, path) for path in (training, *gpu_training)]


def fit(inputs: Mapping[str, Any], p: Any) -> Fitted:
    """Fit the models from a planner job's inputs and params.

    Fit the models from a planner job's inputs (grid, training, gpu_training, transfers, profile,
    gpu_profile) and params (rows, features, hidden, textbook, threads, gpu_assumed, matmul_precision,
    gpu_profile_label, assumed_host_to_device_gb_s, noise)."""
    grid = one_rehearsal([r for path in inputs.get("grid") for r in records.read(GridJob, path).records])
    tables = read_tables(inputs.get("training"), inputs.get("gpu_training") or [])
    train_table = [cell for table in tables for cell in table.table]
    transfer_paths = inputs.get("transfers") or []  # planned only where a GPU is measured
    transfers = records.read(TransferTable, transfer_paths[0]) if transfer_paths else None
    # The benchmark's cells at the grid's thread count (the first of timing.threads): the CPU rates hold for it.
    benchmark_cells = [c for c in train_table if c.threads == p.threads]
    # The grid times the textbook MLP d → hidden → 1 on Adam and BCE. Any other model (your own, or the
    # textbook MLP trained otherwise) enters the fit, and the curves, as its counted profile describes it.
    counted = records.read(ModelProfile, inputs.get("profile"))
    per_sample = None if p.textbook else model_work.PerSample.of(counted)

    def workload(batch_size: int) -> AnyWorkload:
        if per_sample is None:
            return Workload(rows=p.rows, features=p.features, hidden=p.hidden, batch_size=batch_size)
        return model_work.CountedWorkload(rows=p.rows, batch_size=batch_size, per_sample=per_sample)

    points = planner.grid_points(grid, NoiseRules(**p.noise)) + planner.benchmark_points(benchmark_cells, workload)
    models = planner.device_models(points, p.gpu_assumed, per_sample)
    profile = None
    if set(models) == {"cpu"}:  # no GPU measured and no numbers of yours: the profile's GPU
        if not inputs.get("gpu_profile"):
            raise ValueError(
                "the GPU's grid left no finite workload to fit, and no profile was planned in its place: "
                "read the GPU grid jobs' logs (a non-finite loss), or set planner.gpu_assumed"
            )
        path = inputs.get("gpu_profile")[0]
        profile = gpu_profile.model(
            gpu_profiles.read(path),
            p.gpu_profile_label,
            p.matmul_precision,
            counted.step_ops,
            counted.step_kernels,
        )
    bandwidth, bandwidth_source, bandwidth_memory = gpu_costs.host_to_device_bytes_per_s(
        transfers, p.assumed_host_to_device_gb_s, profile
    )
    startup, startup_source = gpu_costs.gpu_startup_seconds(
        train_table, None if p.gpu_assumed is None else p.gpu_assumed["startup_s"], profile
    )
    return Fitted(
        grid=grid,
        tables=tables,
        benchmark_cells=benchmark_cells,
        workload=workload,
        points=points,
        models=models,
        profile=profile,
        bandwidth=bandwidth,
        bandwidth_source=bandwidth_source,
        bandwidth_memory=bandwidth_memory,
        startup=startup,
        startup_source=startup_source,
    )
