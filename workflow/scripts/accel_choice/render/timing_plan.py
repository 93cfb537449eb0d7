"""Render the timing plan (timing.budget_s): how many CPU training jobs were added, and why they stopped."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze.timing_plan import jobs_for_target
from accel_choice.records.decision import Verdict
from accel_choice.records.resources import ResourceTable
from accel_choice.records.timing_plan import TimingPlan, widest
from accel_choice.records.training import TrainingCell
from accel_choice.render.formatting import table

STOPPED = {
    "target_met": "the ties with the fastest and the step-time growth were all within the target",
    "budget_spent": "one more round would have passed the budget",
}


def _widest(plan: TimingPlan) -> str:
    return "—" if plan.widest is None else f"±{plan.widest:.1%}"


def plan_line(plans: Sequence[TimingPlan]) -> str:
    """Render one first-screen line: the jobs a thread count, and why the plan stopped there."""
    if not plans:
        return ""
    first, last = plans[0], plans[-1]
    line = (
        f"Jobs a thread count: {last.next_jobs} ({first.jobs} planned, {last.next_jobs - first.jobs} added). "
        f"Stopped: {STOPPED[last.decision]} (widest {_widest(last)}, target ±{last.target:.0%})."
    )
    if last.jobs_for_target is None:
        return line
    more = (last.jobs_for_target - last.jobs) * last.round_s
    return f"{line} About {last.jobs_for_target:,} jobs a thread count would meet it: about {more:,.0f} s more."


def budget_hint(verdict: Verdict, target: float, cells: Sequence[TrainingCell], resources: ResourceTable | None) -> str:
    """Render, for a clean run without a timing plan whose widest tie or growth passes `target`, what narrowing it costs.

    The jobs as timing_plan.jobs_for_target counts them; the seconds from the CPU jobs' median process wall."""
    found = widest(verdict.fastest_cpu_ties, verdict.scaling)
    cpu = [c for c in cells if c.device == "cpu"]
    if found is None or found <= target or not cpu or (verdict.trust is not None and verdict.trust.contaminated):
        return ""  # a contaminated run is re-measured, not extended
    jobs = max(c.repeats for c in cpu)
    needed = jobs_for_target(found, jobs, target) or jobs
    wall = (
        next((r.process_wall_median_s for r in resources.rules if r.rule == "time_cpu_training"), None)
        if resources
        else None
    )
    cost = "" if wall is None else f", about {(needed - jobs) * len({c.threads for c in cpu}) * wall:,.0f} s more"
    return (
        f"Widest interval ±{found:.0%} (target ±{target:.0%}): about {needed:,} jobs a thread count would narrow it "
        f"(`timing.budget_s`{cost}; docs/statistics.md)."
    )


def plan_section(plans: Sequence[TimingPlan]) -> str:
    """Render every round: jobs measured, seconds spent, the widest stated interval, the decision."""
    if not plans:
        return ""
    last = plans[-1]
    rows = [
        (p.round, p.jobs, f"{p.spent_s:.0f}", f"{p.round_s:.0f}", len(p.ties), _widest(p), p.decision) for p in plans
    ]
    return "\n\n".join(
        [
            "## Jobs added where the answer was close (timing.budget_s)",
            f"The run started with {plans[0].jobs} CPU training jobs a thread count. "
            f"After them, and after every round added, the first screen's intervals were computed again. "
            f"A round added one job a thread count while an interval was wider than ±{last.target:.0%} "
            f"and the round fitted the budget of {last.budget_s:.0f} s.",
            table(
                ["round", "jobs a thread count", "seconds spent", "one more round (s)", "ties", "widest", "decision"],
                rows,
            ),
            "Stopping on a width tilts the intervals a little: runs stop early when their jobs happened to agree. "
            "`benchmarks/stopping_rule.py` counts the coverage after stopping (docs/statistics.md).",
        ]
    )
