"""Spend timing jobs where the first screen is close: the stopping rule of timing.budget_s and timing.target.

After timing.repeats CPU training jobs (each times every thread count), and after every round added, the first screen's CPU
intervals are computed from the jobs so far (decision_intervals.cpu_statements: the configurations tied with
the fastest, the step-time growth). One more job is added while some interval is wider than
the target and one more round fits the budget. The rule reads the stated intervals' widths; which ties are stated
depends on the data, as in the report.
Stopping on a width still tilts the intervals: analyze.calibration_adaptive counts their coverage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from accel_choice.analyze.decision_intervals import cpu_statements
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.decision import Verdict
from accel_choice.records.resources import ResourceTable
from accel_choice.records.timing_plan import PlanDecision, TimingPlan, widest
from accel_choice.records.training import TrainingCell


def decide(widest_width: float | None, spent_s: float, round_s: float, budget_s: float, target: float) -> PlanDecision:
    """Return whether to add a round: the target met, the budget spent, or one more job."""
    if widest_width is None or widest_width <= target:
        return "target_met"
    return "add" if spent_s + round_s <= budget_s else "budget_spent"


def jobs_for_target(widest_width: float | None, jobs: int, target: float) -> int | None:
    """Return about how many jobs would bring the widest interval to `target`; None where it is.

    A half width shrinks as one over the root of the jobs; the t quantile's own fall is left out, so the figure
    errs high."""
    if widest_width is None or widest_width <= target:
        return None
    return math.ceil(jobs * (widest_width / target) ** 2)


def plan_round(
    round_number: int,
    cells: Sequence[TrainingCell],
    walls_s: Sequence[float],
    budget_s: float,
    target: float,
    floor: float | None,
    rules: NoiseRules = NoiseRules(),
) -> TimingPlan:
    """Decide one round from the CPU cells so far and every CPU training job's whole-process wall time."""
    if not walls_s:
        raise ValueError("a round of the timing plan needs the wall time of at least one CPU training job")
    jobs = len(walls_s)
    _, ties, scaling = cpu_statements(cells, floor, rules)
    spent = float(sum(walls_s))
    round_s = spent / jobs  # the mean job's wall
    found = widest(ties, scaling)
    decision = decide(found, spent, round_s, budget_s, target)
    return TimingPlan(
        round=round_number,
        jobs=jobs,
        spent_s=spent,
        round_s=round_s,
        budget_s=budget_s,
        target=target,
        ties=ties,
        scaling=scaling,
        widest=found,
        decision=decision,
        next_jobs=jobs + (decision == "add"),
        jobs_for_target=jobs_for_target(found, jobs, target),
    )


@dataclass(frozen=True)
class Narrowing:
    """What narrowing a clean run's widest stated interval to the target would take, without a timing plan."""

    widest: float  # the widest tie or growth, as a half width over its point
    target: float  # timing.target
    jobs: int  # the CPU training jobs the run measured
    jobs_needed: int  # jobs_for_target's count
    more_s: float | None  # the added jobs' seconds: the CPU jobs' median process wall; None where it is unknown


def narrowing(
    verdict: Verdict, target: float, cells: Sequence[TrainingCell], resources: ResourceTable | None
) -> Narrowing | None:
    """Return what narrowing the widest tie or growth to `target` would take; None where it is within it.

    None too for a run without CPU cells and for a contaminated run: that one is measured again, not extended.
    The seconds are the CPU jobs' median whole-process wall (Snakemake's benchmark files) per added job."""
    found = widest(verdict.fastest_cpu_ties, verdict.scaling)
    cpu = [c for c in cells if c.device == "cpu"]
    if found is None or found <= target or not cpu or (verdict.trust is not None and verdict.trust.contaminated):
        return None
    jobs = max(c.repeats for c in cpu)
    needed = jobs_for_target(found, jobs, target)  # a count: found is beyond the target here
    wall = (
        next((r.process_wall_median_s for r in resources.rules if r.rule == "time_cpu_training"), None)
        if resources
        else None
    )
    more = None if wall is None else (needed - jobs) * wall
    return Narrowing(widest=found, target=target, jobs=jobs, jobs_needed=needed, more_s=more)
