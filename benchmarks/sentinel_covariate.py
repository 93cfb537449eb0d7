"""Would the drift sentinel narrow the thread tie? Welch's t beside an analysis of covariance on the sentinel.

The thread tie compares two thread counts, timed in separate processes: Welch's t on the log job medians
(what the report states). Every job also timed the drift sentinel, the same fixed work on one thread. Where a
job's speed moved its sentinel too, regressing the job medians on the log sentinel (a slope shared by both
thread counts, ordinary least squares, n - 3 degrees of freedom) removes that part of the spread.

    .venv/bin/python benchmarks/sentinel_covariate.py RESULTS [RESULTS ...]

For each folder with two thread counts: the fastest batch size and loader at the first two thread counts, the
correlation of each side's job medians with its sentinel, both intervals' half widths, both ratios and the slope.
Measured, not adopted: docs/statistics.md says why.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from accel_choice import records  # noqa: E402
from accel_choice.analyze.job_intervals import job_logs, ratio_interval  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingTable  # noqa: E402

LEVEL = 0.95


@dataclass(frozen=True)
class Adjusted:
    """B/A on the log job medians adjusted for the log sentinel: ratio, its half width over the ratio, the slope."""

    ratio: float
    half_width: float
    slope: float


def adjusted_ratio(ya: np.ndarray, sa: np.ndarray, yb: np.ndarray, sb: np.ndarray, level: float = LEVEL) -> Adjusted:
    """Fit log job median = a + d·[side B] + slope·(log sentinel - its mean); return exp(d) with its t interval."""
    y, s = np.r_[ya, yb], np.r_[sa, sb]
    x = np.c_[np.ones_like(y), np.r_[np.zeros(len(ya)), np.ones(len(yb))], s - s.mean()]
    freedom = len(y) - x.shape[1]
    if freedom < 1:
        raise ValueError(f"{len(ya)} + {len(yb)} jobs leave no degree of freedom for the slope")
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    variance = float(((y - x @ coef) ** 2).sum()) / freedom * np.linalg.inv(x.T @ x)[1, 1]
    half = float(stats.t.ppf(1 - (1 - level) / 2, freedom)) * math.sqrt(variance)
    ratio = math.exp(coef[1])
    return Adjusted(
        ratio=ratio, half_width=(math.exp(coef[1] + half) - math.exp(coef[1] - half)) / 2 / ratio, slope=float(coef[2])
    )


def folder_line(folder: Path) -> str | None:
    """Return the folder's markdown row, or None where it has fewer than two thread counts or three jobs a side."""
    table = records.read(TrainingTable, folder / paths.CPU_TABLE)
    sentinel = {job.job: job.median_s for job in table.sentinel.jobs}
    cells = [c for c in table.table if c.device == "cpu"]
    threads = sorted({c.threads for c in cells})
    if len(threads) < 2:
        return None
    fastest = min(cells, key=lambda c: c.epoch_s.point)
    key = (fastest.loader, fastest.batch_size, fastest.compiled)
    a, b = (
        next(c for c in cells if (c.loader, c.batch_size, c.compiled) == key and c.threads == t) for t in threads[:2]
    )
    if min(len(a.jobs), len(b.jobs)) < 3:
        return None
    ya, yb = job_logs(a.epoch_s_jobs), job_logs(b.epoch_s_jobs)
    sa, sb = (np.log([sentinel[job] for job in c.jobs]) for c in (a, b))
    welch = ratio_interval(a.epoch_s_jobs, b.epoch_s_jobs, level=LEVEL)
    fitted = adjusted_ratio(ya, sa, yb, sb)
    corr = " / ".join(f"{np.corrcoef(y, s)[0, 1]:.2f}" for y, s in ((ya, sa), (yb, sb)))
    return (
        f"| {folder} | {a.loader} B={a.batch_size} | {len(ya)} + {len(yb)} | {corr} | ±{welch.half_width_ratio:.1%} | "
        f"±{fitted.half_width:.1%} | {welch.point:.3f} | {fitted.ratio:.3f} | {fitted.slope:.2f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="results folders of finished runs")
    args = parser.parse_args(argv)
    print(
        "| run | cell | jobs | corr. with the sentinel, 1st / 2nd thread count | Welch ± | adjusted ± | "
        "Welch ratio | adjusted ratio | slope |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for folder in args.results:
        try:
            line = folder_line(folder)
        except records.RecordError as error:  # a run of an older schema: say so, go on
            print(f"| {folder} | not read: {str(error).split(': ', 1)[1].split(';')[0]} | | | | | | | |")
            continue
        print(line if line else f"| {folder} | one thread count, or under 3 jobs a side | | | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
