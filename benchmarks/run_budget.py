"""Where a run's timing jobs spend their wall time: start-up, measurement, the rest (issue 45's targets).

    .venv/bin/python benchmarks/run_budget.py results [other/results ...]

For each results folder, a row per timing rule (the `time_*` rules and `train_northstar`, which take the
whole timing slot) from `tables/resources.json`:

- jobs, and the processes' wall time summed (Snakemake's `benchmark:` files);
- the bodies' wall time summed (each job's log: the script after its imports);
- for the CPU training jobs, the seconds on a clock, from their records: the timed epochs and evaluations,
  then also the plain-loop reference (`reference.EPOCHS` epochs a cell) and the fixed reference step.

The measuring share is those seconds over the processes' wall time (the issue's target: 60 %).
A last line gives the run's wall time from Snakemake's newest log beside the folder, where there is one:
its first job's start to its last job's end, to the second.
"""

import argparse
import datetime
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.measure.reference import EPOCHS  # noqa: E402
from accel_choice.records.resources import ResourceTable  # noqa: E402
from accel_choice.records.training import TrainingJob  # noqa: E402

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def timed_seconds(folder: Path) -> tuple[float, float]:
    """Return the CPU training jobs' timed epochs and evaluations, and those plus both references, in seconds."""
    pattern = paths.training_record("cpu", paths.CPU_JOB.format(threads="*", repeat="*"))
    jobs = [records.read(TrainingJob, path) for path in sorted(folder.glob(pattern))]
    epochs = sum(sum(r.epoch_s_each) + sum(r.eval_s_each) for job in jobs for r in job.records)
    plain = sum(EPOCHS * (r.reference_epoch_s or 0.0) for job in jobs for r in job.records)
    step = sum(sum(job.reference_step.seconds) for job in jobs if job.reference_step is not None)
    return epochs, epochs + plain + step


def run_wall(folder: Path) -> float | None:
    """Return the seconds from the first to the last time stamp of Snakemake's newest log beside `folder`."""
    logs = sorted((folder.resolve().parent / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        return None
    stamps = [
        datetime.datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y")
        for line in logs[-1].read_text().splitlines()
        if (match := STAMP.match(line))
    ]
    return (max(stamps) - min(stamps)).total_seconds() if stamps else None


def budget(folder: Path) -> list[str]:
    """Return the markdown rows of one results folder."""
    table = records.read(ResourceTable, folder / paths.RESOURCES)
    timing = [r for r in table.rules if r.rule.startswith("time_") or r.rule == "train_northstar"]
    rows = []
    for rule in timing:
        bodies = [j.body_wall_s for j in table.jobs if j.rule == rule.rule and j.body_wall_s is not None]
        share = ""
        if rule.rule == "time_cpu_training":
            epochs, measured = timed_seconds(folder)
            share = (
                f"{epochs:.1f} s ({epochs / rule.process_wall_total_s:.0%}) | "
                f"{measured:.1f} s ({measured / rule.process_wall_total_s:.0%})"
            )
        else:
            share = " | "
        rows.append(
            f"| {folder} | {rule.rule} | {rule.jobs} | {rule.process_wall_total_s:.1f} | {sum(bodies):.1f} | {share} |"
        )
    total = sum(r.process_wall_total_s for r in timing)
    wall = run_wall(folder)
    rows.append(
        f"| {folder} | all timing rules | {sum(r.jobs for r in timing)} | {total:.1f} | | | "
        f"{'run wall ' + format(wall, '.0f') + ' s' if wall is not None else ''} |"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results folders of finished runs")
    args = parser.parse_args()
    print(
        "| run | rule | jobs | processes' wall (s) | bodies' wall (s) | timed epochs + evals (share) "
        "| + plain loop and reference step (share) |"
    )
    print("|---|---|---|---|---|---|---|")
    for folder in args.results:
        print("\n".join(budget(folder)))


if __name__ == "__main__":
    main()
