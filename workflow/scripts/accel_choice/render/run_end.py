"""The few lines a run ends with (the Snakefile's `onsuccess`): the verdict, how far the run can be trusted,
where the report is and how to check the archive - so a finished `snakemake --cores 4` says its answer."""

from __future__ import annotations

from accel_choice.io import paths
from accel_choice.records.decision import Decision
from accel_choice.render.decision import claim
from accel_choice.render.noise import remeasure_line, trust_banner


def end_of_run(decision: Decision, results: str) -> str:
    """Say the verdict, the trust, the report and the archive check a run ends with (`results`: as the user names it).

    The verdict's outcome is said once: "CPU", or "CPU (undecided)" where the device differs from the outcome."""
    verdict = decision.verdict
    said = verdict.device if verdict.outcome == verdict.device else f"{verdict.device} ({verdict.outcome})"
    lines = [f"accel-choice verdict: {said}. {claim(verdict)}"]
    if verdict.trust is not None:
        trust = trust_banner(verdict.trust).replace("**", "")
        lines.append(f"{trust} {remeasure_line(verdict.trust)}" if verdict.trust.contaminated else trust)
    lines += [
        f"Report: {results}/{paths.REPORT} (tables in {results}/{paths.TABLES}/, the decision figure "
        f"{results}/{paths.DECISION_PNG}).",
        f"Check the archive later: .venv/bin/accel-choice verify {results}",
    ]
    return "\n".join(lines)
