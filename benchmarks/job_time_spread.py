"""How much does a cell's job value spread from job to job: the job's median epoch, or a trimmed mean?

Every interval rests on one value a job (analyze.job_intervals: its median epoch). This compares the median
with the geometric mean of the job's epochs without the fastest and the slowest, on real runs. For each run,
thread count and time metric, every cell's job values become log quotients over the rest of their job
(`same_jobs.quotients` on job values: the job's own speed cancels). The figure is their variance across jobs,
averaged over the cells. Since 2026-12-07 the first screen's pairs and compare's rows over the rest of their job
are taken round by round instead (`same_jobs.paired_logs`, `row_relative.leave_one_out`); the cells' tables keep
the job values. Runs are pooled by their
epochs a job. The median stays (docs/statistics.md, "A job's value: the median, not a trimmed mean").

    .venv/bin/python benchmarks/job_time_spread.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from accel_choice import records  # noqa: E402
from accel_choice.analyze import same_jobs  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingTable  # noqa: E402


def trimmed(job: tuple[float, ...]) -> float:
    """Return the mean log epoch without the fastest and the slowest (all of them below three)."""
    logs = sorted(math.log(t) for t in job)
    return float(np.mean(logs[1:-1] if len(logs) > 2 else logs))


SUMMARIES = {"median": lambda job: math.log(float(np.median(job))), "trimmed mean": trimmed}
METRICS = ("epoch_s", "eval_s")


def variances(folder: Path) -> dict[tuple[int, str, int], dict[str, float]]:
    """Return, per (epochs a job, metric, threads), each summary's mean variance of the cells' log quotients."""
    cells = [c for c in records.read(TrainingTable, folder / paths.CPU_TABLE).table if c.device == "cpu"]
    found = {}
    for threads in sorted({c.threads for c in cells}):
        group = [c for c in cells if c.threads == threads and len(c.epoch_s_jobs) >= 2]
        if len({c.jobs for c in group}) != 1 or not group:
            continue
        epochs = len(group[0].epoch_s_jobs[0])
        for metric in METRICS:
            found[(epochs, metric, threads)] = {
                name: float(
                    np.mean(
                        np.var(
                            same_jobs.quotients(
                                np.exp([[f(job) for job in getattr(c, f"{metric}_jobs")] for c in group])
                            ),
                            axis=1,
                            ddof=1,
                        )
                    )
                )
                for name, f in SUMMARIES.items()
            }
    return found


def main(argv: list[str] | None = None) -> int:
    """Print the pooled table for the results folders given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args(argv)
    pooled: dict[tuple[int, str, int], list[dict[str, float]]] = defaultdict(list)
    for folder in args.results:
        try:
            found = variances(folder)
        except records.RecordError as error:  # an older schema: that run's table is not read
            print(f"left out: {error}", file=sys.stderr)
            continue
        for key, value in found.items():
            pooled[key].append(value)
    base, now = SUMMARIES
    print(f"| epochs a job | runs | time | threads | sd, {base} | sd, {now} | variance, {now} / {base} |")
    print("|---|---|---|---|---|---|---|")
    for (epochs, metric, threads), runs in sorted(pooled.items()):
        old, new = (float(np.mean([r[name] for r in runs])) for name in (base, now))
        print(
            f"| {epochs} | {len(runs)} | {metric} | {threads} | {math.sqrt(old):.2%} | {math.sqrt(new):.2%} | "
            f"{new / old:.2f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
