"""How wide are a real run's paired CPU ratios, alone and with borrowed spread (analyze.same_jobs)?

For each results folder: the fastest CPU cell against every cell of its jobs, as the first screen's ties
compare them, and the step-time growth. Each ratio's 95 % interval is given two ways: the pair's own paired
t round by round (`same_jobs.alone`, jobs - 1 degrees of freedom) and each cell's spread moderated over the
cells of its jobs (`decision_intervals.cell_ratio` with `same_jobs.fit_cells`, what the report states).

    .venv/bin/python benchmarks/paired_widths.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from accel_choice import records  # noqa: E402
from accel_choice.analyze import decision_intervals, row_relative, same_jobs  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingTable  # noqa: E402

LEVEL = 0.95


def _span(estimate) -> str:
    return f"{estimate.point:.3f} ({estimate.low:.3f}–{estimate.high:.3f}, ±{estimate.half_width_ratio:.1%})"


def _df(df: float) -> str:
    return "∞" if df >= row_relative.DF_CAP else f"{df:.1f}"


def folder_lines(folder: Path) -> list[str]:
    """Return one markdown row per paired ratio of the folder's fastest CPU cell, then a summary row."""
    cells = list(records.read(TrainingTable, folder / paths.CPU_TABLE).table)
    spreads = same_jobs.fit_cells(cells)
    fastest = min(cells, key=lambda c: c.epoch_s.point)
    lines, alone_widths, moderated_widths = [], [], []
    for cell in sorted((c for c in cells if c.jobs == fastest.jobs and c is not fastest), key=lambda c: c.batch_size):
        alone = decision_intervals.cell_ratio(fastest, cell, LEVEL)
        moderated = decision_intervals.cell_ratio(fastest, cell, LEVEL, spreads)
        alone_widths.append(alone.half_width_ratio)
        moderated_widths.append(moderated.half_width_ratio)
        lines.append(f"| {folder} | {cell.loader} B={cell.batch_size} | {_span(alone)} | {_span(moderated)} |")
    scaling = decision_intervals.step_scaling(cells, spreads=spreads)
    if scaling is not None:
        lines.append(f"| {folder} | step-time growth (as reported) | | {_span(scaling.step_time_ratio)} |")
    prior = spreads.priors.get(fastest.key)
    lines.append(
        f"| {folder} | median ± of {len(alone_widths)} | ±{statistics.median(alone_widths):.1%} | "
        f"±{statistics.median(moderated_widths):.1%} (its group's prior df {_df(prior.df)}) |"
        if prior and alone_widths
        else f"| {folder} | no prior | | |"
    )
    return lines


def print_table(argv: list[str] | None, description: str, columns: list[str], lines_of) -> int:
    """Print a markdown table of `columns`: `lines_of(folder)`'s rows for each RESULTS folder in `argv`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS")
    args = parser.parse_args(argv)
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for folder in args.results:
        for line in lines_of(folder):
            print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    columns = ["run", "fastest over", f"alone: {LEVEL:.0%} interval", f"borrowed spread: {LEVEL:.0%} interval"]
    return print_table(argv, __doc__.splitlines()[0], columns, folder_lines)


if __name__ == "__main__":
    sys.exit(main())
