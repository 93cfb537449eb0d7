"""The decision figure: training throughput against batch size with the intervals the report decides
by (left), and the full path per epoch as stacked bars (right)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from accel_choice.records.training import TrainingCell  # noqa: E402
from accel_choice.records.fullpath import FullPathRow
from accel_choice.render.formatting import counted, save_figure  # noqa: E402


STAGES = (
    ("load_s", "load"),
    ("convert_s", "convert"),
    ("transfer_s", "transfer"),
    ("train_s", "train epoch"),
    ("eval_s", "eval"),
)
# (device, format, precision, placement, loader, label, hatch)
PATHS = (
    ("cpu", "csv", "fp32", "host", "dataloader", "CPU: CSV + DataLoader (textbook)", "//"),
    ("cpu", "parquet", "fp32", "host", "fastpath", "CPU: Parquet + fast path", None),
    ("cuda", "parquet", "fp32", "resident", "fastpath", "GPU: Parquet, fp32, resident", ".."),
)


def decision_figure(
    train_table: Sequence[TrainingCell],
    full_path_rows: Sequence[FullPathRow],
    png_path: str | os.PathLike[str],
    svg_path: str | os.PathLike[str],
    title: str,
) -> None:
    """Draw the decision figure.

    Throughput vs batch size with the intervals the report decides by (left), the full path as stacked
    bars (right)."""
    figure, (throughput, stacked) = plt.subplots(1, 2, figsize=(12, 4.8))
    _throughput_panel(throughput, train_table)
    _full_path_panel(stacked, full_path_rows)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    save_figure(figure, png_path, svg_path)


def _series(row: TrainingCell) -> str:
    if row.device == "cpu":
        return f"CPU {row.loader}, {counted(row.threads, 'thread')}" + (", compiled" if row.compiled else "")
    return f"{row.device.upper()} {row.precision} {row.placement}" + (" compiled" if row.compiled else "")


# One colour per meaning: a throughput line's colour names its loader (CPU) or precision (GPU), drawn from
# tab10's saturated blue, orange, green, red and brown; its line style the thread count (CPU) or placement
# (GPU); the full path's stages take tab20's light grey, olive, cyan, purple and pink, which no line uses;
# a flag is black.
LINE_COLOURS = tuple(matplotlib.colormaps["tab10"].colors[i] for i in (0, 1, 2, 3, 5))
LINE_STYLES = ("-", "--", ":", "-.")
STAGE_COLOURS = tuple(matplotlib.colormaps["tab20"].colors[i] for i in (15, 17, 19, 9, 13))


def _family(row: TrainingCell) -> str:
    return row.loader if row.device == "cpu" else f"{row.device} {row.precision}"


def _style_key(row: TrainingCell) -> str:
    return str(row.threads) if row.device == "cpu" else row.placement


def _throughput_panel(axes: Any, train_table: Sequence[TrainingCell]) -> None:
    families, keys = sorted({_family(r) for r in train_table}), sorted({_style_key(r) for r in train_table})
    colours = {family: LINE_COLOURS[i % len(LINE_COLOURS)] for i, family in enumerate(families)}
    styles = {key: LINE_STYLES[i % len(LINE_STYLES)] for i, key in enumerate(keys)}
    for series in sorted({_series(row) for row in train_table}):
        rows = sorted((r for r in train_table if _series(r) == series), key=lambda r: r.batch_size)
        sizes = [r.batch_size for r in rows]
        median = [r.samples_per_s.point for r in rows]
        # The interval each comparison is decided by, not the jobs' min-max.
        low = [m - r.samples_per_s.low for m, r in zip(median, rows)]
        high = [r.samples_per_s.high - m for m, r in zip(median, rows)]
        level = f"{rows[0].confidence:.0%}" if rows else ""
        axes.errorbar(
            sizes,
            median,
            yerr=[low, high],
            marker="s" if rows[0].compiled else "o",
            capsize=4,
            color=colours[_family(rows[0])],
            linestyle=styles[_style_key(rows[0])],
            label=f"{series} (point, {level} interval)",
        )
        noisy = [(s, m) for s, m, r in zip(sizes, median, rows) if r.noisy]
        if noisy:
            labelled = "noisy (flagged)" in axes.get_legend_handles_labels()[1]
            axes.scatter(
                *zip(*noisy),
                s=160,
                facecolors="none",
                edgecolors="black",
                label=None if labelled else "noisy (flagged)",
            )
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted({r.batch_size for r in train_table}))
    axes.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axes.set_xlabel("batch size B")
    axes.set_ylabel("training samples / s (one epoch)")
    axes.set_yscale("log")
    axes.set_title("Training throughput")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)


def _full_path_panel(axes: Any, full_path_rows: Sequence[FullPathRow]) -> None:
    sizes = sorted({r.batch_size for r in full_path_rows})
    # The CPU's paths at the thread count of its fastest full path (timing.threads may hold several).
    threads = min((r for r in full_path_rows if r.device == "cpu"), key=lambda r: r.total_s).threads
    paths = []
    for device, fmt, precision, placement, loader, label, hatch in PATHS:
        cells = {
            r.batch_size: r
            for r in full_path_rows
            if (r.device, r.format, r.precision, r.placement, r.loader) == (device, fmt, precision, placement, loader)
            and (device != "cpu" or r.threads == threads)
            and not r.compiled
        }
        if cells:
            paths.append((cells, label + (f", {counted(threads, 'thread')}" if device == "cpu" else ""), hatch))
    width = 0.8 / max(len(paths), 1)
    colors = STAGE_COLOURS
    handles = [Patch(facecolor=color, edgecolor="black", label=stage) for (_, stage), color in zip(STAGES, colors)]
    for number, (cells, label, hatch) in enumerate(paths):
        positions = [i + (number - (len(paths) - 1) / 2) * width for i in range(len(sizes))]
        bottom = [0.0] * len(sizes)
        for (key, stage), color in zip(STAGES, colors):
            heights = [getattr(cells[s], key) * 1e3 if s in cells else 0.0 for s in sizes]
            axes.bar(
                positions, heights, width, bottom=bottom, color=color, hatch=hatch, edgecolor="black", linewidth=0.4
            )
            bottom = [b + h for b, h in zip(bottom, heights)]
        handles.append(Patch(facecolor="white", hatch=hatch, edgecolor="black", label=f"{label} (bar {number + 1})"))
    axes.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    axes.set_xlabel("batch size B")
    axes.set_ylabel("milliseconds, medians (fixed start-up not shown)")
    axes.set_title("Full path per epoch: load + convert + transfer + train + eval")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend(handles=handles, fontsize=7)
