"""Two archived results/ folders side by side: matched rows with ratios, differences and warnings,
and the regression gate (`regressions`).

Load → match → warn → render: io/results_folder.py loads each folder's own tables as records;
compare_match.py matches rows on the training variant (`VARIANT_KEYS`) with ratios always B/A
(for a time below 1 means B is faster, for a throughput above 1), each with its Welch t interval
on the log job medians, its ratio over the rest of its job (row_relative) and an outcome in words;
compare_warnings.py says what makes the comparison unsafe; this module puts them together;
render/comparison.py writes the outputs. Nothing here runs a measurement.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
import dataclasses
from dataclasses import dataclass
from typing import Any

from accel_choice import records
from accel_choice.analyze import compare_warnings, row_relative
from accel_choice.analyze.compare_table import TableRegression, TableShift, table_regressions, table_shifts
from accel_choice.analyze.job_intervals import gate_fails, outcome, ratio_interval
from accel_choice.analyze.compare_match import (
    METRIC_NAMES,
    OUTCOME_WORDS,
    SIZED_FOR,
    TIME_METRICS,
    choose_full_path_format,
    comparison_rows,
    config_differences,
    environment_differences,
    fastest_full_path,
)
from accel_choice.io import paths, results_folder
from accel_choice.io.results_folder import ManifestCheck, ResultsFolder
from accel_choice.records.comparison import ComparisonRow, MachineSpeed
from accel_choice.records.sentinel import SentinelSummary


@dataclass(frozen=True)
class Comparison:
    sides: tuple[dict[str, Any], dict[str, Any]]
    rows: list[ComparisonRow]
    full_path_format: str | None
    fastest: dict[str, Any]
    environment_differences: list[dict[str, Any]]
    config_differences: list[dict[str, Any]]
    warnings: list[str]
    machine_speed: list[MachineSpeed] = dataclasses.field(default_factory=list)
    # Each device's whole table in B over A (analyze.compare_table): one figure for a shift every row shares.
    whole_table: list[TableShift] = dataclasses.field(default_factory=list)
    # B a byte-identical copy of A: "folder" (every file), "tables" (the training tables only), None (two runs).
    copy: str | None = None

    @property
    def detectable(self) -> dict[str, Any]:
        """Return, per time metric, the slowdown of B the rows would catch.

        Per time metric, the slowdown of B (a ratio B/A) the rows measured on both sides would catch with
        80 % power beyond their noise floor and the gate (`_spread_of`), and the repeats a side a typical row
        would need to catch one of SIZED_FOR (None: more than 200); None where no row has two jobs a side."""
        found: dict[str, Any] = {}
        for name in TIME_METRICS:
            times = [r.part(name) for r in self.rows if r.part(name).detectable_ratio]
            jobs = sorted(t.jobs_to_catch or math.inf for t in times)
            spread = _spread_of([t.detectable_ratio for t in times])
            found[name] = spread and spread | {
                "jobs_to_catch": _finite(statistics.median_low(jobs)),
                "sized_for": SIZED_FOR,
            }
        return found

    @property
    def detectable_in_job(self) -> dict[str, Any]:
        """Return, per time metric, the slowdown of B a row over the rest of its job would catch.

        Per time metric, the slowdown of B a row over the rest of its job would catch with 80 % power beyond the
        gate (`_spread_of`); None where no row has one."""
        return {
            name: _spread_of([r.part(name).in_job_detectable_ratio for r in self.rows if r.part(name).in_job])
            for name in TIME_METRICS
        }

    @property
    def tally(self) -> dict[str, Any]:
        """Rows per outcome for each time with an interval, and the rows one side lacks."""
        counts: dict[str, Any] = {name: tally(self.rows, name) for name in TIME_METRICS}
        counts["one_sided"] = sum(row.present != "both" for row in self.rows)
        return counts

    def as_json(self) -> dict[str, Any]:
        return {
            "sides": {"a": self.sides[0], "b": self.sides[1]},
            "ratio": "B/A: for times below 1 means B is faster; for samples/s above 1 means B is faster",
            "interval": (
                "*_ratio_ci_low..*_ratio_ci_high: Welch t interval of the ratio of the two sides' geometric-mean job "
                "medians (on the log scale, the jobs the repeats) at the row's `confidence`: the `family` ratios "
                "of the table (every row measured on both sides, epoch and eval) hold together at "
                "`family_confidence` (Bonferroni)"
            ),
            "outcome": (
                "B faster / A faster when the whole interval lies beyond 1 ± the row's noise_floor (the larger of "
                "the two runs' sentinel floors), else no measurable difference; 'no interval' for the full path"
            ),
            "tally": self.tally,
            "detectable": self.detectable,
            "detectable_in_job": self.detectable_in_job,
            "detectable_means": (
                "the slowdown of B (ratio B/A) a row's epoch or eval time would be caught at with 80 % power: beyond "
                "the row's noise floor and the gate's percent, at the row's `confidence`, from the spread of its jobs"
            ),
            "full_path_format": self.full_path_format,
            "fastest_full_path": self.fastest,
            "machine_speed": [m.table_row() for m in self.machine_speed],
            "whole_table": [shift.as_json() for shift in self.whole_table],
            "whole_table_means": (
                "each device's epoch time over all its cells measured on both sides: per timing job the geometric "
                "mean of its cells' median epochs, B/A over the job groups with a Welch t interval at `confidence`; "
                "--fail-if-slower fails when its low end passes 1 + PCT and machine_ratio_ci_high (the sentinels')"
            ),
            "rows": [row.table_row() for row in self.rows],
            "environment_differences": self.environment_differences,
            "config_differences": self.config_differences,
            "warnings": self.warnings,
            "byte_identical_copy": self.copy,
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
        # jobs a CPU cell (timing.repeats, or what timing.budget_s added): its rows' intervals rest on them
        "cpu_jobs": ", ".join(map(str, sorted({c.repeats for c in side.training if c.device == "cpu"}))) or None,
        "manifest": _manifest_status(side.manifest),
        "sentinels": {table: _sentinel_summary(sentinel) for table, sentinel in side.sentinels.items()},
    }


def _sentinel_summary(sentinel: SentinelSummary) -> dict[str, Any]:
    return {
        "workload": sentinel.workload,
        "noise_floor": sentinel.noise_floor,
        "jobs": len(sentinel.jobs),
        "flagged": sentinel.flagged,
        "confidence": sentinel.confidence,
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


def compare(
    a: ResultsFolder,
    b: ResultsFolder,
    full_path_format: str | None = None,
    gate: float = 0.0,
    family: int | None = None,
) -> Comparison:
    """`gate`: the regression gate's percent (--fail-if-slower), for the slowdown each row could catch.
    `family`: the rows' family size instead of `family_size`'s (benchmarks/plant_slowdowns.py --family)."""
    fmt = full_path_format or choose_full_path_format(a, b)
    rows = comparison_rows(a, b, fmt, gate, family)
    configs = config_differences(a, b)
    machine = machine_speed(a, b)
    copy = results_folder.copy_of(a.path, b.path)
    warnings = (
        compare_warnings.copy_warnings(copy, a.label, b.label)
        + compare_warnings.warnings(a, b, rows, configs, fmt)
        + [
            f"the machines themselves ran at different speeds: the {m.table} sentinel ({m.workload}) took "
            f"{m.ratio.point:.3f}× as long in {b.label} as in {a.label} ({m.ratio.level * 100:g} % interval "
            f"{m.ratio.low:.3f}–{m.ratio.high:.3f}); rows that differ by about that much differ by the "
            "machine, not the code"
            for m in machine
            if m.outcome != OUTCOME_WORDS["no_difference"]
        ]
    )
    return Comparison(
        sides=(side_summary(a), side_summary(b)),
        rows=rows,
        full_path_format=fmt,
        fastest=fastest_full_path(a, b),
        environment_differences=environment_differences(a, b),
        config_differences=configs,
        warnings=warnings,
        machine_speed=machine,
        whole_table=table_shifts(a, b, machine),
        copy=copy,
    )


def _spread_of(ratios: Sequence[float | None]) -> dict[str, Any] | None:
    """Return the best, median and worst of the rows' detectable ratios, and how many rows have one (None: none)."""
    found = sorted(r for r in ratios if r is not None and math.isfinite(r))
    if not found:
        return None
    return {"best": found[0], "median": statistics.median(found), "worst": found[-1], "rows": len(found)}


