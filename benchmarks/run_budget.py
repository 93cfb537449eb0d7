"""Where a run's timing jobs spend their wall time: start-up, measurement, the rest (issue 45's targets).

    .venv/bin/python benchmarks/run_budget.py results [other/results ...]

For each results folder, a row per timing rule (the `time_*` rules and `train_northstar`, which take the
whole timing slot) from `tables/resources.json`:

- jobs, and the processes' wall time summed (Snakemake's `benchmark:` files);
- the bodies' wall time summed (each job's log: the script after its imports);
- the seconds on a clock, from the records: the timed epochs and evaluations (CPU training, the planner's
  grid), the timed load passes, the Northstar epochs; for the CPU training jobs also with the plain-loop
  reference (`reference.EPOCHS` epochs a cell) and the fixed reference step.

The measuring share is those seconds over the processes' wall time (the issue's target: 60 %).
Warm-ups, the drift sentinel and the GPU rules' clocks are not counted: the shares are lower bounds.
A last line gives the run's wall time from Snakemake's newest log beside the folder that ran jobs: its
first job's start to its last job's end, to the second (Snakemake's own start-up comes before it),
and the part of it no timing job ran in: the other jobs, two at a time, and Snakemake's scheduling.
Only the records the run's manifest lists count: an earlier configuration's leftovers do not.
"""

import argparse
import datetime
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.io.manifest import read_manifest  # noqa: E402
from accel_choice.measure.reference import EPOCHS  # noqa: E402
from accel_choice.records.grid import GridJob  # noqa: E402
from accel_choice.records.loads import LoadConvertJob  # noqa: E402
from accel_choice.records.northstar import NorthstarHistory  # noqa: E402
from accel_choice.records.resources import ResourceTable  # noqa: E402
from accel_choice.records.training_job import TrainingJob  # noqa: E402

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def _read(folder: Path, listed: dict[str, str], pattern: str, kind: type) -> list:
    """Read the records matching `pattern` that the run's manifest lists (not those an earlier configuration left)."""
    return [
        records.read(kind, path)
        for path in sorted(folder.glob(pattern))
        if path.relative_to(folder).as_posix() in listed
    ]


def clocked(folder: Path, rule: str, listed: dict[str, str]) -> tuple[float, float] | None:
    """Return a timing rule's seconds on a clock, bare and with the CPU jobs' references; None: not counted.

    `listed`: the run's manifest (`read_manifest`), read once a folder."""
    if rule == "time_cpu_training":
        jobs = _read(folder, listed, paths.training_record("cpu", "*"), TrainingJob)  # rep<r> or t<T>.rep<r>
        epochs = sum(sum(r.epoch_s_each) + sum(r.eval_s_each) for job in jobs for r in job.records)
        plain = sum(EPOCHS * (r.reference_epoch_s or 0.0) for job in jobs for r in job.records)
        step = sum(sum(job.reference_step.seconds) for job in jobs if job.reference_step is not None)
        return epochs, epochs + plain + step
    if rule == "time_cost_model":
        grids = _read(folder, listed, paths.COST_MODEL_RECORD.format(device="*", repeat="*"), GridJob)
        seconds = sum(sum(r.epoch_s_each) + sum(r.eval_s_each) for job in grids for r in job.records)
    elif rule == "time_load_convert":
        loads = _read(folder, listed, paths.LOAD_CONVERT_JOB.format(repeat="*"), LoadConvertJob)
        seconds = sum(p.total_s for job in loads for load in job.loads for p in load.pass_stages)
    elif rule == "train_northstar":
        runs = _read(folder, listed, paths.NORTHSTAR_HISTORY.format(device="*", batch_size="*"), NorthstarHistory)
        seconds = sum(row.epoch_s for run in runs for row in run.history)
    else:
        return None
    return seconds, seconds


def run_wall(folder: Path) -> float | None:
    """Return the seconds from the first job's start to the last job's end in Snakemake's newest log that ran jobs.

    The log beside `folder` (`.snakemake/log`); Snakemake's own start-up and DAG building come before it."""
    for log in sorted((folder.resolve().parent / ".snakemake" / "log").glob("*.snakemake.log"), reverse=True):
        stamps = [
            datetime.datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y")
            for line in log.read_text().splitlines()
            if (match := STAMP.match(line))
        ]
        if stamps:
            return (max(stamps) - min(stamps)).total_seconds()
    return None


def budget(folder: Path) -> list[str]:
    """Return the markdown rows of one results folder."""
    table = records.read(ResourceTable, folder / paths.RESOURCES)
    listed = read_manifest(folder / paths.MANIFEST)
    timing = [r for r in table.rules if r.rule.startswith("time_") or r.rule == "train_northstar"]
    rows, total, counted = [], 0.0, [0.0, 0.0]
    for rule in timing:
        bodies = [j.body_wall_s for j in table.jobs if j.rule == rule.rule and j.body_wall_s is not None]
        wall = rule.process_wall_total_s
        seconds = clocked(folder, rule.rule, listed)
        cells = " | "
        if seconds is not None:
            counted = [counted[0] + seconds[0], counted[1] + seconds[1]]
            cells = f"{_share(seconds[0], wall)} | {_share(seconds[1], wall)}"
        total += wall
        rows.append(f"| {folder} | {rule.rule} | {rule.jobs} | {wall:.1f} | {sum(bodies):.1f} | {cells} |")
    wall = run_wall(folder)
    rows.append(
        f"| {folder} | every timing rule{_rest(wall, total)} | "
        f"{sum(r.jobs for r in timing)} | {total:.1f} | | {_share(counted[0], total)} | {_share(counted[1], total)} |"
    )
    return rows


def _rest(wall: float | None, timing: float) -> str:
    """Say the run's wall time and the part no timing job ran in (the other jobs, Snakemake's scheduling)."""
    return "" if wall is None else f" (run wall {wall:.0f} s, {max(wall - timing, 0.0):.0f} s without a timing job)"


def _share(seconds: float, wall: float) -> str:
    return f"{seconds:.1f} s ({seconds / wall:.0%})" if wall > 0 else f"{seconds:.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", type=Path, help="results folders of finished runs")
    args = parser.parse_args()
    print(
        "| run | rule | jobs | processes' wall (s) | bodies' wall (s) | on a clock (share) "
        "| with the CPU jobs' references (share) |"
    )
    print("|---|---|---|---|---|---|---|")
    for folder in args.results:
        print("\n".join(budget(folder)))


if __name__ == "__main__":
    main()
