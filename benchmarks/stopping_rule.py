"""The stopping rule of timing.budget_s (analyze.timing_plan) in synthetic runs drawn from measured variance components.

    .venv/bin/python benchmarks/stopping_rule.py --components benchmarks/components/r10-r10b.json
    .venv/bin/python benchmarks/stopping_rule.py --components FILE --most 6 8 10 --noisier 1 3 --draws 2000

Each row: runs that start with --start jobs and add one a round while a stated interval is wider than
--target and the budget (--most jobs) allows (analyze.calibration_adaptive). Coverage after stopping beside the
fixed designs of --start and --most jobs; the jobs spent; how often the target was met. docs/statistics.md quotes it.
Each job times both thread counts (Cells.shared); `--separate` draws a job a thread count, as before 2026-12-07.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from accel_choice.analyze import calibration_adaptive as ca  # noqa: E402
from accel_choice.analyze import synthetic, variance  # noqa: E402
from accel_choice import records  # noqa: E402
from accel_choice.analyze.calibration_rows import Cells  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingTable  # noqa: E402
from harness_words import components_line, shape_words, unlike_words  # noqa: E402
from variance_components import read_components  # noqa: E402


def run_truths(results: Path, tie: bool = False) -> np.ndarray:
    """Return a run's CPU cell points [thread count, variant] over the fastest's; with `tie`, the
    fastest's twin at the other thread count made as fast (a true thread tie).

    The variants stand in the order of the components' blocks (`variance.variant_order`), so each cell's
    true time falls on its own measured insides."""
    cells = [c for c in records.read(TrainingTable, results / paths.CPU_TABLE).table if c.device == "cpu"]
    threads = sorted({c.threads for c in cells})
    points = {c.key: c.epoch_s.point for c in cells}
    order = [variance.variant_order(c.key for c in cells if c.threads == t) for t in threads]
    truths = np.array([[points[k] for k in keys] for keys in order])
    truths /= truths.min()
    if tie:
        t, v = np.unravel_index(np.argmin(truths), truths.shape)
        truths[(t + 1) % len(threads), v] = truths[t, v]
    return truths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", required=True, metavar="FILE", help="benchmarks/variance_components.py --json")
    parser.add_argument("--draws", type=int, default=1000, help="synthetic runs a row (default 1000)")
    parser.add_argument("--start", type=int, default=4, help="jobs before the rule (timing.repeats)")
    parser.add_argument("--most", type=int, nargs="+", default=[6, 8], help="the budget, in jobs")
    parser.add_argument("--separate", action="store_true", help="a job a thread count (the design before 2026-12-07)")
    parser.add_argument("--block", type=float, default=0.0, help="sd of a job's shift of one thread count's block")
    parser.add_argument("--target", type=float, default=0.10, help="timing.target: half width over the point")
    parser.add_argument("--epochs", type=int, default=7, help="epochs a job (timing.epochs_per_job)")
    parser.add_argument("--floor", type=float, default=0.0, help="the run's noise floor: a tie may stay within it")
    parser.add_argument("--select", action="store_true", help="the fastest chosen by its point, as the report does")
    parser.add_argument(
        "--truths",
        metavar="RESULTS",
        help="each cell's true time from this run's CPU table (its points), not 1: few cells then contend",
    )
    parser.add_argument(
        "--tie", action="store_true", help="--truths: the fastest's twin at the other thread count as fast"
    )
    parser.add_argument("--unlike", type=float, nargs="+", default=[1.0, 2.0], help="cells' epoch sd spread (1: alike)")
    parser.add_argument("--noisier", type=float, nargs="+", default=[1.0, 3.0], help="2nd thread count's noise")
    args = parser.parse_args(argv)
    components = read_components(args.components, args.epochs)
    truths = run_truths(Path(args.truths), args.tie) if args.truths else None
    started = time.perf_counter()
    print(components_line(components))
    print()
    print(
        "| budget, jobs | cells' epoch sd | 2nd thread count's noise | coverage: stopped | "
        f"{args.start} jobs | budget's jobs | thread tie: stopped | budget's jobs | growth: stopped | "
        "jobs spent (mean) | target met | stated within target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for most in args.most:
        for spread in args.unlike:
            for noise in args.noisier:
                design = synthetic.design_from(components, args.start, args.epochs)
                tables, variants = synthetic.run_shape(design)
                r = ca.adaptive_rates(
                    design,
                    args.draws,
                    Cells(
                        variants=variants,
                        tables=tables,
                        unlike=spread,
                        noisier=noise,
                        shared=not args.separate,
                        block=args.block,
                    ),
                    args.start,
                    most,
                    args.target,
                    args.floor,
                    args.select,
                    truths,
                )
                print(
                    f"| {most} | {unlike_words(spread)} | ×{noise:g} | {r.coverage:.3f} | {r.coverage_start:.3f} | "
                    f"{r.coverage_most:.3f} | {r.threads_coverage:.3f} | {r.threads_coverage_most:.3f} | "
                    f"{r.growth_coverage:.3f} | {r.mean_jobs:.2f} | {r.met:.2f} | {r.within:.2f} |",
                    flush=True,
                )
    print(
        f"\n{args.draws} runs a row: {shape_words(components, args.epochs)}, "
        f"{'a job a thread count' if args.separate else f'one job for both (block shift sd {args.block:.1%})'}, "
        f"{args.epochs} epochs a job, target ±{args.target:.0%}, "
        f"noise floor ±{args.floor:.0%}, fastest {'by its point' if args.select else 'the first cell'}, "
        f"true times {'from ' + args.truths + (' with a thread tie' if args.tie else '') if args.truths else 'all 1'}, "
        f"level 95 %; {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as error:  # a run the components cannot draw (analyze.synthetic.Blocks)
        sys.exit(f"{Path(sys.argv[0]).name}: {error}")
