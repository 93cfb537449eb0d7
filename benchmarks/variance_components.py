"""The variance components of runs' CPU epoch times (analyze.variance), as a markdown table.

    .venv/bin/python benchmarks/variance_components.py results                 # one run
    .venv/bin/python benchmarks/variance_components.py run1/results run2/results --json components.json
    .venv/bin/python benchmarks/variance_components.py run1/results run2/results --relative

`--clip 3` splits each cell's slow epochs (over 3 robust sds above the median of its rounds in a job) from
the bulk (analyze.variance.bulk and tail), and fits the draw whose estimates give both back (analyze.synthetic.fit_tail).
It counts how often slow epochs share a round (analyze.variance.bursts), and keeps the runs' jobs whole
(analyze.variance.within_job), to be resampled with normal job and interaction effects fitted beside them
(analyze.synthetic.fit_blocks): the harness draws these where they fit (docs/statistics.md, "Resampled jobs").
Where a draw's estimates miss a measured value by over 10 %, it says so and writes the gap (`misfit`): the harness refuses it.
`--relative` divides each epoch by its job's reference step median (TrainingJob.reference_step): the
job column is then the job effect that the reference step does not take out. `--across-runs` adds a row
with each thread count's jobs of all runs in one table: its job column holds the shift between runs too.

Each results folder's CPU timing records (timing/cpu/rep<r>.json, each checked against its job's
log) give one job table per thread count: jobs × variants × rounds of epoch times. A row per folder and
one pooled over all of them; each component a standard deviation of log times (≈ relative spread) with
its degrees of freedom. `--json` writes the pooled components for `benchmarks/calibration.py --components`.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze import synthetic, variance  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training_job import TrainingJob  # noqa: E402


def folder_tables(folder: str, relative: bool = False) -> list:
    """A results folder's CPU job tables (analyze.variance.job_tables), from its checked timing records;
    `relative`: each epoch over its job's reference step median (jobs without one left out)."""
    # rep<r>.json; a folder of a run before training-job 14 holds t<T>.rep<r>.json (never both: stale files differ)
    pattern = paths.training_record("cpu", paths.CPU_JOB.format(repeat="*"))
    files = sorted(Path(folder).glob(pattern)) or sorted(Path(folder).glob(paths.training_record("cpu", "t*.rep*")))
    if not files:
        raise SystemExit(f"{folder}: no CPU timing records ({pattern})")
    jobs = [records.read(TrainingJob, path) for path in files]
    found = [r for job in jobs for r in job.records]
    if not relative:
        return variance.job_tables(found)
    reference = {
        (r.threads, r.repeat): job.reference_step.median_s
        for job in jobs
        if job.reference_step is not None
        for r in job.records
    }
    if not reference:
        raise SystemExit(f"{folder}: no CPU job timed the reference step (a run before TrainingJob version 12)")
    return variance.job_tables(found, reference)


def read_components(path: str, epochs: int) -> dict:
    """Return the components a --json file holds; stop, naming the file, where a design of `epochs` rounds cannot
    be drawn from them (analyze.synthetic.design_from): a draw that is no fit, resampled jobs of other rounds."""
    components = json.loads(Path(path).read_text())["components"]
    try:
        synthetic.design_from(components, 2, epochs)
    except ValueError as error:
        raise SystemExit(f"{Path(sys.argv[0]).name}: {path}: {error}") from None
    return components


def resampled(per_folder: list, every: list, components: dict, clip: float) -> str:
    """Fit the draw that resamples the runs' jobs whole (analyze.synthetic.fit_blocks), add it to the
    components, and say how closely its estimates give every measured value back (`every`: all folders' tables)."""
    try:
        blocks = synthetic.Blocks(variance.within_job([tables for _, tables in per_folder]))
    except ValueError as error:
        return f"Jobs not resampled: {error}. `calibration.py --components` draws the fitted tail, if it fits."
    fit = synthetic.fit_blocks(blocks, synthetic.moments(every, clip), every[0].shape[0], clip)
    components[synthetic.RESAMPLED] = fit.to_json(blocks)
    gaps = ", ".join(f"{k} {fit.found[k]:.3g} ({fit.wanted[k]:.3g})" for k in synthetic.MOMENTS)
    verdict = (
        "the harness draws these"
        if fit.converged
        else f"no fit (at most {synthetic.FIT_TOLERANCE:.0%}): `calibration.py --components` refuses these components"
    )
    return (
        f"Resampled: the {len(blocks.logs)} jobs whole, job sd {fit.sigma_job:.2%} and interaction sd "
        f"{fit.sigma_interaction:.2%} drawn beside them; {synthetic.FIT_TABLES} drawn tables estimate (measured) {gaps}. "
        f"Misfit {fit.misfit:.0%}: {verdict}."
    )


