"""The break-even figure (figures/break_even.{png,svg}): modelled CPU and GPU epochs along each axis,
the measured fit points on each line, and each break-even's interval as a band."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accel_choice.analyze import model_work  # noqa: E402
from accel_choice.analyze.planner import copy_bytes  # noqa: E402
from accel_choice.analyze.costmodel import BreakEvenCurve  # noqa: E402
from accel_choice.records.breakeven import BreakEvenSummary  # noqa: E402
from accel_choice.records.model import TEXTBOOK  # noqa: E402
from accel_choice.records.planner import FitPoint  # noqa: E402
from accel_choice.records.scale import Rate, ReaderPass, ScaleJob, SizeMeasurement  # noqa: E402
from accel_choice.render.formatting import save_figure  # noqa: E402
from accel_choice.render.planner import interval_text  # noqa: E402
from accel_choice.render.scale import reader_label  # noqa: E402


def storage_line(best: tuple[ScaleJob, SizeMeasurement, ReaderPass, Rate]) -> tuple[float, str]:
    """Return the figure's storage line from the streaming study's best reader.

    The streaming study's best sustained reader (analyze.scale.best_reader) as the figure's
    storage line: (bytes per second, label)."""
    job, _, reader, rate = best
    return rate.per_s.point, f"reading from disk ({job.format}, {reader_label(reader)}, measured)"


def break_even_figure(
    curves: Sequence[BreakEvenCurve],
    measured: Sequence[FitPoint],
    png_path: str | os.PathLike[str],
    svg_path: str | os.PathLike[str],
    *,
    gpu_label: str,
    intervals: Sequence[BreakEvenSummary] = (),
    storage: tuple[float, str] | None = None,
) -> None:
    """Draw the break-even figure, one panel per curve.

    One panel per costmodel.break_even() result: modelled CPU and GPU epoch seconds, and the
    break-even's interval as a band where `intervals` holds the curve's (axis, placement).

    A measured epoch (a fit point; device "cpu", or anything else for the GPU) is drawn on a
    panel only when its workload lies on that panel's line, i.e. every field except the panel's
    axis equals the curve's base workload: a point measured elsewhere would be compared with a
    prediction for a different workload.
    """
    if not curves:
        raise ValueError("break_even_figure needs at least one break_even() curve")
    # Two panels a row at most, each as wide as a page: readable at the size it is written (three panels in
    # one row made a 2145 × 728 image whose lettering was too small to read).
    columns = min(2, len(curves))
    rows = -(-len(curves) // columns)
    figure, panels = plt.subplots(rows, columns, figsize=(7.5 * columns, 6.4 * rows), squeeze=False)
    for unused in panels.flat[len(curves) :]:
        unused.set_visible(False)
    by_curve = {(s.axis, s.placement): s for s in intervals}
    for axes, curve in zip(panels.flat, curves):
        if storage is not None:  # (bytes per second, label): each epoch's input read from disk at that rate
            seconds = [copy_bytes(replace(curve.base, **{curve.axis: v})) / storage[0] for v in curve.values]
            axes.plot(curve.values, seconds, color="grey", linestyle=":", label=storage[1])
        _break_even_panel(axes, curve, _points_on_line(curve, measured), gpu_label)
        interval = by_curve.get((curve.axis, curve.placement))
        if interval is not None:
            _interval_band(axes, curve, interval)
    figure.tight_layout()
    save_figure(figure, png_path, svg_path)


def _base(curve: BreakEvenCurve) -> dict[str, object]:
    """The fields that name the curve's workload (the model, rows, features, hidden, batch size)."""
    return model_work.identity(curve.base)


def _points_on_line(curve: BreakEvenCurve, measured: Sequence[FitPoint]) -> list[FitPoint]:
    fixed = {f: v for f, v in _base(curve).items() if f != curve.axis}
    return [m for m in measured if all(getattr(m, f) == v for f, v in fixed.items())]


def _break_even_panel(axes: Any, curve: BreakEvenCurve, points: Sequence[FitPoint], gpu_label: str) -> None:
    axis, values = curve.axis, curve.values
    cpu_line = axes.plot(values, curve.cpu_s, label="CPU (modelled)")[0]
    gpu_line = axes.plot(values, curve.gpu_s, label=f"{gpu_label} (modelled)")[0]
    for is_cpu, line, marker in ((True, cpu_line, "o"), (False, gpu_line, "s")):
        mine = sorted((p for p in points if (p.device == "cpu") == is_cpu), key=lambda p: getattr(p, axis))
        if mine:
            axes.scatter(
                [getattr(p, axis) for p in mine],
                [p.epoch_s for p in mine],
                marker=marker,
                color=line.get_color(),
                zorder=3,
                label=f"{'CPU' if is_cpu else 'GPU'} measured",
            )
    if curve.break_even is not None:
        axes.axvline(
            curve.break_even,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"break-even ≈ {curve.break_even:,.0f} (modelled)",
        )
    elif curve.gpu_always_faster:
        axes.text(0.02, 0.02, "GPU faster over the whole range", transform=axes.transAxes, fontsize=10)
    base = ", ".join(
        f"{f}={v:,}" if isinstance(v, int) else str(v)
        for f, v in _base(curve).items()
        if f != axis and v is not None and (f != "model" or v != TEXTBOOK)
    )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(axis)
    axes.set_ylabel("seconds per epoch")
    axes.set_title(f"modelled epoch time vs {axis}\n({base})", fontsize=11)
    axes.grid(True, which="both", alpha=0.3)
    # Below the panel: inside it, the legend hid measured points.
    axes.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)


def _interval_band(axes: Any, curve: BreakEvenCurve, s: BreakEvenSummary) -> None:
    """The interval as a shaded band, cut at the sweep's ends where a bound lies outside it; an
    interval wholly outside the sweep is said in words."""
    ends = {"below_sweep": curve.values[0], "beyond_sweep": curve.values[-1]}
    low = s.break_even_low if s.break_even_low is not None else ends[s.break_even_low_where]
    high = s.break_even_high if s.break_even_high is not None else ends[s.break_even_high_where]
    if s.break_even_low_where == s.break_even_high_where != "in_sweep":
        axes.text(0.02, 0.94, f"{interval_text(s)} (modelled)", transform=axes.transAxes, fontsize=10)
    else:
        axes.axvspan(low, high, color="grey", alpha=0.2, linewidth=0, label=f"{interval_text(s)} (modelled)")
    axes.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
