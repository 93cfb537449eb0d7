"""The comparison in the terminal (pyperf's compare_to is the model): one line per row measured on both sides,
its epoch ratio B/A with its interval and outcome, at most WIDTH columns; and the line that says B is a
byte-identical copy of A.

The ratio is the row over the rest of its job (analyze.row_relative): each job's own speed cancels there, so its
interval is the narrow one; the raw ratio is the two medians' (A ms, B ms). A row without one (too few cells in its
job) shows its raw ratio and interval, marked "raw". A raw outcome that decided something is added to the row's
outcome, since the gate fails on either."""

from __future__ import annotations

from accel_choice.analyze.compare import Comparison
from accel_choice.analyze.compare_match import OUTCOME_WORDS
from accel_choice.analyze.compare_warnings import copy_warnings
from accel_choice.records.comparison import ComparisonRow
from accel_choice.render.comparison import levels
from accel_choice.render.formatting import ms

WIDTH = 100  # columns, the widest line printed


def copy_line(result: Comparison) -> str | None:
    """Say the copy in words (a warning of the comparison says the same), or return None for two runs."""
    a, b = (side["label"] for side in result.sides)
    said = copy_warnings(result.copy, a, b)
    return said[0] if said else None


def _cells(row: ComparisonRow) -> tuple[str, ...]:
    epoch = row.epoch_s
    raw = f"raw: {epoch.outcome}"
    if epoch.in_job is None:
        shown, said = epoch.ratio, raw
    else:
        decided = epoch.outcome != OUTCOME_WORDS["no_difference"]
        shown, said = epoch.in_job, f"{epoch.in_job_outcome}{'; ' + raw if decided else ''}"
    return (
        row.name,
        str(row.batch_size),
        ms(epoch.a.point),
        ms(epoch.b.point),
        f"{shown.point:.3f}",
        f"{shown.low:.3f}–{shown.high:.3f}",
        said,
    )


def terminal_lines(result: Comparison, width: int = WIDTH) -> list[str]:
    """Return the comparison's lines for the terminal.

    The copy line (if B is a copy of A), a title, a header and one line per row measured on both sides with an
    epoch interval; the variant is shortened with "…" where the line would pass `width`."""
    a, b = (side["label"] for side in result.sides)
    copy = copy_line(result)
    lines = [f"NOTE: {copy}"] if copy else []
    rows = [r for r in result.rows if r.present == "both" and r.epoch_s.ratio is not None]
    if not rows:
        return [*lines, "No row was measured on both sides: no epoch ratio to show."]
    level = levels(result)
    lines.append(f"A = {a}, B = {b}")
    lines.append(f"Epoch time B/A over the rest of its job (below 1: B is faster), {level} intervals together:")
    header = ("variant", "batch", "A ms", "B ms", "B/A", "interval", "outcome")
    cells = [_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in (header, *cells)) for i in range(len(header))]
    room = width - (sum(widths[1:]) + 2 * (len(widths) - 1))
    widths[0] = max(8, min(widths[0], room))
    for line in (header, *cells):
        name = line[0] if len(line[0]) <= widths[0] else line[0][: widths[0] - 1] + "…"
        numbers = [f"{cell:>{w}}" for cell, w in zip(line[1:-1], widths[1:-1])]
        lines.append("  ".join([f"{name:<{widths[0]}}", *numbers, line[-1]]).rstrip())
    return lines
