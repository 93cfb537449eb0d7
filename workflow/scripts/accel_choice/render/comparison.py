"""The comparison of two lab reports for people: comparison.md, .csv, .json and the 2×2 figure
(render/comparison_figure.py), written as a set."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from accel_choice.analyze.compare import Comparison
from accel_choice.analyze.compare_match import METRIC_NAMES, NO_INTERVAL, OUTCOME_WORDS, TIME_METRICS
from accel_choice.analyze.compare_warnings import shown
from accel_choice.io import atomic, paths, tables
from accel_choice.records.comparison import ComparisonRow
from accel_choice.records.training import VARIANT_KEYS
from accel_choice.render.comparison_figure import comparison_figure
from accel_choice.render.formatting import counted, ms, table

OUTPUT_NAMES = ("comparison.md", "comparison.csv", "comparison.json", "comparison.png", "comparison.svg")


# ---------------------------------------------------------------- markdown


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _bounded(row: ComparisonRow, name: str, side: str, show: Any) -> str:
    """A side's median with its interval (a training cell) or its min–max (the full path)."""
    values = row.side(name, side)
    if values is None:
        return "—"
    median, low, high = values
    return f"{show(median)} ({show(low)}–{show(high)})"


def _ratio_cell(row: ComparisonRow, name: str) -> str:
    """The ratio B/A with its interval, or with "no interval" where there is nothing to resample."""
    ratio = row.ratio_values(name)
    if ratio is None:
        return "—"
    value, low, high = ratio
    if low is None or high is None:
        return f"{_ratio_text(value)} ({NO_INTERVAL})"
    return f"{_ratio_text(value)} ({_ratio_text(low)}–{_ratio_text(high)})"


def _variant_cell(row: ComparisonRow, label_a: str, label_b: str) -> str:
    noisy = [label for label, flag in ((label_a, row.noisy_a), (label_b, row.noisy_b)) if flag]
    return row.name + (f" (noisy: {', '.join(noisy)})" if noisy else "")


def _epoch_cell(row: ComparisonRow) -> str:
    """The epoch outcome in bold, with which median is lower in words; only the words for a one-sided row."""
    outcome, words = row.epoch_s.outcome, row.epoch_comparison
    if outcome is None:
        return words
    return f"**{outcome}** ({'medians: ' if outcome == OUTCOME_WORDS['no_difference'] else ''}{words})"


def _in_job_cell(row: ComparisonRow) -> str:
    """The epoch ratio over the rest of its job (analyze.row_relative) with its interval and outcome."""
    ratio = row.epoch_s.in_job
    if ratio is None:
        return "—"
    return (
        f"{_ratio_text(ratio.point)} ({_ratio_text(ratio.low)}–{_ratio_text(ratio.high)}): {row.epoch_s.in_job_outcome}"
    )


def _eval_cell(row: ComparisonRow) -> str:
    outcome = row.eval_s.outcome
    return "—" if outcome is None else f"{_ratio_cell(row, 'eval_s')}: {outcome}"


def batch_size_table(rows: Sequence[ComparisonRow], label_a: str, label_b: str, level: str = "") -> str:
    ratio = f"{label_b}/{label_a}"
    ci = f"{level} CI".strip()
    headers = (
        "variant",
        f"epoch ms {label_a} ({ci})",
        f"epoch ms {label_b} ({ci})",
        f"epoch {ratio} ({ci})",
        "per epoch",
        f"epoch {ratio} over the rest of its job ({ci}): outcome",
        f"eval {ratio} ({ci}): outcome",
        f"samples/s {label_a} ({ci})",
        f"samples/s {label_b} ({ci})",
        f"samples/s {ratio} ({ci})",
        f"full path ms {label_a} (min–max)",
        f"full path ms {label_b} (min–max)",
        f"full path {ratio}",
    )
    cells = [
        (
            _variant_cell(r, label_a, label_b),
            _bounded(r, "epoch_s", "a", ms),
            _bounded(r, "epoch_s", "b", ms),
            _ratio_cell(r, "epoch_s"),
            _epoch_cell(r),
            _in_job_cell(r),
            _eval_cell(r),
            _bounded(r, "samples_per_s", "a", _rate),
            _bounded(r, "samples_per_s", "b", _rate),
            _ratio_cell(r, "samples_per_s"),
            _bounded(r, "full_path_s", "a", ms),
            _bounded(r, "full_path_s", "b", ms),
            _ratio_cell(r, "full_path_s"),
        )
        for r in rows
    ]
    return table(headers, cells)