def table(rows: list[tuple[str, variance.Components]]) -> str:
    """The components as a markdown table: one row per source, each cell `sd (df)`."""
    lines = [
        "| source | tables | jobs | epochs | " + " | ".join(variance.NAMES) + " |",
        "|---|---|---|---|" + "---|" * len(variance.NAMES),
    ]
    for name, found in rows:
        cells = [f"{c.sd:.2%} ({c.df:.0f})" for c in found.all()]
        lines.append(f"| {name} | {found.tables} | {found.jobs} | {found.epochs} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results folders of finished runs")
    parser.add_argument("--json", metavar="FILE", help="also write the pooled components as JSON here")
    parser.add_argument("--relative", action="store_true", help="each epoch over its job's reference step median")
    parser.add_argument("--across-runs", action="store_true", help="also a row with the runs' jobs in one table")
    parser.add_argument(
        "--clip",
        type=float,
        metavar="SDS",
        help="split the slow epochs beyond this many robust sds from the bulk, and fit the draw that gives both back",
    )
    args = parser.parse_args(argv)
    per_folder = [(folder, folder_tables(folder, args.relative)) for folder in args.results]
    rows = [(folder, variance.components(tables, args.clip)) for folder, tables in per_folder]
    every = [t for _, tables in per_folder for t in tables]  # every folder's tables, pooled
    pooled = variance.components(every, args.clip)
    if len(rows) > 1:
        rows.append(("pooled", pooled))
    shapes = {tuple(t.shape[1:] for t in tables) for _, tables in per_folder}
    if args.across_runs and len(rows) > 1 and len(shapes) == 1:  # a thread count's jobs of every run, one table
        joined = [np.concatenate(same) for same in zip(*(tables for _, tables in per_folder))]
        rows.append(("across runs", variance.components(joined, args.clip)))
    print(table(rows))
    print()
    for name in variance.NAMES:
        print(f"- {name}: {variance.MEANING[name]}")
    what = "log(epoch / the job's reference step)" if args.relative else "log epoch times"
    print(f"\nEach cell: the standard deviation of {what} (≈ relative spread), its degrees of freedom.")
    slow = None
    if args.clip is not None:
        slow = variance.tail(every, args.clip)
        print(
            f"Slow epochs beyond {args.clip:g} robust sds: {slow.share:.2%} of them, "
            f"{slow.log_size:.3f} mean log excess (×{np.exp(slow.log_size):.2f})."
        )
        together, apart = variance.bursts(every, args.clip)
        print(f"A slow epoch's round holds {together:.2f} other slow epochs ({apart:.2f} if they were independent).")
    found = variance.to_json(pooled, slow)
    if slow is not None:  # the draw that gives these estimates back (analyze.synthetic.fit_tail)
        shape = per_folder[0][1][0].shape
        design = synthetic.design_from(found["components"], shape[0], shape[2])
        fit = synthetic.fit_tail(design, shape[1], 200, pooled.epoch.sd, slow.share, slow.log_size)
        draw = {"epoch_sd": fit.sigma_epoch, "tail_share": fit.tail_share, "tail_log": fit.tail_log}
        found["components"]["tail"]["draw"] = draw | {"misfit": fit.misfit}
        print(
            f"Fitted tail (a normal bulk, independent slow epochs): epoch sd {fit.sigma_epoch:.2%}, slow epochs {fit.tail_share:.2%} of mean log excess "
            f"{fit.tail_log:.3f}: 200 drawn tables estimate {fit.found[0]:.2%}, {fit.found[1]:.2%}, {fit.found[2]:.3f}."
        )
        if not fit.converged:
            print(f"No fit: the closest such draw misses the measured bulk and tail by {fit.misfit:.0%}.")
        print(resampled(per_folder, every, found["components"], args.clip))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1) + "\n")
        print(f"written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
