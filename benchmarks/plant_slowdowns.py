"""Does `compare --fail-if-slower` catch a planted slowdown in two real runs, and stay quiet otherwise?

Two results folders of one commit, A and B. Each CPU cell of B is slowed in turn (its every epoch and
evaluation times `1 + --slowdown`), and the gate of `accel-choice compare A B --fail-if-slower PCT` is
applied to each such B (analyze.compare, in memory: no folder is written). Then sets of `--faster-cells`
cells of B are made `--speedup` faster, none slower: the gate must not fail. Both ways: A against B, B against A.

    .venv/bin/python benchmarks/plant_slowdowns.py RUN1/results RUN2/results [--slowdown 0.2] [--percent 5]

It prints, per way and thread count, the plants caught and the rows named beside the planted one, then the
speed-up sets that failed the gate and what a typical row would catch over the rest of its job.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from accel_choice.analyze import compare  # noqa: E402
from accel_choice.io import results_folder  # noqa: E402
from accel_choice.records.training import TrainingCell  # noqa: E402


def scaled(cell: TrainingCell, factor: float) -> TrainingCell:
    """Return the cell with every epoch and evaluation `factor` times as long."""
    return dataclasses.replace(
        cell,
        epoch_s_jobs=tuple(tuple(t * factor for t in job) for job in cell.epoch_s_jobs),
        eval_s_jobs=tuple(tuple(t * factor for t in job) for job in cell.eval_s_jobs),
        epoch_s=cell.epoch_s.scaled(factor),
        samples_per_s=cell.samples_per_s.scaled(1 / factor),
        eval_s=cell.eval_s.scaled(factor),
    )


def with_cells(folder: results_folder.ResultsFolder, factors: dict) -> results_folder.ResultsFolder:
    """Return the folder with the cells named in `factors` (by key) scaled."""
    cells = [scaled(c, factors[c.key]) if c.key in factors else c for c in folder.training]
    return dataclasses.replace(folder, training=cells)


def failing_rows(a, b, percent: float, result: compare.Comparison | None = None, family: int | None = None) -> set:
    """Return the keys of the rows `--fail-if-slower percent` fails on (row regressions, not whole tables);
    `result`: the comparison of a and b where it is made already; `family`: the rows' family size (compare's)."""
    made = result or compare.compare(a, b, gate=percent, family=family)
    return {r.row.key for r in compare.regressions(made, percent)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs=2, type=Path, metavar="RESULTS")
    parser.add_argument("--slowdown", type=float, default=0.2)
    parser.add_argument("--percent", type=float, default=5.0)
    parser.add_argument("--speedup", type=float, default=0.25)
    parser.add_argument("--faster-cells", type=int, nargs="+", default=[4, 5, 10])
    parser.add_argument("--family", type=int, help="the rows' family size (default: compare's, every row's metrics)")
    args = parser.parse_args(argv)
    if args.family is not None and args.family < 1:
        parser.error(f"--family {args.family}: a family holds one row at least")
    folders = [results_folder.load_results(path, label) for path, label in zip(args.results, "AB")]
    print(f"| way | threads | {args.slowdown:.0%} plants caught | rows named beside the planted one |")
    print("|---|---|---|---|")
    quiet_fails = []
    for way, (a, b) in (("1 → 2", folders), ("2 → 1", folders[::-1])):
        cpu = [c for c in b.training if c.device == "cpu"]
        unplanted = compare.compare(a, b, gate=args.percent, family=args.family)
        baseline = failing_rows(a, b, args.percent, unplanted)
        for threads in sorted({c.threads for c in cpu}):
            caught, beside = 0, 0
            mine = [c for c in cpu if c.threads == threads]
            for cell in mine:
                failed = failing_rows(a, with_cells(b, {cell.key: 1 + args.slowdown}), args.percent, family=args.family)
                caught += cell.key in failed
                beside += len(failed - {cell.key} - baseline)
            print(f"| {way} | {threads} | {caught} of {len(mine)} | {beside} |", flush=True)
        for count in args.faster_cells:
            chosen = sorted(cpu, key=lambda c: (c.batch_size, c.loader, c.threads))[::2][:count]
            quick = with_cells(b, {c.key: 1 - args.speedup for c in chosen})
            quiet_fails.append(bool(failing_rows(a, quick, args.percent, family=args.family) - baseline))
        detectable = unplanted.detectable_in_job
        epoch, evaluation = detectable["epoch_s"], detectable["eval_s"]
        print(
            f"\n{way}: a typical row over the rest of its job would catch {epoch['median'] - 1:.0%} (epoch), "
            f"{evaluation['median'] - 1:.0%} (eval); the most and least sensitive (epoch) {epoch['best'] - 1:.0%}, "
            f"{epoch['worst'] - 1:.0%}; the gate failed before any plant on {len(baseline)} row(s)\n"
        )
    print(
        f"speed-up sets ({args.speedup:.0%} faster, none slower) that failed the gate: {sum(quiet_fails)} of {len(quiet_fails)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
