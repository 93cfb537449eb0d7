"""Formatting shared by everything rendered: Markdown tables, milliseconds, optional numbers, figure files."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from accel_choice.io import atomic


# The planner's axes as a sentence names them.
AXIS_NOUNS = {"rows": "rows", "features": "features", "hidden": "hidden units", "batch_size": "rows per batch"}


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    value = seconds * 1e3
    if value == 0:
        return "0"
    # About three significant digits, never in exponent notation.
    decimals = 0 if value >= 100 else 1 if value >= 10 else 2 if value >= 0.1 else 4
    return f"{value:,.{decimals}f}"


def number(value: float | None, fmt: str, empty: str = "—") -> str:
    return empty if value is None else format(value, fmt)


def ratio_words(ratio: Any) -> str:
    """Render a ratio with its interval, or the words that say it has none.

    A ratio (records.estimate.Estimate) with its interval, or the words that say it has none: one job, or
    jobs that agree to the last digit."""
    if ratio.low == ratio.high:
        alone = "one job, a single measurement" if ratio.jobs < 2 else "no spread between the jobs"
        return f"{ratio.point:.2f}× ({alone}: no interval)"
    return f"{ratio.point:.2f}× ({ratio.low:.2f}–{ratio.high:.2f})"


def save_figure(figure: Any, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]) -> None:
    """Write `figure` as PNG and SVG, each atomically, and close it.

    Metadata without a date keeps the SVG identical for identical numbers.
    """
    import matplotlib.pyplot as plt

    for path, kind in ((png_path, "png"), (svg_path, "svg")):
        with atomic.atomic_path(path) as tmp:
            figure.savefig(tmp, format=kind, dpi=130, metadata={"Date": None} if kind == "svg" else None)
        # The layout the PNG's drawing settled (constrained layout, a solver run per draw) holds for the SVG
        # of the same figure: drawing it again with the engine on would only solve it again.
        figure.set_layout_engine("none")
    plt.close(figure)


def cell_flags(cell: Any) -> str:
    """Say what makes a cell's median doubtful, in bold: noisy repeats, a busy machine (a training or load cell)."""
    flags = ["**noisy**: " + "; ".join(cell.noise_reasons)] if cell.noisy else []
    if cell.contaminated:
        flags.append(f"**busy machine** in repeat(s) {', '.join(str(c.repeat) for c in cell.contaminated)}")
    if getattr(cell, "graph_breaks", None):
        flags.append(f"**{cell.graph_breaks} graph break(s)**: the compiled model runs in pieces")
    return "; ".join(flags)


def level_words(level: float) -> str:
    """Render a confidence level as a percentage.

    A confidence level as a percentage: "95%", and "97.5%" or "99.83%" for a family's per-comparison level
    (never rounded up to a level it does not have)."""
    return f"{100 * level:.4g}%"


def counted(count: int, noun: str) -> str:
    """Return a count with its noun, plural but for one: "1 thread", "2 threads"."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