def _finite(value: float) -> int | None:
    return None if math.isinf(value) else int(value)


def machine_speed(a: ResultsFolder, b: ResultsFolder) -> list[MachineSpeed]:
    """Compare each table's sentinel in B over A: Welch t on the log job medians at the tables' level."""
    found = []
    for table in sorted(set(a.sentinels) & set(b.sentinels)):
        sa, sb = a.sentinels[table], b.sentinels[table]
        if sa.workload != sb.workload or not sa.jobs or not sb.jobs:
            continue
        level = max(sa.confidence, sb.confidence)
        ratio = ratio_interval([[j.median_s] for j in sa.jobs], [[j.median_s] for j in sb.jobs], level=level)
        found.append(
            MachineSpeed(
                table=table,
                workload=sa.workload,
                jobs_a=len(sa.jobs),
                jobs_b=len(sb.jobs),
                ratio=ratio,
                outcome=OUTCOME_WORDS[outcome(ratio)],
            )
        )
    return found


def tally(rows: Sequence[ComparisonRow], metric: str = "epoch_s") -> dict[str, int]:
    """Count how many rows measured on both sides have each outcome for `metric` (a time with an interval)."""
    counts = dict.fromkeys(OUTCOME_WORDS.values(), 0)
    for row in rows:
        if row.part(metric).outcome in counts:
            counts[row.part(metric).outcome] += 1
    return counts


