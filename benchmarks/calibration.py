"""The calibration harness: what the project's "95 %" intervals, "no measurable difference", regression
gate and verdict really do on synthetic runs, for 3 and 5 jobs and job-to-job spreads of 5-30 %.

    .venv/bin/python benchmarks/calibration.py                    # both methods, markdown table
    .venv/bin/python benchmarks/calibration.py --method job-t --draws 2000
    .venv/bin/python benchmarks/calibration.py --flagged           # keep a flagged job, or leave it out?
    .venv/bin/python benchmarks/calibration.py --whole-table       # the whole-table gate: false alarm, power
    .venv/bin/python benchmarks/calibration.py --planner --jobs 3 4 5   # the break-even intervals, by design
    .venv/bin/python benchmarks/calibration.py --from-results run1/results run2/results   # measured components
    .venv/bin/python benchmarks/calibration.py --components components.json --jobs 3 5
    .venv/bin/python benchmarks/calibration.py --from-results run1/results run2/results --in-job   # compare's in-job rows
    .venv/bin/python benchmarks/calibration.py --from-results run1/results run2/results --paired   # first-screen ratios

The runs are drawn through the library's own functions (accel_choice.analyze.calibration): the
interval of a cell, the ratio of two, its outcome, the gate's rule and the verdict's. Every coverage,
false-alarm and power figure docs/statistics.md quotes was printed by this script.
"""

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze import calibration as c  # noqa: E402
from accel_choice.analyze import calibration_rows as cr  # noqa: E402
from accel_choice.analyze import calibration_paired as cp  # noqa: E402
from accel_choice.analyze import row_relative  # noqa: E402
from accel_choice.analyze import planner_calibration as pc  # noqa: E402
from accel_choice.analyze import synthetic, variance  # noqa: E402
from harness_words import components_line, jobs_words, shape_words, unlike_words  # noqa: E402

METHODS = {"bootstrap": c.BOOTSTRAP, "job-t": c.JOB_T}
COLUMNS = (
    "method",
    "jobs",
    "σJ",
    "coverage",
    "A/A differs",
    "gate A/A (20 rows × 2)",
    "power 10 %",
    "power 20 %",
    "power 30 %",
    "verdict error, 1 GPU",
    "verdict error, 5 GPUs",
    "settled by repeats_to_settle",
)


def row(method: c.Method, name: str, design: c.Design, draws: int, gate_draws: int) -> list[str]:
    settle, undecided = c.settle_rate(method, design, draws)
    return [
        name,
        str(design.jobs),
        f"{design.sigma_job:.0%}",
        f"{c.coverage(method, design, draws):.3f}",
        f"{c.aa_differs(method, design, draws):.3f}",
        f"{c.gate_rates(method, design, gate_draws):.3f}",
        *(f"{c.gate_rates(method, design, gate_draws, slowdown=s):.3f}" for s in (0.1, 0.2, 0.3)),
        f"{c.verdict_error_at_threshold(method, design, draws, candidates=1):.3f}",
        f"{c.verdict_error_at_threshold(method, design, draws, candidates=5):.3f}",
        "-" if settle is None else f"{settle:.3f} of {undecided}",
    ]


def flagged_table(jobs_list: list[int], sigmas: list[float], draws: int) -> int:
    """One job of every cell flagged and truly 1, 1.3 or 2 times slower: the t interval with it (kept) and
    without it (dropped)."""
    started = time.perf_counter()
    print(
        "| jobs | σJ | flagged job's slowdown | coverage kept / dropped | width kept / dropped | A/A differs kept / dropped |"
    )
    print("|---|---|---|---|---|---|")
    for jobs in jobs_list:
        for sigma in sigmas:
            for slow in (1.0, 1.3, 2.0):
                f = c.flagged_job_choice(c.Design(jobs=jobs, sigma_job=sigma), draws, slow)
                print(
                    f"| {jobs} | {sigma:.0%} | {slow:g}× | {f.coverage_kept:.3f} / {f.coverage_dropped:.3f} | "
                    f"{f.width_kept:.2f}× / {f.width_dropped:.2f}× | {f.aa_differs_kept:.3f} / {f.aa_differs_dropped:.3f} |",
                    flush=True,
                )
    print(f"\n{draws} draws a row, level {c.LEVEL:.0%}; {time.perf_counter() - started:.0f} s")
    return 0


