"""One matched row of two results folders (`accel-choice compare`): a training variant with each side's
times and rates, their ratios B/A with their intervals and outcomes, and the full path.

The row is a record of Estimates (records.estimate), not a family of flattened fields: every reader asks
the row (`row.epoch_s.ratio.low`, `row.part("eval_s")`), and the flat columns of comparison.csv and of
comparison.json's `rows` are spelled in one place, `ComparisonRow.table_row` (io.tables.write_csv asks a record for it).
"""

from __future__ import annotations

from typing import Any, Literal

from accel_choice.records import Count, PositiveCount, record
from accel_choice.records.estimate import Estimate, columns
from accel_choice.records.loads import SecondsSpread
from accel_choice.records.training import Variant, variant_fields

Present = Literal["both", "a_only", "b_only"]
SIDES = ("a", "b")


@record
class TimeComparison:
    """One time of a row (epoch or eval): each side's estimate from its table, the ratio B/A with its t interval
    at the row's level and its outcome in words, the slowdown of B the row would catch with 80 % power beyond
    its noise floor and the gate (`detectable_ratio`), and the repeats a side that would catch one of
    compare_match.SIZED_FOR (`jobs_to_catch`; None past 200). Only the sides are set on a one-sided row.
    `in_job`: the same B/A over the rest of its job (analyze.row_relative), with its outcome and detectable
    slowdown; None where the row's job group has too few cells or jobs."""

    a: Estimate | None
    b: Estimate | None
    ratio: Estimate | None = None
    outcome: str | None = None
    detectable_ratio: float | None = None
    jobs_to_catch: PositiveCount | None = None
    in_job: Estimate | None = None
    in_job_outcome: str | None = None
    in_job_detectable_ratio: float | None = None


@record
class RateComparison:
    """samples/s: each side's estimate and the ratio B/A (the epoch ratio inverted, so its ends swap)."""

    a: Estimate | None
    b: Estimate | None
    ratio: Estimate | None = None


@record
class FullPathComparison:
    """The full path per epoch in one file format: each side's sum of medians with its min–max, their ratio
    (no interval: "no interval" is its outcome), each side's one-off start-up and which is faster in words."""

    format: str | None
    a: SecondsSpread | None  # the sum of the parts' medians, and of their min and max
    b: SecondsSpread | None
    ratio: float | None
    outcome: str | None
    startup_s_a: float | None
    startup_s_b: float | None
    comparison: str


@record
class MachineSpeed:
    """One table's drift sentinel in B over A (the same fixed workload timed in every job of both runs): the
    ratio of the job medians with its Welch t interval and its outcome in words. Did the machine itself change?"""

    table: str
    workload: str
    jobs_a: PositiveCount
    jobs_b: PositiveCount
    ratio: Estimate
    outcome: str

    def table_row(self) -> dict[str, Any]:
        """Return it as comparison.json's flat `machine_speed` entry."""
        return (
            {"table": self.table, "workload": self.workload, "jobs_a": self.jobs_a, "jobs_b": self.jobs_b}
            | columns("ratio", self.ratio, point="ratio_b_over_a")
            | {"confidence": self.ratio.level, "outcome": self.outcome}
        )


@record
class ComparisonRow(Variant):
    """One training variant of either side: its level (`confidence`, the row's share of the `family` of ratios
    held together at `family_confidence`), the noise floor its outcomes are decided against, its times, rate and
    full path, which side's cell was flagged noisy, and which median is lower in words."""

    present: Present
    confidence: float | None
    family_confidence: float | None
    family: Count | None
    noise_floor: float | None
    epoch_s: TimeComparison
    eval_s: TimeComparison
    samples_per_s: RateComparison
    epoch_comparison: str
    noisy_a: bool | None
    noisy_b: bool | None
    full_path: FullPathComparison

    def part(self, metric: str) -> TimeComparison | RateComparison | FullPathComparison:
        """Return the comparison of `metric`: "epoch_s", "eval_s", "samples_per_s" or "full_path_s"."""
        return self.full_path if metric == "full_path_s" else getattr(self, metric)

    def side(self, metric: str, side: str) -> tuple[float, float, float] | None:
        """Side `side` ("a" or "b") of `metric` as (point, low, high): an interval, or the full path's min–max."""
        value = getattr(self.part(metric), side)
        if value is None:
            return None
        return (
            (value.median, value.min, value.max)
            if isinstance(value, SecondsSpread)
            else (value.point, value.low, value.high)
        )

    def ratio_values(self, metric: str) -> tuple[float, float | None, float | None] | None:
        """Return the ratio B/A of `metric` with its interval's ends (None, None for the full path: no interval)."""
        ratio = self.part(metric).ratio
        if ratio is None:
            return None
        return (ratio, None, None) if isinstance(ratio, float) else (ratio.point, ratio.low, ratio.high)

    def table_row(self) -> dict[str, Any]:
        """Return the row as the flat columns of comparison.csv and comparison.json.

        The row as the flat columns of comparison.csv and comparison.json: `<metric>_<side>` with its bounds
        (`_ci_low`/`_ci_high`; the full path's `_min`/`_max`), `<metric>_ratio_b_over_a` with `_ratio_ci_low`
        and `_ratio_ci_high`, `<metric>_outcome`: the one place these names are spelled."""
        flat: dict[str, Any] = variant_fields(self)
        flat |= {
            "present": self.present,
            "confidence": self.confidence,
            "family_confidence": self.family_confidence,
            "family": self.family,
            "noise_floor": self.noise_floor,
        }
        for name in ("epoch_s", "eval_s"):
            time = self.part(name)
            flat |= _sides(name, time) | _ratio(name, time.ratio) | {f"{name}_outcome": time.outcome}
            flat |= {f"{name}_detectable_ratio": time.detectable_ratio, f"{name}_jobs_to_catch": time.jobs_to_catch}
            flat |= columns(f"{name}_in_job", time.in_job, point=f"{name}_in_job_b_over_a")
            flat |= {
                f"{name}_in_job_outcome": time.in_job_outcome,
                f"{name}_in_job_detectable_ratio": time.in_job_detectable_ratio,
            }
        flat |= _sides("samples_per_s", self.samples_per_s) | _ratio("samples_per_s", self.samples_per_s.ratio)
        flat |= {"epoch_comparison": self.epoch_comparison, "noisy_a": self.noisy_a, "noisy_b": self.noisy_b}
        path = self.full_path
        flat["full_path_format"] = path.format
        for side in SIDES:
            span = getattr(path, side)
            point, low, high = (span.median, span.min, span.max) if span else (None, None, None)
            flat |= {f"full_path_s_{side}": point, f"full_path_s_{side}_min": low, f"full_path_s_{side}_max": high}
        flat |= {
            "full_path_s_ratio_b_over_a": path.ratio,
            "full_path_s_ratio_ci_low": None,
            "full_path_s_ratio_ci_high": None,
            "full_path_s_outcome": path.outcome,
            "startup_s_a": path.startup_s_a,
            "startup_s_b": path.startup_s_b,
            "full_path_comparison": path.comparison,
        }
        return flat


def _sides(name: str, part: TimeComparison | RateComparison) -> dict[str, Any]:
    return columns(f"{name}_a", part.a) | columns(f"{name}_b", part.b)


def _ratio(name: str, ratio: Estimate | None) -> dict[str, Any]:
    return columns(f"{name}_ratio", ratio, point=f"{name}_ratio_b_over_a")