# ---------------------------------------------------------------- the regression gate


@dataclass(frozen=True)
class Regression:
    """A row where B is slower than A by more than the gate allows, the whole interval beyond it: its raw ratio,
    or its ratio over the rest of its job (`in_job`)."""

    row: ComparisonRow
    metric: str  # a name in TIME_METRICS
    in_job: bool = False

    def as_json(self, label_a: str, label_b: str, percent: float) -> dict[str, Any]:
        return {
            "variant": self.row.name,
            "batch_size": self.row.batch_size,
            "metric": self.metric,
            "in_job": self.in_job,
        } | {"line": self.line(label_a, label_b, percent)}

    def line(self, label_a: str, label_b: str, percent: float) -> str:
        row, part = self.row, self.row.part(self.metric)
        ratio = part.in_job if self.in_job else part.ratio  # type: ignore[union-attr]
        over, against = (
            (" over the rest of its job", "against the cells timed beside it")
            if self.in_job
            else ("", f"(noise floor ±{(row.noise_floor or 0.0) * 100:.1f} %)")
        )
        return (
            f"{row.name} B={row.batch_size}: {METRIC_NAMES[self.metric]}{over} {label_b}/{label_a} "
            f"{ratio.point:.3f} ({row.confidence * 100:g} % interval {ratio.low:.3f}–{ratio.high:.3f}): "
            f"{label_b} slower by more than {percent:g} % {against}"
        )


def all_regressions(result: Comparison, percent: float) -> list[Regression | TableRegression]:
    """Return what fails --fail-if-slower.

    What fails --fail-if-slower: the rows beyond the gate (`regressions`), then each device's whole table
    beyond it (analyze.compare_table)."""
    return [*regressions(result, percent), *table_regressions(result.whole_table, result.rows, percent)]


def regressions(result: Comparison, percent: float) -> list[Regression]:
    """List the rows and times (epoch, eval) where B is slower than A by more than `percent` %.

    A raw row fails with its whole interval beyond 1 + percent/100 and beyond its noise floor (the outcome "A
    faster"), so a difference the runs' own drift explains never fails it. A row over the rest of its job fails
    with its whole in-job interval beyond 1 + percent/100 and its raw point beyond it too: the machine's drift
    cancels in the quotient, and a row is not called slower because other cells of its job got faster.
    One-sided rows and the full path (no interval) are never gated."""
    if not (percent >= 0 and math.isfinite(percent)):
        raise ValueError(f"the gate's percent must be a non-negative finite number, got {percent!r}")
    outcomes = {words: said for said, words in OUTCOME_WORDS.items()}
    found = []
    for row in result.rows:
        for name in TIME_METRICS:
            part = row.part(name)
            if part.ratio is not None and gate_fails(part.ratio.low, outcomes[part.outcome], percent):
                found.append(Regression(row, name))
            elif (
                part.in_job is not None
                and part.ratio is not None
                and row_relative.gate_fails_in_job(part.in_job, part.ratio.point, percent)
            ):
                found.append(Regression(row, name, in_job=True))
    return found
