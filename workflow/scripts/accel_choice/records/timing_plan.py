"""The timing plan: one round's decision to add CPU training jobs, or to stop (timing.budget_s).

The `plan_timing` checkpoint writes one per round; the next round, the aggregation and the report read
them. Nothing here is prose: the decision is a code, and each interval it weighed is a field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from accel_choice.records import Count, NonNegativeSeconds, Positive, PositiveCount, Seconds, record
from accel_choice.records.decision import StepScaling, TiedConfiguration
from accel_choice.records.estimate import Estimate
from accel_choice.records.upgrades import without_thread_counts

# add: one more CPU training job; target_met: every stated interval is narrow enough; budget_spent: one
# more round would pass timing.budget_s.
PlanDecision = Literal["add", "target_met", "budget_spent"]


# The width of an interval without spread (one job, or jobs that agree to the last digit): it says nothing yet,
# so it counts as ±100 %, wider than any target (timing.target is below 1).
UNKNOWN_WIDTH = 1.0


def width(estimate: Estimate) -> float:
    """Return an interval's half width over its point; UNKNOWN_WIDTH where it has no spread."""
    return estimate.half_width_ratio if estimate.high > estimate.low else UNKNOWN_WIDTH


def widest_of(estimates: Sequence[Estimate]) -> float | None:
    """Return the widest of these intervals (`width`); None where there are none."""
    return max(map(width, estimates), default=None)


def widest(ties: Sequence[TiedConfiguration], scaling: StepScaling | None) -> float | None:
    """Return the widest stated interval: every tie with the fastest and the step-time growth."""
    return widest_of([t.over_fastest for t in ties] + ([scaling.step_time_ratio] if scaling is not None else []))


@record(schema="timing-plan", version=2)
class TimingPlan:
    """One round of the stopping rule: the jobs measured so far, what they cost, what they state.

    `ties` and `scaling` are the first screen's CPU statements (analyze.decision_intervals.cpu_statements),
    computed from the jobs measured so far. `round_s` is one more round: the mean CPU training job's whole
    process (Snakemake's benchmark files): each job times every thread count."""

    round: Count  # 0: after timing.repeats jobs
    jobs: PositiveCount  # CPU training jobs measured when this round decided
    spent_s: NonNegativeSeconds  # every CPU training job so far, whole processes
    round_s: Seconds
    budget_s: NonNegativeSeconds
    target: Positive  # the half width over the point every stated interval must reach
    ties: tuple[TiedConfiguration, ...]
    scaling: StepScaling | None
    widest: float | None  # the widest stated interval's half width over its point; None: nothing stated
    decision: PlanDecision
    next_jobs: PositiveCount  # jobs the next round measures (jobs + 1 where added)
    jobs_for_target: PositiveCount | None  # about how many jobs would meet the target; None: met
    UPGRADES: ClassVar = {1: without_thread_counts}  # an archived version 1 plan is read (records.upgrades)

    def __post_init__(self) -> None:
        if self.widest != widest(self.ties, self.scaling):
            raise ValueError(f"widest is {self.widest!r}; the stated intervals' is {widest(self.ties, self.scaling)!r}")
        met = self.widest is None or self.widest <= self.target
        if (self.decision == "target_met") != met:
            raise ValueError(f"decision {self.decision!r} with widest {self.widest!r} and target {self.target}")
        fits = self.spent_s + self.round_s <= self.budget_s
        if (self.decision == "add" and not fits) or (self.decision == "budget_spent" and fits):
            raise ValueError(
                f"{self.decision}: {self.spent_s} s spent + {self.round_s} s a round, budget {self.budget_s} s"
            )
        if (self.jobs_for_target is None) != met:
            raise ValueError(f"jobs_for_target {self.jobs_for_target!r} with decision {self.decision!r}")
        if self.next_jobs != self.jobs + (self.decision == "add"):
            raise ValueError(f"next_jobs {self.next_jobs} after {self.jobs} jobs and decision {self.decision!r}")

    @property
    def stopped(self) -> bool:
        return self.decision != "add"
