"""The GPU's costs beside its epochs: start-up, the host→device copy and its memory, and where each comes from.

Each is measured in this run where a GPU was (the timing jobs, the transfer jobs, the probe), else
your number (planner.gpu_assumed, report.bandwidth_gb_s), else the device profile's
(planner.gpu_profile; analyze.gpu_profile). A profile without the figure says so: its start-up counts
as none (which favours the GPU), its copies fall back to report.bandwidth_gb_s.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from accel_choice.analyze import theory
from accel_choice.analyze.costmodel import AnyWorkload
from accel_choice.analyze.gpu_profile import ProfileModel
from accel_choice.analyze.model_work import CountedWorkload
from accel_choice.records.loads import TransferTable, VisibleDevices
from accel_choice.records.training import TrainingCell

GB = 1e9
PLACEMENTS = ("resident", "streamed")  # the GPU's data in the break-even curves: copied once, or every epoch


def copy_bytes(w: AnyWorkload) -> int:
    """Return the bytes the GPU receives for one epoch.

    The input the GPU receives for one epoch: the fp32 matrix (the textbook's), or every row's
    features and target (a counted model's)."""
    if isinstance(w, CountedWorkload):
        return w.rows * w.per_sample.row_bytes
    return theory.input_bytes(w.rows, w.features)


def extra_seconds(placement: str, startup_s: np.ndarray | float, copy_s: np.ndarray | float, epochs: int) -> np.ndarray:
    """Return the GPU-only seconds each epoch carries in a training job of `epochs` epochs.

    The GPU-only seconds each epoch carries in a training job of `epochs` epochs: the job pays its
    start-up once and, for resident data, one copy of the input; streamed data is copied every epoch."""
    if placement == "resident":
        return np.asarray((startup_s + copy_s) / epochs)
    if placement == "streamed":
        return np.asarray(startup_s / epochs + copy_s)
    raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")


def gpu_startup_seconds(
    train_table: Sequence[TrainingCell], assumed_s: float | None, profile: ProfileModel | None = None
) -> tuple[float, str]:
    """Return the GPU's one-off start-up beyond the CPU's, and where it came from.

    The GPU's one-off start-up beyond the CPU's, measured by the timing jobs (the median GPU
    cell's `startup_s_median` - context and first-step costs - less the median CPU cell's, which a
    CPU job pays as well), else your assumption, else the profile's context start-up and first step
    ("profile"; "none in the profile": 0 s)."""
    eager = [c for c in train_table if not c.compiled]  # a compiled cell's start-up holds its compilation
    gpu = [c.startup_s_median for c in eager if c.device != "cpu"]
    if gpu:
        cpu = [c.startup_s_median for c in eager if c.device == "cpu"]
        return max(statistics.median(gpu) - (statistics.median(cpu) if cpu else 0.0), 0.0), "measured"
    if assumed_s is not None or profile is None:
        if assumed_s is None:
            raise ValueError("no GPU was measured: the planner needs planner.gpu_assumed or a profile")
        return assumed_s, "assumed"
    has = profile.profile.context_startup_s is not None or profile.profile.first_step_s is not None
    return float(profile.point.startup_s[0]), "profile" if has else "none in the profile"


def host_to_device_bytes_per_s(
    transfers: TransferTable | None, assumed_gb_s: float, profile: ProfileModel | None = None
) -> tuple[float, str, str | None]:
    """Return the host→device bandwidth to model copies with, and where it came from.

    The measured host→device bandwidth of the benchmark matrix - the faster of its pageable and
    pinned copies, the one a tuned input pipeline would use, and which it is - else the profile's
    fastest large copy, else the configured assumption: (bytes/s, "measured", "profile" or "assumed",
    "pageable", "pinned" or None). The pinned copy is charged its pinning too (`pin_memory_s_median`:
    the matrix must be pinned before it can be copied that way), so pinned wins only where pinning
    and copying beat a pageable copy."""
    rates = {}
    for c in transfers.copies if transfers else ():
        if (c.what, c.direction) != ("matrix", "host_to_device") or c.seconds.point <= 0:
            continue
        pin = (transfers.pin_memory_s_median or 0.0) if c.memory == "pinned" else 0.0
        rates[c.memory] = c.bytes / (c.seconds.point + pin)
    if rates:
        memory = max(rates, key=rates.__getitem__)
        return rates[memory], "measured", memory
    if profile is not None and profile.chosen.copy is not None:
        return profile.chosen.copy.estimate.point, "profile", profile.chosen.copy_memory
    return assumed_gb_s * 1e9, "assumed", None


def gpu_memory_bytes(
    probe: VisibleDevices, assumed: dict[str, float] | None, profile: ProfileModel | None = None
) -> tuple[int | None, str]:
    """Return the probed GPU's memory, else your assumption, else the profile's, and where it came from."""
    if probe.cuda_devices:
        return probe.cuda_devices[0].total_memory_bytes, "measured"
    if assumed is not None:
        return int(assumed["memory_gb"] * GB), "assumed (planner.gpu_assumed.memory_gb)"
    if profile is not None and profile.profile.device_memory_bytes is not None:
        return profile.profile.device_memory_bytes, f"{profile.device}"
    return None, "unknown (the profile does not record it)"
