"""The variance components of runs' CPU epoch times (analyze.variance), as a markdown table.

    .venv/bin/python benchmarks/variance_components.py results                 # one run
    .venv/bin/python benchmarks/variance_components.py run1/results run2/results --json components.json

Each results folder's CPU timing records (timing/cpu/t<T>.rep<r>.json, each checked against its job's
log) give one job table per thread count: jobs × variants × rounds of epoch times. A row per folder and
one pooled over all of them; each component a standard deviation of log times (≈ relative spread) with
its degrees of freedom. `--json` writes the pooled components for `benchmarks/calibration.py --components`.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze import variance  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingJob  # noqa: E402


def folder_tables(folder: str) -> list:
    """A results folder's CPU job tables (analyze.variance.job_tables), from its checked timing records."""
    pattern = paths.training_record("cpu", paths.CPU_JOB.format(threads="*", repeat="*"))
    files = sorted(Path(folder).glob(pattern))
    if not files:
        raise SystemExit(f"{folder}: no CPU timing records ({pattern})")
    found = [r for path in files for r in records.read(TrainingJob, path).records]
    return variance.job_tables(found)


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
    args = parser.parse_args(argv)
    per_folder = [(folder, folder_tables(folder)) for folder in args.results]
    rows = [(folder, variance.components(tables)) for folder, tables in per_folder]
    pooled = variance.components([t for _, tables in per_folder for t in tables])
    if len(rows) > 1:
        rows.append(("pooled", pooled))
    print(table(rows))
    print()
    for name in variance.NAMES:
        print(f"- {name}: {variance.MEANING[name]}")
    print("\nEach cell: the standard deviation of log epoch times (≈ relative spread), its degrees of freedom.")
    if args.json:
        Path(args.json).write_text(json.dumps(variance.to_json(pooled), indent=1) + "\n")
        print(f"written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
