"""The decision figure: throughput vs batch size with spread, and the full path as stacked bars."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from accel_choice.io import atomic  # noqa: E402

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
    _save(figure, png_path, svg_path)


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


def _save(figure: Any, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> None:
    # Metadata without a date keeps the SVG identical for identical numbers.
    for path, fmt in ((png_path, "png"), (svg_path, "svg")):
        with atomic.atomic_path(path) as tmp:
            figure.savefig(tmp, format=fmt, dpi=130, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(figure)


def learning_curves(
    histories: dict[str, Sequence[dict[str, Any]]], target: float, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]
) -> None:
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, history in histories.items():
        axes.plot([r["cumulative_s"] for r in history], [r["val_loss"] for r in history], marker=".", label=name)
    axes.axhline(target, color="black", linestyle="--", linewidth=1, label="time-to-target threshold")
    axes.set_xlabel("cumulative wall time, s (training + validation)")
    axes.set_ylabel("validation log loss")
    axes.set_title("Northstar: validation loss against time per batch size")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    _save(figure, png_path, svg_path)


def gradient_variance_figure(result: dict[str, Any], png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> None:
    rows = result["table"]
    sizes = [r["batch_size"] for r in rows]
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    axes.errorbar(sizes, [r["measured"] for r in rows], yerr=[2 * r["measured_stderr"] for r in rows], marker="o",
                  linestyle="none", capsize=4, label=f"measured over {result['draws']} mini-batches (±2 SE)")
    axes.plot(sizes, [r["predicted"] for r in rows], label="σ²/B · (N−B)/(N−1), without replacement")
    axes.plot(sizes, [r["predicted_iid"] for r in rows], linestyle=":", label="σ²/B, independent samples")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("batch size B")
    axes.set_ylabel("E‖g_B − G‖²")
    axes.set_title(f"Gradient variance vs batch size (N={result['rows']:,}, P={result['parameters']:,})")
    axes.grid(True, which="both", alpha=0.3)
    # Below the panel: inside it, the legend hid measured points.
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    figure.tight_layout()
    _save(figure, png_path, svg_path)


def break_even_figure(
    curves: Sequence[dict[str, Any]],
    measured: Sequence[dict[str, Any]],
    png_path: str | os.PathLike[str],
    svg_path: str | os.PathLike[str],
    *,
    gpu_label: str,
) -> None:
    """One panel per costmodel.break_even() result: modelled CPU and GPU epoch seconds.

    A measured epoch is drawn on a panel only when its workload lies on that panel's line,
    i.e. every field except the panel's axis equals the curve's base workload: a point
    measured elsewhere would be compared with a prediction for a different workload.
    Measured dicts carry device ("cpu" or anything else for the GPU), rows, features,
    hidden, batch_size and epoch_s.
    """
    if not curves:
        raise ValueError("break_even_figure needs at least one break_even() curve")
    figure, panels = plt.subplots(1, len(curves), figsize=(5.5 * len(curves), 5.6), squeeze=False)
    for axes, curve in zip(panels[0], curves):
        _break_even_panel(axes, curve, _points_on_line(curve, measured), gpu_label)
    figure.tight_layout()
    _save(figure, png_path, svg_path)


_WORKLOAD_FIELDS = ("rows", "features", "hidden", "batch_size")


def _points_on_line(curve: dict[str, Any], measured: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    fixed = [f for f in _WORKLOAD_FIELDS if f != curve["axis"]]
    return [m for m in measured if all(m[f] == curve["base"][f] for f in fixed)]


def _break_even_panel(axes: Any, curve: dict[str, Any], points: Sequence[dict[str, Any]], gpu_label: str) -> None:
    axis, values = curve["axis"], curve["values"]
    cpu_line = axes.plot(values, curve["cpu_s"], label="CPU (modelled)")[0]
    gpu_line = axes.plot(values, curve["gpu_s"], label=f"{gpu_label} (modelled)")[0]
    for is_cpu, line, marker in ((True, cpu_line, "o"), (False, gpu_line, "s")):
        mine = sorted((p for p in points if (p["device"] == "cpu") == is_cpu), key=lambda p: p[axis])
        if mine:
            axes.scatter([p[axis] for p in mine], [p["epoch_s"] for p in mine], marker=marker, color=line.get_color(),
                         zorder=3, label=f"{'CPU' if is_cpu else 'GPU'} measured")
    if curve["break_even"] is not None:
        axes.axvline(curve["break_even"], color="black", linestyle="--", linewidth=1,
                     label=f"break-even ≈ {curve['break_even']:,.0f} (modelled)")
    elif curve["gpu_always_faster"]:
        axes.text(0.02, 0.02, "GPU faster over the whole range", transform=axes.transAxes, fontsize=8)
    base = ", ".join(f"{f}={curve['base'][f]:,}" for f in _WORKLOAD_FIELDS if f != axis)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(axis)
    axes.set_ylabel("seconds per epoch")
    axes.set_title(f"modelled epoch time vs {axis}\n({base})", fontsize=9)
    axes.grid(True, which="both", alpha=0.3)
    # Below the panel: inside it, the legend hid measured points.
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
