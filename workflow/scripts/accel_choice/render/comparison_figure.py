"""The comparison's 2×2 figure: each side's epoch and full-path times (top), the ratios B/A with their
intervals and outcomes (bottom)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accel_choice.analyze.compare import Comparison  # noqa: E402
from accel_choice.analyze.compare_match import OUTCOME_WORDS  # noqa: E402
from accel_choice.records.comparison import ComparisonRow  # noqa: E402
from accel_choice.render.formatting import save_figure  # noqa: E402

# Ratio panels: (title, y label with {a}/{b}, ((metric, line style, marker, legend text), ...)).
RATIO_PANELS = (
    (
        "Ratio of the medians: times",
        "time {b}/{a} (below 1: {b} faster)",
        (("epoch_s", "-", "o", "epoch time"), ("full_path_s", ":", "^", "full-path time (no interval)")),
    ),
    (
        "Ratio of the medians: throughput",
        "samples/s {b}/{a} (above 1: {b} faster)",
        (("samples_per_s", "-", "o", "samples/s"),),
    ),
)
SIDE_STYLES = (("a", "-", "o"), ("b", "--", "s"))  # A solid circles, B dashed squares
# The outcome a ratio's marker shows: samples/s is decided by the epoch time it is computed from; the full path
# (no interval) by nothing.
OUTCOME_OF = {"epoch_s": "epoch_s", "samples_per_s": "epoch_s"}
UNDECIDED = OUTCOME_WORDS["no_difference"]


def comparison_figure(result: Comparison, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> Any:
    """Draw the comparison figure of sides A and B and their ratios.

    2×2 panels: each side's epoch time (median and interval) and full-path time (median, min–max) on top; the
    ratios B/A of epoch time, full-path time and samples/s below, with their intervals as bars, a hollow marker
    where the outcome is "no measurable difference" and the largest noise floor as a grey band. Writes the PNG
    and SVG and returns the (closed) matplotlib Figure, for inspection."""
    figure, grid = plt.subplots(2, 2, figsize=(14, 10), layout="constrained")
    try:
        _draw(figure, grid, result)
        save_figure(figure, png_path, svg_path)
    finally:
        plt.close(figure)
    return figure


def _level(result: Comparison) -> str:
    found = sorted({r.confidence for r in result.rows if r.confidence is not None})
    return "/".join(f"{level * 100:g} %" for level in found) or "the tables'"


def _draw(figure: Any, grid: Any, result: Comparison) -> None:
    a, b = (side["label"] for side in result.sides)
    (epoch, path), ratios = grid
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    variants = sorted({r.name for r in result.rows})
    for number, name in enumerate(variants):
        rows = sorted((r for r in result.rows if r.name == name), key=lambda r: r.batch_size)
        color = colors[number % len(colors)]
        for side, line, marker in SIDE_STYLES:
            _time_series(epoch, rows, "epoch_s", side, (f"{name} · {side}", color, line, marker))
            _time_series(path, rows, "full_path_s", side, (f"{name} · {side}", color, line, marker))
        for axes, (_, _, metrics) in zip(ratios, RATIO_PANELS):
            for metric, line, marker, _ in metrics:
                _ratio_series(axes, rows, metric, (f"{name} · {metric}", color, line, marker))
    fmt = result.full_path_format
    _style_times(epoch, result, f"training epoch, ms (median, {_level(result)} interval)", "Epoch time", a, b)
    _style_times(
        path,
        result,
        f"full path per epoch ({fmt or 'no format'}), ms (sum of medians, min–max)",
        f"Full-path time ({fmt or 'no file format in common'}): load + convert + transfer + epoch + eval",
        a,
        b,
    )
    for axes, panel in zip(ratios, RATIO_PANELS):
        _style_ratios(axes, result, panel, a, b)
    figure.suptitle(
        f"{a} (A) vs {b} (B): medians per batch size; ratios B/A of rows measured on both sides, "
        f"bars: {_level(result)} interval"
    )
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


def _time_series(axes: Any, rows: Sequence[ComparisonRow], metric: str, side: str, style: tuple) -> None:
    """A side's medians with error bars: its interval, or the full path's min–max."""
    label, color, line, marker = style
    shown = [(r, r.side(metric, side)) for r in rows if r.side(metric, side) is not None]
    if not shown:
        return
    median = [values[0] * 1e3 for _, values in shown]
    low = [m - values[1] * 1e3 for m, (_, values) in zip(median, shown)]
    high = [values[2] * 1e3 - m for m, (_, values) in zip(median, shown)]
    axes.errorbar(
        [r.batch_size for r, _ in shown],
        median,
        yerr=[low, high],
        color=color,
        linestyle=line,
        marker=marker,
        capsize=3,
        label=label,
    )


def _ratio_series(axes: Any, rows: Sequence[ComparisonRow], metric: str, style: tuple) -> None:
    """The ratios of one variant with their intervals as bars; hollow markers where nothing is measurable."""
    label, color, line, marker = style
    shown = [(r, r.ratio_values(metric)) for r in rows if r.ratio_values(metric) is not None]
    if not shown:
        return
    axes.plot(
        [r.batch_size for r, _ in shown],
        [ratio[0] for _, ratio in shown],
        color=color,
        linestyle=line,
        marker=marker,
        label=label,
    )
    bounded = [(r, ratio) for r, ratio in shown if ratio[1] is not None]
    if bounded:
        values = [ratio[0] for _, ratio in bounded]
        axes.errorbar(
            [r.batch_size for r, _ in bounded],
            values,
            yerr=[
                [v - ratio[1] for v, (_, ratio) in zip(values, bounded)],
                [ratio[2] - v for v, (_, ratio) in zip(values, bounded)],
            ],
            fmt="none",
            ecolor=color,
            capsize=3,
        )
    undecided = [
        (r, ratio) for r, ratio in shown if metric in OUTCOME_OF and r.part(OUTCOME_OF[metric]).outcome == UNDECIDED
    ]
    if undecided:
        axes.plot(
            [r.batch_size for r, _ in undecided],
            [ratio[0] for _, ratio in undecided],
            linestyle="none",
            marker=marker,
            markerfacecolor="white",
            markeredgecolor=color,
            label=f"_{label} · no measurable difference",
        )


def _batch_axis(axes: Any, result: Comparison) -> None:
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted({r.batch_size for r in result.rows}))
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


def _style_key(axes: Any, entries: Sequence[tuple[str, str, str]], extra: Sequence[Any] = ()) -> None:
    """A black legend of line styles (and `extra` handles); the colours are the figure's variant legend."""
    axes.legend(
        handles=[
            *(
                matplotlib.lines.Line2D([], [], color="black", linestyle=line, marker=marker, label=text)
                for text, line, marker in entries
            ),
            *extra,
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
    floor = max((r.noise_floor for r in result.rows if r.noise_floor is not None), default=0.0)
    extra = [
        matplotlib.lines.Line2D(
            [], [], color="black", linestyle="none", marker="o", markerfacecolor="white", label=UNDECIDED
        )
    ]
    if floor > 0:
        # Equal factors either side of 1: 1/(1 + floor) .. 1 + floor, as the outcome decides.
        axes.axhspan(1 / (1 + floor), 1 + floor, color="grey", alpha=0.2, linewidth=0)
        extra.append(matplotlib.patches.Patch(color="grey", alpha=0.2, label=f"largest noise floor ±{floor:.1%}"))
    values = [value for line in axes.get_lines() for value in line.get_ydata()]
    if min(values) > 0 and max(values) / min(values) >= 10:
        _plain_log(axes)  # e.g. GPU against CPU: equal factors either side of 1 look equal
    else:
        axes.get_yaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter(useOffset=False))
    entries = [(text, line, marker) for _, line, marker, text in metrics] if len(metrics) > 1 else []
    _style_key(axes, entries, extra)
