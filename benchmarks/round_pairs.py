"""Does a pair of cells spread less from job to job round by round than by its job medians?

For each results folder and each group of CPU cells timed in the same jobs (one thread count), every pair of its
cells gives one log ratio a job two ways: the median over the job's rounds of log b - log a
(`same_jobs.paired_logs`, what the first screen uses since 2026-12-07), and log median b - log median a (before).
Each way's sd across jobs is taken for every pair; a group's figure is the median over its pairs. The last line
is the median over all groups of round-by-round over job medians: below 1, the rounds' shared shifts cancel.

    .venv/bin/python benchmarks/round_pairs.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze import same_jobs  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingTable  # noqa: E402


def group_spreads(folder: Path) -> list[tuple[str, int, float, float]]:
    """Return (group, pairs, median sd round by round, median sd of job medians) per job group of 3 jobs or more.

    A job group is one thread count's cells of the same jobs (same_jobs.fit_cells), named t<threads>."""
    cells = [c for c in records.read(TrainingTable, folder / paths.CPU_TABLE).table if c.device == "cpu"]
    groups = defaultdict(list)
    for cell in cells:
        groups[cell.jobs, cell.threads].append(cell)
    found = []
    for (jobs, threads), members in groups.items():
        if len(jobs) < 3 or len(members) < 2:
            continue
        rounds, medians = [], []
        for a, b in itertools.combinations(members, 2):
            rounds.append(float(np.std(same_jobs.paired_logs(a.epoch_s_jobs, b.epoch_s_jobs), ddof=1)))
            medians.append(float(np.std(np.log(np.array(b.epoch_s_runs) / np.array(a.epoch_s_runs)), ddof=1)))
        found.append((f"t{threads}", len(rounds), statistics.median(rounds), statistics.median(medians)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS")
    args = parser.parse_args(argv)
    print("| run | job group | pairs | sd, round by round | sd, job medians | ratio |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for folder in args.results:
        try:
            groups = group_spreads(folder)
        except (OSError, ValueError) as error:  # an older schema or no CPU table: said, not counted
            print(f"| {folder} | not read: {str(error).splitlines()[0][:80]} | | | | |")
            continue
        for name, pairs, rounds, medians in groups:
            ratio = rounds / medians if medians > 0 else float("nan")
            ratios.append(ratio)
            print(f"| {folder} | {name} | {pairs} | {rounds:.4f} | {medians:.4f} | {ratio:.2f} |")
    if ratios:
        print(f"\n{len(ratios)} job groups: round by round over job medians, median {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