def levels(result: Comparison) -> str:
    """Return the level the table's ratio intervals hold at together.

    The level the table's ratio intervals hold at together ("95 %"; "90 %/95 %" where rows differ; "" with
    no row on both)."""
    found = sorted({r.family_confidence for r in result.rows if r.family_confidence is not None})
    return "/".join(f"{level * 100:g} %" for level in found)


def _header_section(result: Comparison) -> str:
    a, b = result.sides
    fields = (
        ("path", "path"),
        ("workflow commit", "workflow_commit"),
        ("uncommitted changes", "workflow_dirty"),
        ("commit read from", "commit_source"),
        ("Snakemake", "snakemake_version"),
        ("created", "created"),
        ("command line", "command_line"),
        ("host", "host"),
        ("verdict", "verdict"),
        ("CPU rows", "cpu_rows"),
        ("GPU rows", "gpu_rows"),
        ("jobs a CPU row", "cpu_jobs"),
        (paths.MANIFEST, "manifest"),
    )
    rows = [(name, _md(a.get(key)), _md(b.get(key))) for name, key in fields]
    return f"# Comparison: {a['label']} (A) vs {b['label']} (B)\n\n" + table(
        ("", f"A: {a['label']}", f"B: {b['label']}"), rows
    )


def _md(value: Any) -> str:
    text = "not recorded" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _reading_section(result: Comparison) -> str:
    a, b = (side["label"] for side in result.sides)
    fmt = result.full_path_format or "none in common"
    level = levels(result) or "the tables' level"
    return (
        "## How to read this\n\n"
        f"Every ratio is **{b}/{a}** (B over A) of the two sides' times, each the geometric mean of its jobs' median "
        "epochs (the jobs are the repeats: each is one process, with its own share of the machine's drift). "
        f"For times (epoch, eval, full path) a ratio below 1 means {b} is faster; for samples/s a ratio above 1 means "
        f"{b} is faster. Each side's median carries its own {level} interval from its table; each ratio carries a "
        "Welch t interval on the logarithms of the two sides' job medians (two runs share no job), and the table's "
        "ratios are one family: each row's interval is at the level (column `confidence` of comparison.csv) that "
        f"keeps all of them together at {level} (Bonferroni), so an A/A comparison of two runs of one machine "
        "declares some row different, or fails the gate, at most that often. The outcome is **B faster** or **A faster** only when the whole interval lies beyond 1 ± "
        "the row's noise floor (the larger of the two runs' floors, below); otherwise **no measurable difference**. "
        "The 'per epoch' column gives the outcome and which median is lower in words. "
        f"Full path = load + convert + transfer + train epoch + eval, format `{fmt}`, fixed start-up (CUDA context) "
        f"excluded: a sum of medians with no per-job data, so its ratio has **{NO_INTERVAL}** and decides nothing; "
        "its range is the sum of the parts' min–max. Rows are matched on "
        f"({', '.join(VARIANT_KEYS)}); a row measured on one side only shows '—' for the other. "
        "Absolute times of two runs also reflect each machine's state at the time (docs/lab-report.md, "
        "Comparing two lab reports: one machine, an hour apart, identical timing code, medians up to ~10 % apart); "
        "the noise floors are each run's own measure of that drift."
    )


