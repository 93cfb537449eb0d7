"""The comparison of two lab reports for people: comparison.md, .csv, .json and the 2×2 figure, written as a set."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accel_choice.records.training import VARIANT_KEYS  # noqa: E402
from accel_choice.analyze.compare import Comparison  # noqa: E402
from accel_choice.analyze.compare_warnings import shown  # noqa: E402
from accel_choice.io import atomic, paths, tables  # noqa: E402
from accel_choice.io.folder_checks import variant_name  # noqa: E402
from accel_choice.render.formatting import ms, save_figure, table  # noqa: E402

OUTPUT_NAMES = ("comparison.md", "comparison.csv", "comparison.json", "comparison.png", "comparison.svg")


# ---------------------------------------------------------------- markdown


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _spread(row: dict[str, Any], name: str, side: str, show: Any) -> str:
    median = row[f"{name}_{side}"]
    if median is None:
        return "—"
    return f"{show(median)} ({show(row[f'{name}_{side}_min'])}–{show(row[f'{name}_{side}_max'])})"


def _ratio_cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _variant_cell(row: dict[str, Any], label_a: str, label_b: str) -> str:
    noisy = [label for label, flag in ((label_a, row["noisy_a"]), (label_b, row["noisy_b"])) if flag]
    return variant_name(row) + (f" (noisy: {', '.join(noisy)})" if noisy else "")


def _verdict_cell(row: dict[str, Any]) -> str:
    words = row["epoch_comparison"]
    return words + (" (spreads overlap)" if row["epoch_s_spreads_overlap"] else "")


def batch_size_table(rows: Sequence[dict[str, Any]], label_a: str, label_b: str) -> str:
    ratio = f"{label_b}/{label_a}"
    headers = (
        "variant",
        f"epoch ms {label_a} (min–max)",
        f"epoch ms {label_b} (min–max)",
        f"epoch {ratio}",
        "per epoch",
        f"samples/s {label_a} (min–max)",
        f"samples/s {label_b} (min–max)",
        f"samples/s {ratio}",
        f"full path ms {label_a} (min–max)",
        f"full path ms {label_b} (min–max)",
        f"full path {ratio}",
    )
    cells = [
        (
            _variant_cell(r, label_a, label_b),
            _spread(r, "epoch_s", "a", ms),
            _spread(r, "epoch_s", "b", ms),
            _ratio_cell(r["epoch_s_ratio_b_over_a"]),
            _verdict_cell(r),
            _spread(r, "samples_per_s", "a", _rate),
            _spread(r, "samples_per_s", "b", _rate),
            _ratio_cell(r["samples_per_s_ratio_b_over_a"]),
            _spread(r, "full_path_s", "a", ms),
            _spread(r, "full_path_s", "b", ms),
            _ratio_cell(r["full_path_s_ratio_b_over_a"]),
        )
        for r in rows
    ]
    return table(headers, cells)


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
    return (
        "## How to read this\n\n"
        f"Every ratio is **{b}/{a}** (B over A) of the medians. For times (epoch, full path) a ratio below 1 means "
        f"{b} is faster; for samples/s a ratio above 1 means {b} is faster. The 'per epoch' column says it in words. "
        "Min–max is over each side's repeats; 'spreads overlap' means the two ranges touch, so the repeats do not "
        f"resolve the difference. Full path = load + convert + transfer + train epoch + eval (medians), format `{fmt}`, "
        "fixed start-up (CUDA context) excluded. Rows are matched on "
        f"({', '.join(VARIANT_KEYS)}); a row measured on one side only shows '—' for the other. "
        "Absolute times of two runs also reflect each machine's state at the time (see docs/lab-report.md, "
        "Comparing two lab reports: one machine, an hour apart, identical timing code, medians up to ~10 % apart), "
        "so differences inside the min–max spreads or "
        "below ~10 % are not evidence of a code or hardware difference."
    )


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
        f"{fastest['comparison'] or 'not comparable'} (ratio {_ratio_cell(fastest['ratio_b_over_a'])})."
    )


def _difference_section(title: str, differences: Sequence[dict[str, Any]], label_a: str, label_b: str) -> str:
    if not differences:
        return f"## {title}\n\nNone: the two records agree."
    rows = [(d["key"], _md(shown(d["a"])), _md(shown(d["b"]))) for d in differences]
    return f"## {title}\n\n" + table(("key", label_a, label_b), rows)


def markdown(result: Comparison) -> str:
    a, b = (side["label"] for side in result.sides)
    sections = [_header_section(result), _reading_section(result), _fastest_section(result)]
    for size in sorted({r["batch_size"] for r in result.rows}):
        rows = [r for r in result.rows if r["batch_size"] == size]
        sections.append(f"## Batch size {size}\n\n" + batch_size_table(rows, a, b))
    sections.append(_difference_section("Environment differences", result.environment_differences, a, b))
    sections.append(_difference_section("Configuration differences", result.config_differences, a, b))
    warnings = "\n".join(f"- {w}" for w in result.warnings) or "None."
    sections.append(f"## Warnings\n\n{warnings}\n\nFigure: `comparison.png` / `comparison.svg`.")
    return "\n\n".join(sections) + "\n"


# ---------------------------------------------------------------- figure


# Ratio panels: (title, y label with {a}/{b}, ((metric, line style, marker, legend text), ...)).
RATIO_PANELS = (
    (
        "Ratio of the medians: times",
        "time {b}/{a} (below 1: {b} faster)",
        (("epoch_s", "-", "o", "epoch time"), ("full_path_s", ":", "^", "full-path time")),
    ),
    (
        "Ratio of the medians: throughput",
        "samples/s {b}/{a} (above 1: {b} faster)",
        (("samples_per_s", "-", "o", "samples/s"),),
    ),
)
SIDE_STYLES = (("a", "-", "o"), ("b", "--", "s"))  # A solid circles, B dashed squares


def comparison_figure(result: Comparison, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> Any:
    """2×2 panels: each side's epoch time and full-path time (top), the ratios B/A of epoch time, full-path time
    and samples/s (bottom). Writes the PNG and SVG and returns the (closed) matplotlib Figure, for inspection."""
    figure, grid = plt.subplots(2, 2, figsize=(14, 10), layout="constrained")
    try:
        _draw(figure, grid, result)
        save_figure(figure, png_path, svg_path)
    finally:
        plt.close(figure)
    return figure


def _draw(figure: Any, grid: Any, result: Comparison) -> None:
    a, b = (side["label"] for side in result.sides)
    (epoch, path), ratios = grid
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    variants = sorted({variant_name(r) for r in result.rows})
    for number, name in enumerate(variants):
        rows = sorted((r for r in result.rows if variant_name(r) == name), key=lambda r: r["batch_size"])
        color = colors[number % len(colors)]
        for side, line, marker in SIDE_STYLES:
            _time_series(epoch, rows, "epoch_s", side, f"{name} · {side}", color, line, marker)
            _time_series(path, rows, "full_path_s", side, f"{name} · {side}", color, line, marker)
        for axes, (_, _, metrics) in zip(ratios, RATIO_PANELS):
            for metric, line, marker, _ in metrics:
                _ratio_series(axes, rows, metric, f"{name} · {metric}", color, line, marker)
    fmt = result.full_path_format
    _style_times(epoch, result, "training epoch, ms (median, min–max)", "Epoch time", a, b)
    _style_times(
        path,
        result,
        f"full path per epoch ({fmt or 'no format'}), ms (median, min–max)",
        f"Full-path time ({fmt or 'no file format in common'}): load + convert + transfer + epoch + eval",
        a,
        b,
    )
    for axes, panel in zip(ratios, RATIO_PANELS):
        _style_ratios(axes, result, panel, a, b)
    figure.suptitle(f"{a} (A) vs {b} (B): medians per batch size; ratios B/A of rows measured on both sides")
    figure.legend(
        handles=[
            matplotlib.lines.Line2D([], [], color=colors[n % len(colors)], linewidth=2, label=name)
            for n, name in enumerate(variants)
        ],
        loc="outside lower center",
        ncol=min(len(variants), 4) or 1,
        fontsize=8,
        title="variant (colour)",
    )


def _time_series(
    axes: Any, rows: Sequence[dict[str, Any]], metric: str, side: str, label: str, color: str, line: str, marker: str
) -> None:
    shown = [r for r in rows if r[f"{metric}_{side}"] is not None]
    if not shown:
        return
    median = [r[f"{metric}_{side}"] * 1e3 for r in shown]
    low = [m - r[f"{metric}_{side}_min"] * 1e3 for m, r in zip(median, shown)]
    high = [r[f"{metric}_{side}_max"] * 1e3 - m for m, r in zip(median, shown)]
    axes.errorbar(
        [r["batch_size"] for r in shown],
        median,
        yerr=[low, high],
        color=color,
        linestyle=line,
        marker=marker,
        capsize=3,
        label=label,
    )


def _ratio_series(
    axes: Any, rows: Sequence[dict[str, Any]], metric: str, label: str, color: str, line: str, marker: str
) -> None:
    shown = [r for r in rows if r[f"{metric}_ratio_b_over_a"] is not None]
    if shown:
        axes.plot(
            [r["batch_size"] for r in shown],
            [r[f"{metric}_ratio_b_over_a"] for r in shown],
            color=color,
            linestyle=line,
            marker=marker,
            label=label,
        )


def _batch_axis(axes: Any, result: Comparison) -> None:
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted({r["batch_size"] for r in result.rows}))
    axes.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axes.get_xaxis().set_minor_formatter(matplotlib.ticker.NullFormatter())
    axes.set_xlabel("batch size B")
    axes.grid(True, which="both", alpha=0.3)


def _plain_log(axes: Any) -> None:
    """A log y axis labelled in plain numbers: every decade, and 2× and 5× in between."""
    axes.set_yscale("log")
    axes.get_yaxis().set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
    axes.get_yaxis().set_minor_formatter(
        matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}" if f"{value:.0e}"[0] in "25" else "")
    )


def _style_key(axes: Any, entries: Sequence[tuple[str, str, str]]) -> None:
    """A black legend of line styles; the colours are the figure's variant legend."""
    axes.legend(
        handles=[
            matplotlib.lines.Line2D([], [], color="black", linestyle=line, marker=marker, label=text)
            for text, line, marker in entries
        ],
        fontsize=8,
    )


