"""The decision figure: throughput vs batch size with spread, and the full path as stacked bars."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from accel_choice.render.formatting import save_figure  # noqa: E402

STAGES = (("load_s", "load"), ("convert_s", "convert"), ("transfer_s", "transfer"), ("train_s", "train epoch"), ("eval_s", "eval"))
# (device, format, precision, placement, loader, label, hatch)
PATHS = (
    ("cpu", "csv", "fp32", "host", "dataloader", "CPU: CSV + DataLoader (textbook)", "//"),
    ("cpu", "parquet", "fp32", "host", "fastpath", "CPU: Parquet + fast path", None),
    ("cuda", "parquet", "fp32", "resident", "fastpath", "GPU: Parquet, fp32, resident", ".."),
)


def decision_figure(
    train_table: Sequence[dict[str, Any]],
    full_path_rows: Sequence[dict[str, Any]],
    png_path: str | os.PathLike[str],
    svg_path: str | os.PathLike[str],
    title: str,
) -> None:
    figure, (throughput, stacked) = plt.subplots(1, 2, figsize=(12, 4.8))
    _throughput_panel(throughput, train_table)
    _full_path_panel(stacked, full_path_rows)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    save_figure(figure, png_path, svg_path)


def _series(row: dict[str, Any]) -> str:
    if row["device"] == "cpu":
        return f"CPU {row['loader']}"
    return f"{row['device'].upper()} {row['precision']} {row['placement']}"


def _throughput_panel(axes: Any, train_table: Sequence[dict[str, Any]]) -> None:
    for series in sorted({_series(row) for row in train_table}):
        rows = sorted((r for r in train_table if _series(r) == series), key=lambda r: r["batch_size"])
        sizes = [r["batch_size"] for r in rows]
        median = [r["samples_per_s"] for r in rows]
        low = [m - r["samples_per_s_min"] for m, r in zip(median, rows)]
        high = [r["samples_per_s_max"] - m for m, r in zip(median, rows)]
        axes.errorbar(sizes, median, yerr=[low, high], marker="o", capsize=4, label=f"{series} (median, min–max)")
        noisy = [(s, m) for s, m, r in zip(sizes, median, rows) if r["noisy"]]
        if noisy:
            labelled = "noisy (flagged)" in axes.get_legend_handles_labels()[1]
            axes.scatter(*zip(*noisy), s=160, facecolors="none", edgecolors="red",
                         label=None if labelled else "noisy (flagged)")
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted({r["batch_size"] for r in train_table}))
    axes.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axes.set_xlabel("batch size B")
    axes.set_ylabel("training samples / s (one epoch)")
    axes.set_yscale("log")
    axes.set_title("Training throughput")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)


def _full_path_panel(axes: Any, full_path_rows: Sequence[dict[str, Any]]) -> None:
    sizes = sorted({r["batch_size"] for r in full_path_rows})
    paths = []
    for device, fmt, precision, placement, loader, label, hatch in PATHS:
        cells = {r["batch_size"]: r for r in full_path_rows if (r["device"], r["format"], r["precision"], r["placement"],
                                                                  r["loader"]) == (device, fmt, precision, placement, loader)}
        if cells:
            paths.append((cells, label, hatch))
    width = 0.8 / max(len(paths), 1)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    handles = [Patch(facecolor=color, edgecolor="black", label=stage) for (_, stage), color in zip(STAGES, colors)]
    for number, (cells, label, hatch) in enumerate(paths):
        positions = [i + (number - (len(paths) - 1) / 2) * width for i in range(len(sizes))]
        bottom = [0.0] * len(sizes)
        for (key, stage), color in zip(STAGES, colors):
            heights = [cells[s][key] * 1e3 if s in cells else 0.0 for s in sizes]
            axes.bar(positions, heights, width, bottom=bottom, color=color, hatch=hatch, edgecolor="black", linewidth=0.4)
            bottom = [b + h for b, h in zip(bottom, heights)]
        handles.append(Patch(facecolor="white", hatch=hatch, edgecolor="black", label=f"{label} (bar {number + 1})"))
    axes.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    axes.set_xlabel("batch size B")
    axes.set_ylabel("milliseconds, medians (fixed start-up not shown)")
    axes.set_title("Full path per epoch: load + convert + transfer + train + eval")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend(handles=handles, fontsize=7)


