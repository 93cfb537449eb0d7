"""What a GPU job's eager fp32 resident step costs the device, beside what it costs the job (issue 42 item 5).

Three checks, made in every GPU timing job for its eager fp32 resident variant (measure.gpu_checks), after
the timed epochs: the same training step replayed as a CUDA graph (the launch floor: the device's own time
for the step, free of the host's Python and dispatch), the same step run eagerly on the same batch and timed
the same way, and the kernels one warmed step launches (torch.profiler). On a device without CUDA graphs
(the CPU twin of the GPU tests) the floor is null and its status says why; the eager step is timed and the
CPU ops are counted, by the same code. A training record keeps one `LaunchChecks`; a cell keeps its jobs'
(`CellLaunchChecks`), with the cell's step over its floor and what that ratio says (analyze.gpu_checks).
"""

from __future__ import annotations

import statistics
from typing import Any, Literal

from accel_choice.records import NonNegativeSeconds, PositiveCount, Seconds, record
from accel_choice.records.estimate import PositiveEstimate, columns

# replayed: the whole step captured as a CUDA graph and replayed, timed. no_cuda_graphs: the device has none
# (the CPU, MPS); the floor is null. capture_failed: the step could not be captured (a host sync or a CPU
# tensor in the model's code); the job's log says why, and the floor is null.
LaunchFloorStatus = Literal["replayed", "no_cuda_graphs", "capture_failed"]
# What the profiler counted: the kernels (copies and memsets included) a CUDA step launched, or, elsewhere,
# the aten operators the CPU dispatched (each one a trip through the dispatcher, the CPU's launch).
KernelsCounted = Literal["cuda_kernels", "cpu_ops"]
# host: the step takes at least analyze.gpu_checks.HOST_BOUND times its floor over the whole interval (the
# device idles most of each step: the host bounds it); device: under it over the whole interval; unsettled:
# the interval reaches both sides.
LaunchBound = Literal["host", "device", "unsettled"]


def launch_checked(variant: Any) -> bool:
    """Say whether a variant gets the launch checks (and a plain-loop reference).

    Whether a variant gets the launch checks (and a plain-loop reference): eager fp32 with its data
    resident on the device, batches sliced there, as a user's loop would have them."""
    return variant.precision == "fp32" and not variant.compiled and variant.placement == "resident"


@record
class LaunchChecks:
    """One job's launch checks of its eager fp32 resident variant (measure.gpu_checks), made after its epochs."""

    status: LaunchFloorStatus
    # Seconds per step of the CUDA-graph replay: `replay_steps` replays between two synchronised clock
    # reads, the median of the rounds; null unless replayed.
    launch_floor_step_s: Seconds | None
    # Seconds per step of the same step (zero_grad, forward, loss, backward, step) on the same static
    # batch, run eagerly and timed the same way: the host's dispatch included, the loader's work not.
    eager_step_s: Seconds
    replay_steps: PositiveCount  # steps between the two clock reads of one timed round
    counted: KernelsCounted
    # What one warmed eager step launched and the device time those launches sum to (CUDA: the kernels'
    # own durations; the CPU: the ops' self CPU time), the profiler on and no clock running; both null
    # where the profiler reported no event of the kind counted (CUPTI unavailable).
    step_kernels: PositiveCount | None
    step_kernels_device_s: NonNegativeSeconds | None

    def __post_init__(self) -> None:
        if (self.launch_floor_step_s is None) == (self.status == "replayed"):
            raise ValueError(
                f"launch_floor_step_s {self.launch_floor_step_s!r} must be set exactly when the step was replayed "
                f"(status {self.status!r})"
            )
        if (self.status == "no_cuda_graphs") != (self.counted == "cpu_ops"):
            raise ValueError(
                f"status {self.status!r} counts CUDA kernels exactly where CUDA graphs exist, not {self.counted!r}"
            )
        if (self.step_kernels is None) != (self.step_kernels_device_s is None):
            raise ValueError("step_kernels and step_kernels_device_s are null together or not at all")

    def check_device(self, device: str) -> None:
        """Refuse checks that do not fit the record's device: CUDA kernels and graphs on CUDA only."""
        if (device == "cuda") != (self.counted == "cuda_kernels"):
            raise ValueError(f"a {device} variant's launch checks counted {self.counted}: a damaged record")


@record
class CellLaunchChecks:
    """A cell's launch checks, one value per job (the raw figures, kept once), and its step over its floor."""

    # replayed when every job replayed; else the status of a job that did not (capture_failed first).
    status: LaunchFloorStatus
    counted: KernelsCounted
    launch_floor_s_jobs: tuple[Seconds, ...] | None  # each job's floor; null unless every job replayed
    eager_step_s_jobs: tuple[Seconds, ...]
    step_kernels_jobs: tuple[PositiveCount, ...] | None  # null where a job's profiler reported none
    step_kernels_device_s_jobs: tuple[NonNegativeSeconds, ...] | None
    # The cell's step (each job's median epoch over its steps) over the job's floor, paired by job, with
    # its t interval (a single measurement with one job: flagged, no interval); and what it says.
    step_over_launch_floor: PositiveEstimate | None
    launch_bound: LaunchBound | None

    def __post_init__(self) -> None:
        floor = (self.launch_floor_s_jobs, self.step_over_launch_floor, self.launch_bound)
        if len({value is None for value in floor}) != 1 or (floor[0] is None) == (self.status == "replayed"):
            raise ValueError(
                "launch_floor_s_jobs, step_over_launch_floor and launch_bound are set together, exactly when every "
                f"job replayed its step (status {self.status!r})"
            )
        if (self.step_kernels_jobs is None) != (self.step_kernels_device_s_jobs is None):
            raise ValueError("step_kernels_jobs and step_kernels_device_s_jobs are null together or not at all")
        counts = {len(jobs) for jobs in self.per_job() if jobs is not None}
        if len(counts) != 1:
            raise ValueError(f"the launch checks hold different numbers of jobs: {sorted(counts)}")

    def per_job(self) -> tuple[tuple[Any, ...] | None, ...]:
        return (
            self.launch_floor_s_jobs,
            self.eager_step_s_jobs,
            self.step_kernels_jobs,
            self.step_kernels_device_s_jobs,
        )

    @property
    def jobs(self) -> int:
        return len(self.eager_step_s_jobs)

    @property
    def launch_floor_s_median(self) -> float | None:
        return None if self.launch_floor_s_jobs is None else statistics.median(self.launch_floor_s_jobs)

    @property
    def eager_step_s_median(self) -> float:
        return statistics.median(self.eager_step_s_jobs)

    @property
    def step_kernels_median(self) -> float | None:
        return None if self.step_kernels_jobs is None else statistics.median(self.step_kernels_jobs)

    @property
    def step_kernels_device_s_median(self) -> float | None:
        jobs = self.step_kernels_device_s_jobs
        return None if jobs is None else statistics.median(jobs)


def launch_columns(checks: CellLaunchChecks | None) -> dict[str, Any]:
    """Return a cell's launch checks as flat columns of tables/gpu_training.csv (all empty where it has none)."""
    figures = {
        "launch_floor_status": "status",
        "launch_floor_s": "launch_floor_s_median",
        "eager_step_s": "eager_step_s_median",
        "step_kernels_counted": "counted",
        "step_kernels": "step_kernels_median",
        "step_kernels_device_s": "step_kernels_device_s_median",
        "launch_bound": "launch_bound",
    }
    row = {column: None if checks is None else getattr(checks, name) for column, name in figures.items()}
    return row | columns("step_over_launch_floor", None if checks is None else checks.step_over_launch_floor)
