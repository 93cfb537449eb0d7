"""Render the timing plan (timing.budget_s): how many CPU training jobs were added, and why they stopped."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze.timing_plan import Narrowing
from accel_choice.records.timing_plan import TimingPlan
from accel_choice.render.formatting import table

STOPPED = {
    "target_met": "the ties with the fastest and the step-time growth were all within the target",
    "budget_spent": "one more round would have passed the budget",
}


def _widest(plan: TimingPlan) -> str:
    return "—" if plan.widest is None else f"±{plan.widest:.1%}"


def plan_line(plans: Sequence[TimingPlan]) -> str:
    """Render one first-screen line: the CPU training jobs, and why the plan stopped there."""
    if not plans:
        return ""
    first, last = plans[0], plans[-1]
    line = (
        f"CPU training jobs: {last.next_jobs} ({first.jobs} planned, {last.next_jobs - first.jobs} added). "
        f"Stopped: {STOPPED[last.decision]} (widest {_widest(last)}, target ±{last.target:.0%})."
    )
    if last.jobs_for_target is None:
        return line
    more = (last.jobs_for_target - last.jobs) * last.round_s
    return f"{line} About {last.jobs_for_target:,} jobs would meet it: about {more:,.0f} s more."


def budget_hint(narrowed: Narrowing | None) -> str:
    """Render what narrowing the widest tie or growth to the target would take (analyze.timing_plan.narrowing)."""
    if narrowed is None:
        return ""
    cost = "" if narrowed.more_s is None else f", about {narrowed.more_s:,.0f} s more"
    return (
        f"Widest interval ±{narrowed.widest:.1%} (target ±{narrowed.target:.0%}): about {narrowed.jobs_needed:,} jobs "
        f"would narrow it (`timing.budget_s`{cost}; docs/statistics.md)."
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
            f"The run started with {plans[0].jobs} CPU training jobs, each timing every thread count. "
            f"After them, and after every round added, the first screen's intervals were computed again. "
            f"A round added one job while an interval was wider than ±{last.target:.0%} "
            f"and the round fitted the budget of {last.budget_s:.0f} s.",
            table(
                ["round", "jobs", "seconds spent", "one more round (s)", "ties", "widest", "decision"],
                rows,
            ),
            "Stopping on a width tilts the intervals a little: runs stop early when their jobs happened to agree. "
            "`benchmarks/stopping_rule.py` counts the coverage after stopping (docs/statistics.md).",
        ]
    )
