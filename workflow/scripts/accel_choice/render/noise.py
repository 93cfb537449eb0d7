"""The run's own noise floor in words: how far this machine's speed moved between timing jobs, and
which jobs ran at another speed (the drift sentinel, records.sentinel)."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze.trust import remeasure_command
from accel_choice.records.decision import RunTrust
from accel_choice.records.sentinel import SentinelSummary


def noise_floor_section(sentinels: Sequence[tuple[str, SentinelSummary]]) -> str:
    """One paragraph per device's sentinel, then the flagged jobs (kept in the tables, flagged)."""
    if not sentinels:
        return ""
    parts = ["## The run's noise floor (drift sentinel)"]
    for device, s in sentinels:
        jobs = len(s.jobs)
        ratios = [j.over_run_median for j in s.jobs]
        text = (
            f"Every {device} timing job timed the same fixed work ({s.workload}) at its start, between its rounds "
            f"of epochs and at its end. Over the {jobs} job(s) the median took {s.run_median_s * 1e3:.1f} ms; "
            f"job medians ranged {min(ratios):.2f}–{max(ratios):.2f}× of it."
        )
        if s.noise_floor is None:
            text += " Too few unflagged jobs to state a noise floor: treat every small difference as unproven."
        else:
            text += (
                f" **Differences below ±{s.noise_floor:.1%} on this machine today are not evidence**: that is how far "
                "the machine's own speed moved between jobs (half the central 90 % range of the "
                f"{sum(not j.reasons for j in s.jobs)} unflagged jobs of {jobs}), "
                f"and every comparison in this report counts a difference only when its {s.confidence:.0%} "
                "interval lies wholly beyond it."
            )
        flagged = [j for j in s.jobs if j.reasons]
        if flagged:
            text += (
                f"\n\n{len(flagged)} job(s) flagged (tolerance ±{s.tolerance:.0%} of the run's speed; kept in the "
                "tables, their cells marked):\n" + "\n".join(f"- {j.job}: " + "; ".join(j.reasons) for j in flagged)
            )
        else:
            text += f" No job ran more than ±{s.tolerance:.0%} off the run's speed, and none lost CPU to steal."
        parts.append(text)
    return "\n\n".join(parts)


def _why(trust: RunTrust) -> str:
    """The flags' reasons by kind, counted in jobs: "the machine's speed (sentinel) 20, other processes' CPU 12"."""
    kinds = {
        "sentinel": "the machine's speed (sentinel)",
        "stole": "hypervisor steal",
        "GPU clocks": "GPU clocks held down",
        "other processes": "other processes' CPU",
        "load average": "a rising load average",
    }
    counts = dict.fromkeys(kinds.values(), 0)
    for job in trust.flagged:
        text = " ".join(job.reasons)
        for key, kind in kinds.items():
            counts[kind] += key in text
    return ", ".join(f"{kind} {n}" for kind, n in counts.items() if n) or "other reasons"


def trust_banner(trust: RunTrust | None) -> str:
    """The report's first lines about the run itself: how many timing jobs were flagged and why; for a
    contaminated run, that its measured outcomes are undecided, and the one command that re-measures them."""
    if trust is None or not trust.flagged:
        return "" if trust is None else f"All {trust.jobs} timing jobs ran clean (no job flagged)."
    said = f"{len(trust.flagged)} of {trust.jobs} timing jobs were flagged (by {_why(trust)})"
    if not trust.contaminated:
        return f"{said}: kept in the tables, their cells marked (see The run's noise floor)."
    return (
        f"**This run was contaminated: {said}, more than the {trust.limit:.0%} the configuration allows "
        "(aggregate.bad_run_share). Every figure measured in it is unreliable, and every outcome resting on its timings "
        "(a measured speedup, the step-time growth) is undecided.** Re-measure only the flagged jobs on a quiet "
        f"machine: `{remeasure_command(trust)}`"
    )
