"""The planner's break-even tables: tables/break_even.json (every curve, value by value, and its
summary) and tables/break_even_summary.json (the summary rows alone), all modelled; each break-even
with its bootstrap interval (analyze.breakeven_interval).

Split from records.planner, which imports these records too.
"""

from __future__ import annotations

import math
from typing import Literal

from accel_choice.records import Count, Fraction, NonNegative, NonNegativeSeconds, Positive, PositiveCount, record
from accel_choice.records.device_profile import ProfileUse
from accel_choice.records.model import TEXTBOOK

Axis = Literal["rows", "features", "hidden", "batch_size"]
Placement = Literal["resident", "streamed"]
# A GPU model's source: fitted to this run's measurements, assumed (planner.gpu_assumed), or a device profile's.
ModelSource = Literal["fitted", "assumed", "profile"]
Where = Literal["below_sweep", "in_sweep", "beyond_sweep"]  # a break-even, or a bound, against the swept range
_RANK = {"below_sweep": 0, "in_sweep": 1, "beyond_sweep": 2}


@record
class Coverage:
    """How often a break-even interval of this design held the true break-even, in synthetic runs drawn
    through the planner's own functions (analyze.planner_calibration; benchmarks/calibration.py --planner)."""

    level: Fraction  # the intervals' nominal level
    coverage: Fraction
    runs: PositiveCount  # simulated runs
    grid_jobs: PositiveCount  # planner.repeats of the design
    profile_machines: Count  # machines behind the profile's step (0: no profile drawn)
    resamples: PositiveCount
    sigma_job: NonNegative  # log-normal spread of a grid job's speed
    sigma_machine: NonNegative  # log-normal spread of a GPU machine's step
    seed: Count
    command: str  # what made it


@record
class BreakEvenSummary:
    """Where along one axis the GPU is faster, for one GPU placement: never, from a break-even on
    (or over the whole range), or only up to some value; base_* is the workload the axis grows from.

    break_even_low/high: the break-even's bootstrap percentile interval at `confidence` over
    `resamples` refits (analyze.breakeven_interval); a bound outside the sweep is null and its
    `*_where` says on which side. The shares split the resamples: a break-even in the sweep, the GPU
    faster over the whole sweep, no break-even within it.
    """

    axis: Axis
    placement: Placement
    break_even: Positive | None  # the modelled crossing from slower to faster, if there is one
    break_even_low: Positive | None
    break_even_high: Positive | None
    break_even_low_where: Where
    break_even_high_where: Where
    break_even_share: Fraction
    gpu_always_faster_share: Fraction
    no_break_even_share: Fraction
    confidence: Fraction
    resamples: PositiveCount
    gpu_always_faster: bool
    gpu_never_faster: bool
    gpu_faster_until: PositiveCount | None  # the last grid value of a GPU faster only at the small end
    sweep_min: PositiveCount
    sweep_max: PositiveCount
    base_rows: PositiveCount
    base_features: PositiveCount | None  # null: a counted model (base_model), which has no features or hidden
    base_hidden: PositiveCount | None
    base_batch_size: PositiveCount
    base_model: str
    # At the sweep's largest value, the best place for a GPU to win: each device's epoch (the GPU's with its
    # start-up and copies, `gpu_extra_s`), the steps, and where a profile models the GPU its step's host
    # and device seconds (null otherwise): why a GPU that never turns faster does not ("its step costs ...").
    steps_at_end: PositiveCount
    cpu_epoch_s_at_end: Positive
    gpu_epoch_s_at_end: Positive
    gpu_extra_s_at_end: NonNegativeSeconds
    gpu_host_step_s_at_end: Positive | None
    gpu_device_step_s_at_end: Positive | None

    def __post_init__(self) -> None:
        if self.gpu_extra_s_at_end > self.gpu_epoch_s_at_end * (1 + 1e-9):
            raise ValueError("the GPU's extra seconds are part of its epoch: gpu_extra_s_at_end > gpu_epoch_s_at_end")
        if (self.gpu_host_step_s_at_end is None) != (self.gpu_device_step_s_at_end is None):
            raise ValueError("a profile's GPU has both a host and a device step, any other neither")
        if (self.base_model == TEXTBOOK) != (self.base_features is not None) or (self.base_features is None) != (
            self.base_hidden is None
        ):
            raise ValueError(
                f"base_model {self.base_model!r}: the textbook MLP has base_features and base_hidden, "
                "a counted model neither"
            )
        if self.gpu_always_faster and self.gpu_never_faster:
            raise ValueError("the GPU cannot be both always and never faster")
        if (self.gpu_always_faster or self.gpu_never_faster) and (
            self.break_even is not None or self.gpu_faster_until is not None
        ):
            raise ValueError("a GPU always or never faster has no break_even and no gpu_faster_until")
        low, high, where = self.break_even_low, self.break_even_high, self.where
        if (low is None) == (self.break_even_low_where == "in_sweep") or (high is None) == (
            self.break_even_high_where == "in_sweep"
        ):
            raise ValueError("break_even_low/high is a number exactly when its *_where is in_sweep")
        if not _RANK[self.break_even_low_where] <= _RANK[where] <= _RANK[self.break_even_high_where]:
            raise ValueError(f"the interval {self.break_even_low_where}..{self.break_even_high_where} misses {where}")
        inside = [x for x in (low, self.break_even, high) if x is not None]
        if inside != sorted(inside) or any(not self.sweep_min <= x <= self.sweep_max for x in inside):
            raise ValueError(
                f"break_even_low {low!r} <= break_even {self.break_even!r} <= break_even_high {high!r}, "
                f"all within the sweep {self.sweep_min}..{self.sweep_max}, does not hold"
            )
        shares = self.break_even_share + self.gpu_always_faster_share + self.no_break_even_share
        if not math.isclose(shares, 1.0, abs_tol=1e-9) or not 0 < self.confidence < 1:
            raise ValueError(f"the resamples' shares add up to {shares!r}, not 1, or confidence is not in (0, 1)")

    @property
    def where(self) -> Where:
        """Say where the break-even itself lies: in the sweep, below it (GPU always faster) or beyond it."""
        if self.break_even is not None:
            return "in_sweep"
        return "below_sweep" if self.gpu_always_faster else "beyond_sweep"