def _floor_line(side: dict[str, Any], letter: str, table_name: str, sentinel: dict[str, Any]) -> str:
    who = f"{side['label']} ({letter})"
    jobs = f"sentinel `{sentinel['workload']}`, {counted(sentinel['jobs'], 'job')}, {sentinel['flagged']} flagged"
    floor = sentinel["noise_floor"]
    if floor is None:
        return (
            f"- {who}, {table_name.upper()} jobs: no noise floor ({jobs}; three unflagged jobs are needed): "
            "the drift of that run is not known."
        )
    percent = f"±{floor:.1%}".replace("%", " %")
    return (
        f"- {who}, {table_name.upper()} jobs: differences below {percent} on {side['label']}'s machine that day "
        f"are not evidence ({jobs})."
    )


def _tally_line(result: Comparison, name: str) -> str:
    a, b = (side["label"] for side in result.sides)
    counts = result.tally[name]

    def rows(n: int) -> str:
        return f"{n} row{'' if n == 1 else 's'}"

    return (
        f"**{METRIC_NAMES[name].capitalize()}:** {rows(counts['B faster'])} B faster ({b}), "
        f"{rows(counts['A faster'])} A faster ({a}), "
        f"{rows(counts['no measurable difference'])} no measurable difference"
        f"; {rows(result.tally['one_sided'])} on one side only."
    )


def _floor_section(result: Comparison) -> str:
    lines = [
        _floor_line(side, letter, name, sentinel)
        for side, letter in zip(result.sides, "AB")
        for name, sentinel in side["sentinels"].items()
    ]
    return (
        "## Noise floors and the tally\n\n"
        "Each run timed a fixed reference workload (the sentinel) through every timing job; how far its speed moved "
        "between jobs is that run's noise floor.\n\n"
        + "\n".join(lines)
        + "\n\nEach row is decided against the larger of its two sides' floors (0 where neither has one).\n\n"
        + "\n\n".join(_tally_line(result, name) for name in TIME_METRICS)
    )


def sensitivity_lines(result: Comparison) -> list[str]:
    """Say what this comparison could have seen.

    What this comparison could have seen, in sentences: per time metric the slowdown of B a row would catch
    with 80 % power (the median row's and the best row's), over the rest of its job first (what the terminal's
    table shows), then raw; whether each table's machine itself changed, and each whole table's shift
    (analyze.compare_table)."""
    a, b = (side["label"] for side in result.sides)
    lines = []
    for name in TIME_METRICS:
        found = result.detectable_in_job[name]
        if found is not None:
            lines.append(
                f"{METRIC_NAMES[name].capitalize()} over the rest of its job (each job's cells against each other, so "
                f"the job's own speed cancels): a typical row would catch a slowdown of {_percent(found['median'])} "
                f"(median of {found['rows']}; the most sensitive row {_percent(found['best'])}, the least "
                f"{_percent(found['worst'])}) with 80 % power. A shift every cell shares shows in the whole table below."
            )
    for name in TIME_METRICS:
        found = result.detectable[name]
        if found is None:
            lines.append(
                f"{METRIC_NAMES[name].capitalize()}: no row has two jobs a side, so no slowdown can be caught."
            )
            continue
        lines.append(
            f"{METRIC_NAMES[name].capitalize()}, raw rows (each job's own speed in them): this comparison would catch "
            f"a slowdown of {b} of at least "
            f"{_percent(found['median'])} in a typical row (median of {found['rows']}; the most sensitive row "
            f"{_percent(found['best'])}, the least {_percent(found['worst'])}) with 80 % power; smaller ones pass as "
            "no measurable difference. "
            + (
                f"Catching a {_percent(found['sized_for'])} slowdown in a typical row would take about "
                f"{found['jobs_to_catch']} repeats a side (timing.repeats)."
                if found["jobs_to_catch"]
                else f"Even 200 repeats a side would not catch a {_percent(found['sized_for'])} slowdown in a "
                "typical row beyond its noise floor and the gate."
            )
        )
    for m in result.machine_speed:
        lines.append(
            f"Machine: the {m.table.upper()} sentinel ({m.workload}) took {m.ratio.point:.3f}× as long in "
            f"{b} as in {a} ({m.ratio.level * 100:g} % interval {m.ratio.low:.3f}–{m.ratio.high:.3f}, "
            f"{m.jobs_a} and {m.jobs_b} jobs): {m.outcome}."
        )
    for t in result.whole_table:
        lines.append(
            f"Whole {t.device.upper()} table: epoch time {b}/{a} {t.ratio.point:.3f}× over its {t.cells} cells in "
            f"{counted(t.groups, 'timing-job group')} ({t.ratio.level * 100:g} % interval {t.ratio.low:.3f}–{t.ratio.high:.3f}): "
            "a shift every row shares, which no row of a few jobs can see alone; --fail-if-slower fails when the "
            "interval lies wholly above its percent and above the machines' own change."
        )
    return lines


