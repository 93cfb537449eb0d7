"""The few lines a run ends with (the Snakefile's `onsuccess`): the verdict, how far the run can be trusted,
where the report is and how to check the archive - so a finished `snakemake --cores 4` says its answer."""

from __future__ import annotations

from accel_choice.io import paths
from accel_choice.records.decision import Decision
from accel_choice.render.decision import claim
from accel_choice.render.noise import trust_banner


def end_of_run(decision: Decision, results: str) -> str:
    """The summary printed when the run succeeds; `results`: the results folder as the user names it."""
    verdict = decision.verdict
    lines = [f"accel-choice verdict: {verdict.device} ({verdict.outcome}). {claim(verdict)}"]
    if verdict.trust is not None:
        lines.append(trust_banner(verdict.trust).replace("**", ""))
    lines += [
        f"Report: {results}/{paths.REPORT} (tables in {results}/{paths.TABLES}/, the decision figure "
        f"{results}/{paths.DECISION_PNG}).",
        f"Check the archive later: .venv/bin/python workflow/scripts/verify_results.py {results}",
    ]
    return "\n".join(lines)