@record
class CurveRow:
    """One value of one break-even curve: the modelled CPU and GPU epoch seconds."""

    axis: Axis
    placement: Placement
    value: PositiveCount
    cpu_s: NonNegativeSeconds
    gpu_s: NonNegativeSeconds  # the GPU's epoch with its share of start-up and copies
    cpu_over_gpu: NonNegative | None  # null: the GPU's modelled time is zero (an infinite ratio)

    def __post_init__(self) -> None:
        if (self.cpu_over_gpu is None) != (self.gpu_s == 0):
            raise ValueError(
                f"cpu_over_gpu is null exactly when gpu_s is 0 (gpu_s {self.gpu_s!r}, "
                f"cpu_over_gpu {self.cpu_over_gpu!r})"
            )
        if self.cpu_over_gpu is not None and not math.isclose(self.cpu_over_gpu, self.cpu_s / self.gpu_s, rel_tol=1e-9):
            raise ValueError(f"cpu_over_gpu {self.cpu_over_gpu!r} is not cpu_s / gpu_s = {self.cpu_s / self.gpu_s!r}")


@record(schema="break-even", version=4)
class BreakEvenTable:
    """tables/break_even.json: every break-even curve, value by value, and its summary (all modelled);
    the intervals resample the measurements of `resampled_devices` and, where the GPU is a profile's
    (`gpu_profile`), draw its figures too; seeded by `seed` (config)."""

    summary: tuple[BreakEvenSummary, ...]
    curves: tuple[CurveRow, ...]
    gpu_model_source: ModelSource
    label: Literal["modelled"]
    resampled_devices: tuple[str, ...]
    seed: Count
    gpu_profile: ProfileUse | None
    coverage: Coverage | None  # the intervals' simulated coverage for this design (analyze.planner_calibration)

    def __post_init__(self) -> None:
        if (self.gpu_model_source == "profile") != (self.gpu_profile is not None):
            raise ValueError("a profile's GPU names its profile (gpu_profile), and only it")
        if len({(s.confidence, s.resamples) for s in self.summary}) > 1 or not self.resampled_devices:
            raise ValueError("every interval has the same confidence and resamples, from resampled devices")
        summarised = [(s.axis, s.placement) for s in self.summary]
        if len(set(summarised)) != len(summarised):
            raise ValueError(f"one summary per axis and placement, found {summarised}")
        curves: dict[tuple[str, str], list[int]] = {}
        for row in self.curves:
            curves.setdefault((row.axis, row.placement), []).append(row.value)
        if set(curves) != set(summarised):
            raise ValueError(f"the curves {sorted(curves)} and the summary {sorted(summarised)} differ")
        for (axis, placement), values in curves.items():
            if any(b <= a for a, b in zip(values, values[1:])):
                raise ValueError(f"{axis} ({placement}): the values of a curve increase, found {values}")
