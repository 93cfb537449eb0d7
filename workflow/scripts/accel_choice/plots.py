"""The decision figure: throughput vs batch size with spread, and the full path as stacked bars."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import atomic  # noqa: E402

STAGES = (("load_s", "load"), ("convert_s", "convert"), ("train_s", "train epoch"), ("eval_s", "eval"))
PATHS = (("csv", "dataloader", "CSV + DataLoader (textbook)"), ("parquet", "fastpath", "Parquet + fast path"))


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
    # Metadata without a date keeps the SVG identical for identical numbers.
    for path, fmt in ((png_path, "png"), (svg_path, "svg")):
        with atomic.atomic_path(path) as tmp:
            figure.savefig(tmp, format=fmt, dpi=130, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(figure)


def _throughput_panel(axes: Any, train_table: Sequence[dict[str, Any]]) -> None:
    for loader in sorted({row["loader"] for row in train_table}):
        rows = sorted((r for r in train_table if r["loader"] == loader), key=lambda r: r["batch_size"])
        sizes = [r["batch_size"] for r in rows]
        median = [r["samples_per_s"] for r in rows]
        low = [m - r["samples_per_s_min"] for m, r in zip(median, rows)]
        high = [r["samples_per_s_max"] - m for m, r in zip(median, rows)]
        axes.errorbar(sizes, median, yerr=[low, high], marker="o", capsize=4, label=f"{loader} (median, min–max)")
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
    axes.set_title("CPU training throughput")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)


def _full_path_panel(axes: Any, full_path_rows: Sequence[dict[str, Any]]) -> None:
    sizes = sorted({r["batch_size"] for r in full_path_rows})
    width = 0.38
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for offset, (fmt, loader, label) in zip((-width / 2, width / 2), PATHS):
        cells = {r["batch_size"]: r for r in full_path_rows if r["format"] == fmt and r["loader"] == loader}
        if not cells:
            continue
        positions = [i + offset for i in range(len(sizes))]
        bottom = [0.0] * len(sizes)
        hatch = "//" if loader == "dataloader" else None
        for (key, stage), color in zip(STAGES, colors):
            heights = [cells[s][key] * 1e3 if s in cells else 0.0 for s in sizes]
            axes.bar(positions, heights, width, bottom=bottom, color=color, hatch=hatch, edgecolor="black", linewidth=0.4,
                     label=stage if offset < 0 else None)
            bottom = [b + h for b, h in zip(bottom, heights)]
        for x, total in zip(positions, bottom):
            axes.annotate(label.split(" ")[0], (x, total), ha="center", va="bottom", fontsize=6, rotation=90)
    axes.set_xticks(range(len(sizes)), [str(s) for s in sizes])
    axes.set_xlabel("batch size B   (hatched, left: CSV + DataLoader; plain, right: Parquet + fast path)")
    axes.set_ylabel("milliseconds, medians")
    axes.set_title("Full path per epoch: load + convert + train + eval")
    axes.grid(True, axis="y", alpha=0.3)
    axes.legend(fontsize=8)