def _empty(axes: Any, text: str) -> None:
    axes.text(0.5, 0.5, text, transform=axes.transAxes, ha="center", va="center")


def _style_times(axes: Any, result: Comparison, ylabel: str, title: str, a: str, b: str) -> None:
    _batch_axis(axes, result)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    if not axes.has_data():
        _empty(axes, "nothing to show")
        return
    _plain_log(axes)
    _style_key(
        axes,
        [(f"A: {a}", line, marker) if side == "a" else (f"B: {b}", line, marker) for side, line, marker in SIDE_STYLES],
    )


def _style_ratios(axes: Any, result: Comparison, panel: tuple[Any, ...], a: str, b: str) -> None:
    title, ylabel, metrics = panel
    _batch_axis(axes, result)
    axes.set_ylabel(ylabel.format(a=a, b=b))
    axes.set_title(title, fontsize=10)
    axes.axhline(1.0, color="black", linewidth=1)
    if not axes.get_legend_handles_labels()[0]:
        _empty(axes, "no row measured on both sides")
        return
    values = [value for line in axes.get_lines() for value in line.get_ydata()]
    if min(values) > 0 and max(values) / min(values) >= 10:
        _plain_log(axes)  # e.g. GPU against CPU: equal factors either side of 1 look equal
    else:
        axes.get_yaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter(useOffset=False))
    if len(metrics) > 1:
        _style_key(axes, [(text, line, marker) for _, line, marker, text in metrics])


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