def whole_table(jobs_list: list[int], sigmas: list[float], draws: int) -> int:
    """The whole-table gate (analyze.compare_table) on a default CPU table: its A/A false alarm and its power
    against every cell 10/20/30 % slower, with each run's machine speed apart by σR (seen by its sentinel)."""
    started = time.perf_counter()
    print("| jobs | σJ | σR (run to run) | A/A fails | power 10 % | power 20 % | power 30 % |")
    print("|---|---|---|---|---|---|---|")
    for jobs in jobs_list:
        for sigma in sigmas:
            for run in (0.0, 0.05, 0.10):
                design = c.Design(jobs=jobs, sigma_job=sigma)
                rates = [c.table_gate_rate(design, draws, slowdown=s, sigma_run=run) for s in (0.0, 0.1, 0.2, 0.3)]
                print(f"| {jobs} | {sigma:.0%} | {run:.0%} | {' | '.join(f'{r:.3f}' for r in rates)} |", flush=True)
    print(
        f"\n{draws} table pairs a figure, 10 job groups × 2 cells, gate at {c.GATE_PERCENT:g} %, interval at "
        f"{c.TABLE_LEVEL:.0%}; {time.perf_counter() - started:.0f} s"
    )
    return 0


def planner_table(jobs_list: list[int], machines: list[int], runs: int, resamples: int, seed: int, out: str) -> int:
    """The break-even intervals' coverage by design (analyze.planner_calibration), printed and written to `out`:
    the table the planner's report quotes (workflow/resources/planner_coverage.json)."""
    started = time.perf_counter()
    print("| grid jobs | profile machines | coverage of a 95 % interval | runs |")
    print("|---|---|---|---|")
    found = []
    for design in pc.designs(jobs_list, machines):
        covered = pc.coverage(design, runs, resamples, seed)
        found.append(records.to_json(covered))
        print(f"| {design.grid_jobs} | {design.machines} | {covered.coverage:.3f} | {runs} |", flush=True)
        Path(out).write_text(
            json.dumps({"designs": found}, indent=1) + "\n"
        )  # after each design: a long run keeps its rows
    print(f"\n{resamples} resamples an interval; written to {out}; {time.perf_counter() - started:.0f} s")
    return 0


def components_table(components: dict, jobs_list: list[int], epochs: int, draws: int, slowdown: float) -> int:
    """The current CPU design (2 thread counts × `jobs` jobs, 10 cells a job or the resampled runs', `epochs` rounds) drawn from measured
    components (analyze.calibration.design_rates): coverage, the gate's A/A false alarm per row and table, power."""
    started = time.perf_counter()
    print(components_line(components))
    print()
    print(
        "| jobs a thread count | epochs | cell coverage | paired ratio coverage | A/A gate, per row | "
        f"A/A gate, per table | power, one cell {slowdown:.0%} slower |"
    )
    print("|---|---|---|---|---|---|---|")
    for jobs in jobs_list:
        design = synthetic.design_from(components, jobs, epochs)
        tables, variants = synthetic.run_shape(design)
        r = c.design_rates(design, draws, variants, tables, slowdown=slowdown)
        print(
            f"| {jobs} | {epochs} | {r.cell_coverage:.3f} | {r.paired_coverage:.3f} | {r.row_false_alarm:.4f} | "
            f"{r.table_false_alarm:.3f} | {r.row_power:.3f} |",
            flush=True,
        )
    print(
        f"\n{draws} run pairs a row: {shape_words(components, epochs)}, epoch and eval times (its rows × metrics, one family), "
        f"level {c.LEVEL:.0%}, gate at {c.GATE_PERCENT:g} %; {time.perf_counter() - started:.0f} s"
    )
    return 0


