"""A GPU cell against its launch floor (issue 42 item 5, records.launch): its step over the same step replayed
as a CUDA graph, paired by job, with its t interval, and what that ratio says about who bounds the step.
Numbers and codes only; render.gpu_checks says them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accel_choice.analyze.job_intervals import ratio_interval
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.estimate import Estimate, positive
from accel_choice.records.launch import CellLaunchChecks, LaunchBound
from accel_choice.records.training import TrainingRecord

# A step that takes at least this many times its launch floor leaves the device idle for most of it: the
# host's Python, dispatch and loader bound it, and a faster GPU would not make it faster.
HOST_BOUND = 2.0


def launch_bound(ratio: Estimate, threshold: float = HOST_BOUND) -> LaunchBound:
    """Where a cell's step/floor interval lies against `threshold` (a single job's ratio: its point alone)."""
    if ratio.low >= threshold:
        return "host"
    if ratio.high < threshold:
        return "device"
    return "unsettled"


def cell_launch_checks(group: Sequence[TrainingRecord], rules: NoiseRules) -> dict[str, Any]:
    """Build the cell's `launch` field.

    The cell's `launch` field: its jobs' launch checks, and where every job replayed its step, the cell's
    step (each job's median epoch over its steps) over the job's floor, paired by job (the floor was timed in
    the same process, minutes after the epochs), with its t interval. Null for a cell without them."""
    checks = [r.launch for r in group]
    if any(c is None for c in checks):
        return {"launch": None}
    statuses = sorted({c.status for c in checks} - {"replayed"}) or ["replayed"]
    kernels = [c.step_kernels for c in checks]
    fields: dict[str, Any] = dict(
        status=statuses[0],
        counted=checks[0].counted,
        eager_step_s_jobs=tuple(c.eager_step_s for c in checks),
        step_kernels_jobs=None if None in kernels else tuple(kernels),
        step_kernels_device_s_jobs=None if None in kernels else tuple(c.step_kernels_device_s for c in checks),
        launch_floor_s_jobs=None,
        step_over_launch_floor=None,
        launch_bound=None,
    )
    if statuses == ["replayed"]:
        floors = tuple(c.launch_floor_step_s for c in checks)
        ratio = positive(
            ratio_interval(
                [(s,) for s in floors],
                [tuple(e / r.steps for e in r.epoch_s_each) for r in group],
                paired=True,
                level=rules.confidence,
            )
        )
        fields |= dict(launch_floor_s_jobs=floors, step_over_launch_floor=ratio, launch_bound=launch_bound(ratio))
    return {"launch": CellLaunchChecks(**fields)}
