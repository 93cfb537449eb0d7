"""Two archived results/ folders side by side: matched rows with ratios, differences and warnings.

Load → match → warn → render: io/results_folder.py loads each folder's own tables as records;
compare_match.py matches rows on the training variant (`VARIANT_KEYS`) with ratios always B/A
(for a time below 1 means B is faster, for a throughput above 1), each said in words too;
compare_warnings.py says what makes the comparison unsafe; this module puts them together;
render/comparison.py writes the outputs. Nothing here runs a measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accel_choice import records
from accel_choice.analyze import compare_warnings
from accel_choice.analyze.compare_match import (
    choose_full_path_format,
    comparison_rows,
    config_differences,
    environment_differences,
    fastest_full_path,
)
from accel_choice.io import paths
from accel_choice.io.results_folder import ManifestCheck, ResultsFolder


@dataclass(frozen=True)
class Comparison:
    sides: tuple[dict[str, Any], dict[str, Any]]
    rows: list[dict[str, Any]]
    full_path_format: str | None
    fastest: dict[str, Any]
    environment_differences: list[dict[str, Any]]
    config_differences: list[dict[str, Any]]
    warnings: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "sides": {"a": self.sides[0], "b": self.sides[1]},
            "ratio": "B/A: for times below 1 means B is faster; for samples/s above 1 means B is faster",
            "full_path_format": self.full_path_format,
            "fastest_full_path": self.fastest,
            "rows": self.rows,
            "environment_differences": self.environment_differences,
            "config_differences": self.config_differences,
            "warnings": self.warnings,
        }


# ---------------------------------------------------------------- the comparison


def side_summary(side: ResultsFolder) -> dict[str, Any]:
    provenance = side.provenance or {}
    commit, source = _commit(side)
    return {
        "label": side.label,
        "path": str(side.path.resolve()),
        "workflow_commit": commit,
        "workflow_dirty": (provenance.get("workflow") or _fallback_workflow(side)).get("dirty"),
        "commit_source": source,
        "snakemake_version": provenance.get("snakemake_version") or side.environment.quick.packages.get("snakemake"),
        "created": provenance.get("created"),
        "command_line": provenance.get("command_line"),
        "working_directory": provenance.get("working_directory"),
        "host": (provenance.get("invocation") or {}).get("host"),
        "verdict": side.verdict.device if side.verdict else None,
        "verdict_outcome": side.verdict.outcome if side.verdict else None,
        "cpu_rows": len(side.training) - len(side.gpu_rows),
        "gpu_rows": len(side.gpu_rows),
        "manifest": _manifest_status(side.manifest),
    }


def _fallback_workflow(side: ResultsFolder) -> dict[str, Any]:
    """The workflow record of the aggregation job (or, failing a commit there, of the environment job)."""
    for environment in (side.table_environment, side.environment.quick):
        if environment.workflow.commit:
            return records.to_json(environment.workflow)
    return records.to_json(side.table_environment.workflow)


def _commit(side: ResultsFolder) -> tuple[str | None, str | None]:
    commit = ((side.provenance or {}).get("workflow") or {}).get("commit")
    if commit:
        return commit, paths.PROVENANCE
    commit = _fallback_workflow(side).get("commit")
    return (commit, f"environment record in {paths.CPU_TABLE}") if commit else (None, None)


def _manifest_status(check: ManifestCheck) -> str:
    if not check.present:
        return "absent"
    return f"verified ({check.result.listed} files)" if check.verified else "does not verify"


def compare(a: ResultsFolder, b: ResultsFolder, full_path_format: str | None = None) -> Comparison:
    fmt = full_path_format or choose_full_path_format(a, b)
    rows = comparison_rows(a, b, fmt)
    configs = config_differences(a, b)
    warnings = compare_warnings.warnings(a, b, rows, configs, fmt)
    return Comparison(
        sides=(side_summary(a), side_summary(b)),
        rows=rows,
        full_path_format=fmt,
        fastest=fastest_full_path(a, b),
        environment_differences=environment_differences(a, b),
        config_differences=configs,
        warnings=warnings,
    )