def in_job_table(
    components: dict,
    jobs_list: list[int],
    epochs: int,
    draws: int,
    slowdown: float,
    unlike: list[float],
    noisier: Sequence[float] = (1.0,),
    shared: bool = True,
    family: int | None = None,
) -> int:
    """compare's rows over the rest of their job (analyze.row_relative), drawn from measured components
    (analyze.calibration_rows.row_rates): coverage, the gate's A/A false alarm, power against the raw row's."""
    started = time.perf_counter()
    print(components_line(components))
    print()
    print(
        "| jobs | epochs | cells' epoch sd within | 2nd thread count's noise | coverage | A/A gate, per row | A/A gate, per table "
        f"(in job) | A/A gate, per table (in job or raw) | 4 cells 25% faster, none slower: gate fails | "
        f"power, one cell {slowdown:.0%} slower (in job) | power (raw) | "
        f"power, the whole cell {slowdown:.0%} slower (epoch and eval, any row) | prior df (median) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for jobs in jobs_list:
        for spread in unlike:
            for noise in noisier:
                design = synthetic.design_from(components, jobs, epochs)
                tables, variants = synthetic.run_shape(design)
                cells = cr.Cells(variants=variants, tables=tables, unlike=spread, noisier=noise, shared=shared)
                r = cr.row_rates(design, draws, cells, slowdown=slowdown, family=family)
                within = unlike_words(spread)
                df = "∞" if r.prior_df >= row_relative.DF_CAP else f"{r.prior_df:.0f}"
                print(
                    f"| {jobs} | {epochs} | {within} | ×{noise:g} | {r.coverage:.3f} | {r.row_false_alarm:.4f} | "
                    f"{r.table_false_alarm:.3f} | {r.table_false_alarm_both:.3f} | {r.others_faster_false_alarm:.3f} | "
                    f"{r.power:.2f} | {r.power_raw:.2f} | {r.power_cell:.2f} | {df} |",
                    flush=True,
                )
    print(
        f"\n{draws} run pairs a row: {shape_words(components, epochs)}, {jobs_words(shared)}, epoch and eval times ({'its rows × metrics, one family' if family is None else f'a family of {family}'}), "
        f"level {c.LEVEL:.0%}, gate at {c.GATE_PERCENT:g} %; "
        f"{time.perf_counter() - started:.0f} s"
    )
    return 0


def paired_table(
    components: dict,
    jobs_list: list[int],
    epochs: int,
    draws: int,
    unlike: list[float],
    noisier: list[float],
    gradients: list[float],
    shared: bool = True,
) -> int:
    """The first screen's within-run ratios of cells timed in the same jobs, drawn from measured components
    (analyze.calibration_paired): coverage and width, the spread borrowed (analyze.same_jobs) and alone."""
    started = time.perf_counter()
    print(components_line(components))
    print()
    print(
        "| jobs | cells' epoch sd | 2nd thread count's noise | job trend sd an octave | coverage 1st / 2nd thread count: "
        "borrowed | alone | smallest B vs largest: borrowed | alone | median ±: borrowed | alone | "
        "within ±10 %: borrowed | alone |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for jobs in jobs_list:
        for spread in unlike:
            for noise in noisier:
                for gradient in gradients:
                    design = synthetic.design_from(components, jobs, epochs)
                    tables, variants = synthetic.run_shape(design)
                    cells = cr.Cells(variants=variants, tables=tables, unlike=spread, noisier=noise, shared=shared)
                    r = cp.paired_rates(design, draws, cells, gradient=gradient)
                    within = unlike_words(spread)
                    print(
                        f"| {jobs} | {within} | ×{noise:g} | {gradient:.1%} | "
                        f"{' / '.join(f'{c:.3f}' for c in r.coverage)} | "
                        f"{' / '.join(f'{c:.3f}' for c in r.coverage_alone)} | {r.extreme:.3f} | {r.extreme_alone:.3f} | "
                        f"{r.half_width:.1%} | {r.half_width_alone:.1%} | {r.within:.2f} | {r.within_alone:.2f} |",
                        flush=True,
                    )
    print(
        f"\n{draws} runs a row: {shape_words(components, epochs)}, {jobs_words(shared)}, {epochs} epochs a job, "
        "each thread count's first cell "
        f"against the others, level {c.LEVEL:.0%}; {time.perf_counter() - started:.0f} s"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=[*METHODS, "both"], default="both")
    parser.add_argument("--draws", type=int, default=1000, help="synthetic runs per figure (default 1000)")
    parser.add_argument("--gate-draws", type=int, default=300, help="synthetic tables per gate figure (default 300)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[4, 6])
    parser.add_argument("--sigma-job", type=float, nargs="+", default=[0.05, 0.10, 0.20, 0.30])
    parser.add_argument(
        "--flagged",
        action="store_true",
        help="instead: what keeping a flagged job in the intervals does, against leaving it out (analyze.trust)",
    )
    parser.add_argument(
        "--whole-table",
        action="store_true",
        help="instead: the whole-table gate's false alarm and power (analyze.compare_table)",
    )
    parser.add_argument(
        "--planner",
        action="store_true",
        help="instead: the break-even intervals' coverage by grid jobs and profile machines (analyze.planner_calibration)",
    )
    parser.add_argument("--machines", type=int, nargs="+", default=[0, 1, 3, 4], help="--planner: profile machines")
    parser.add_argument("--runs", type=int, default=1000, help="--planner: synthetic runs per design (default 1000)")
    parser.add_argument("--resamples", type=int, default=200, help="--planner: resamples per interval (default 200)")
    parser.add_argument("--seed", type=int, default=20261206, help="--planner: the first run's seed")
    parser.add_argument("--out", default=str(pc.RESOURCE), help="--planner: where the table is written")
    parser.add_argument(
        "--components",
        metavar="FILE",
        help="instead: the current CPU design drawn from these variance components "
        "(benchmarks/variance_components.py --json)",
    )
    parser.add_argument(
        "--from-results",
        nargs="+",
        metavar="DIR",
        help="instead: the same, the components pooled from these results folders (analyze.variance)",
    )
    parser.add_argument("--epochs", type=int, default=7, help="--components: epochs a job (timing.epochs_per_job)")
    parser.add_argument("--slowdown", type=float, default=0.2, help="--components: the one slower cell's slowdown")
    parser.add_argument(
        "--in-job",
        action="store_true",
        help="--components, --from-results: compare's rows over the rest of their job instead (analyze.row_relative)",
    )
    parser.add_argument(
        "--family",
        type=int,
        metavar="N",
        help="--in-job: the gate's family size (default: compare's, every row of every metric)",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="--components, --from-results: the within-run ratios of cells of the same jobs (analyze.same_jobs)",
    )
    parser.add_argument(
        "--noisier",
        type=float,
        nargs="+",
        default=[1.0],
        help="--paired, --in-job: the second thread count's epoch noise, times the first's",
    )
    parser.add_argument(
        "--separate",
        action="store_true",
        help="--paired, --in-job: a job a thread count (the design before 2026-12-07), not one job for both",
    )
    parser.add_argument(
        "--gradient",
        type=float,
        nargs="+",
        default=[0.0],
        help="--paired: sd of each job's own trend over the cells, in log time an octave of batch size",
    )
    parser.add_argument(
        "--unlike",
        type=float,
        nargs="+",
        default=[1.0, 2.0],
        help="--in-job, --paired: each cell's epoch sd the design's times a factor log-uniform in [1/U, U] (1: alike)",
    )
    args = parser.parse_args(argv)
    if args.family is not None and args.family < 1:
        parser.error(f"--family {args.family}: a family holds one row at least")
    if args.components or args.from_results:
        if args.components:
            from variance_components import read_components

            found = read_components(args.components, args.epochs)
        else:
            from variance_components import folder_tables

            found = variance.to_json(variance.components([t for d in args.from_results for t in folder_tables(d)]))
            found = found["components"]
        if args.paired:
            shared = not args.separate
            return paired_table(
                found, args.jobs, args.epochs, args.draws, args.unlike, args.noisier, args.gradient, shared
            )
        if args.in_job:
            jobs, shared = args.jobs, not args.separate
            return in_job_table(
                found, jobs, args.epochs, args.draws, args.slowdown, args.unlike, args.noisier, shared, args.family
            )
        return components_table(found, args.jobs, args.epochs, args.draws, args.slowdown)
    if args.planner:
        return planner_table(args.jobs, args.machines, args.runs, args.resamples, args.seed, args.out)
    if args.whole_table:
        return whole_table(args.jobs, args.sigma_job, args.draws)
    if args.flagged:
        return flagged_table(args.jobs, args.sigma_job, args.draws)
    chosen = METHODS if args.method == "both" else {args.method: METHODS[args.method]}
    started = time.perf_counter()
    print(f"| {' | '.join(COLUMNS)} |")
    print(f"|{'---|' * len(COLUMNS)}")
    for name, method in chosen.items():
        for jobs in args.jobs:
            for sigma in args.sigma_job:
                design = c.Design(jobs=jobs, sigma_job=sigma)
                print(f"| {' | '.join(row(method, name, design, args.draws, args.gate_draws))} |", flush=True)
    print(
        f"\n{args.draws} draws a figure ({args.gate_draws} tables for the gate), epochs {c.Design(3, 0).epochs} "
        f"a job, epoch spread {c.Design(3, 0).sigma_epoch:.0%}, level {c.LEVEL:.0%}, gate at "
        f"{c.GATE_PERCENT:g} %; {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as error:  # a run the components cannot draw (analyze.synthetic.Blocks)
        sys.exit(f"{Path(sys.argv[0]).name}: {error}")