def _percent(ratio: float) -> str:
    """A ratio of times above 1 as the slowdown in percent: 1.25 -> "25 %"."""
    return f"{(ratio - 1) * 100:.0f} %"


def _sensitivity_section(result: Comparison) -> str:
    return "## What this comparison could see\n\n" + "\n".join(f"- {line}" for line in sensitivity_lines(result))


def _fastest_section(result: Comparison) -> str:
    fastest = result.fastest
    rows = []
    for side in ("a", "b"):
        best = fastest[side]
        label = result.sides[0 if side == "a" else 1]["label"]
        if best:
            startup = f", plus {ms(best['startup_s'])} ms start-up" if best.get("startup_s") else ""
            variant = f"{best['variant']} B={best['batch_size']} ({best['format']})"
            rows.append((label, variant, f"{ms(best['total_s'])}{startup}"))
    text = table(("side", "fastest full path", "ms per epoch"), rows)
    return (
        f"## Fastest full path on each side\n\n{text}\n\nAcross devices and formats, per epoch without the start-up: "
        f"{fastest['comparison'] or 'not comparable'} (ratio {_ratio_text(fastest['ratio_b_over_a'])}, "
        f"{NO_INTERVAL}: sums of medians)."
    )


def _difference_section(title: str, differences: Sequence[dict[str, Any]], label_a: str, label_b: str) -> str:
    if not differences:
        return f"## {title}\n\nNone: the two records agree."
    rows = [(d["key"], _md(shown(d["a"])), _md(shown(d["b"]))) for d in differences]
    return f"## {title}\n\n" + table(("key", label_a, label_b), rows)


def markdown(result: Comparison) -> str:
    a, b = (side["label"] for side in result.sides)
    sections = [
        _header_section(result),
        _reading_section(result),
        _floor_section(result),
        _sensitivity_section(result),
        _fastest_section(result),
    ]
    for size in sorted({r.batch_size for r in result.rows}):
        rows = [r for r in result.rows if r.batch_size == size]
        sections.append(f"## Batch size {size}\n\n" + batch_size_table(rows, a, b, levels(result)))
    sections.append(_difference_section("Environment differences", result.environment_differences, a, b))
    sections.append(_difference_section("Configuration differences", result.config_differences, a, b))
    warnings = "\n".join(f"- {w}" for w in result.warnings) or "None."
    sections.append(f"## Warnings\n\n{warnings}\n\nFigure: `comparison.png` / `comparison.svg`.")
    return "\n\n".join(sections) + "\n"


# ---------------------------------------------------------------- writing


def write_comparison(result: Comparison, out: str | os.PathLike[str]) -> list[Path]:
    """comparison.md/.csv/.json/.png/.svg in `out` (created), as a set.

    All five are written into a temporary folder beside `out` and moved in only when every one exists; a failure
    on the way (in the figure, say) leaves `out` as it was. Other files in `out` are not touched.
    """
    out = Path(out)
    with atomic.staged_folder(out, OUTPUT_NAMES) as staging:
        markdown_path, csv_path, json_path, png_path, svg_path = (staging / name for name in OUTPUT_NAMES)
        atomic.write_text(markdown_path, markdown(result))
        tables.write_csv(csv_path, result.rows)
        atomic.write_json(json_path, result.as_json())
        comparison_figure(result, png_path, svg_path)
    return [out / name for name in OUTPUT_NAMES]
