"""Do a CPU job's cells read slower in the rounds where their thread count follows the other one?

One CPU job times every thread count (training-job 14). A round runs one count's cells, then the other's; the next
round runs backwards (measure.training.epoch_order). So the first count's block follows the second's in backward
rounds only. If switching down left a cost behind, the first count's cells would read slower in backward rounds.

For each job and thread count: the mean over its cells of log(median of the backward rounds' epochs / median of
the forward rounds'). A row per thread count: the geometric mean over jobs with a t interval (jobs - 1 df), and
per job. The last row pairs the counts job by job: the first count's figure over the last's. A round's shared
shift moves both counts alike and cancels there; what is left is the place in the round and the switch.

It also asks whether one thread count's whole block runs fast or slow in some jobs (`block_shift`): the spread
over jobs of each job's mean log cell of one count less the other's, beside what the cells' own noise explains.
The harness draws such a shift with `stopping_rule.py --block`.

    .venv/bin/python benchmarks/switch_position.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze.job_intervals import paired_t  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.measure.training import epoch_order  # noqa: E402
from accel_choice.records.training_job import TrainingJob  # noqa: E402

METHOD = "t on each job's mean log(backward / forward) over its cells"


def forward_rounds(repeat: int, rounds: int) -> list[bool]:
    """Whether each round of a job of repeat `repeat` ran forwards: epoch_order's rounds of two cells, read back."""
    order = epoch_order(range(2), rounds, repeat)
    return [order[2 * k] == 0 for k in range(rounds)]


def job_figures(job: TrainingJob) -> dict[int, float]:
    """Return, per thread count of a CPU job, the mean over its cells of log(backward median / forward median)."""
    found: dict[int, list[float]] = defaultdict(list)  # thread counts in the order the job ran their blocks
    for r in sorted(job.records, key=lambda r: r.position_in_job):
        forward = forward_rounds(r.repeat, len(r.epoch_s_each))
        ahead = [t for t, f in zip(r.epoch_s_each, forward) if f]
        back = [t for t, f in zip(r.epoch_s_each, forward) if not f]
        if ahead and back:
            found[r.threads].append(math.log(statistics.median(back) / statistics.median(ahead)))
    return {threads: statistics.mean(logs) for threads, logs in found.items()}


def read_jobs(folder: Path) -> list[TrainingJob]:
    """Return a results folder's CPU training jobs, each checked as a TrainingJob."""
    return [records.read(TrainingJob, path) for path in sorted(folder.glob(paths.training_record("cpu", "*")))]


def shared_jobs(runs: list[list[TrainingJob]]) -> list[dict[int, float]]:
    """Every CPU job of these runs (`read_jobs`) that timed more than one thread count, as `job_figures`."""
    return [figures for jobs in runs for figures in map(job_figures, jobs) if len(figures) > 1]


def block_shift(runs: list[list[TrainingJob]]) -> tuple[float, float, int] | None:
    """Return the sd over jobs of one thread count's block against the other's, the part the cells' own
    job-to-job noise explains, and the degrees of freedom; None without two jobs of two counts in a run.

    Per run (`read_jobs`): each job's mean log median epoch over one count's cells less the other's; its variance
    over the run's jobs. Expected from the cells: each count's cell × job residual variance over its cells."""
    import numpy as np

    observed, expected, df = 0.0, 0.0, 0
    for jobs in runs:
        counts = sorted({r.threads for job in jobs for r in job.records})
        if len(jobs) < 2 or len(counts) < 2:
            continue
        logs = {}
        for t in counts[0], counts[-1]:
            rows = [
                sorted((r.key, math.log(statistics.median(r.epoch_s_each))) for r in j.records if r.threads == t)
                for j in jobs
            ]
            logs[t] = np.array([[value for _, value in row] for row in rows])
        d = logs[counts[0]].mean(axis=1) - logs[counts[-1]].mean(axis=1)
        observed += float(np.var(d, ddof=1)) * (len(d) - 1)
        for x in logs.values():
            residual = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
            cell = float((residual**2).sum()) / ((x.shape[0] - 1) * (x.shape[1] - 1))
            expected += cell / x.shape[1] * (len(d) - 1)
        df += len(d) - 1
    return None if not df else (math.sqrt(observed / df), math.sqrt(expected / df), df)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS")
    parser.add_argument("--level", type=float, default=0.95)
    args = parser.parse_args(argv)
    runs = [read_jobs(folder) for folder in args.results]
    jobs = shared_jobs(runs)
    if len(jobs) < 2:
        print("fewer than two CPU jobs timed more than one thread count: nothing to test")
        return 1
    counts = list(jobs[0])  # the first block's count first (timing.threads' order)
    print("| thread count | backward / forward rounds | interval | jobs |")
    print("|---|---|---|---|")
    for threads in counts:
        found = paired_t([job[threads] for job in jobs], args.level, METHOD)
        each = " ".join(f"{math.exp(job[threads]):.3f}" for job in jobs)
        print(f"| {threads} | {found.point:.3f} | {found.low:.3f}–{found.high:.3f} | {each} |")
    first, last = counts[0], counts[-1]
    found = paired_t([job[first] - job[last] for job in jobs], args.level, METHOD)
    print(
        f"| {first} over {last}, job by job | {found.point:.3f} | {found.low:.3f}–{found.high:.3f} | {len(jobs)} jobs |"
    )
    print(f"\n{len(jobs)} jobs of {len(args.results)} folder(s); {args.level:.0%} intervals.")
    shift = block_shift(runs)
    if shift is not None:
        observed, cells, df = shift
        excess = math.sqrt(max(observed**2 - cells**2, 0.0))
        print(
            f"One thread count's block against the other's, over jobs: sd {observed:.2%} ({df} df); "
            f"the cells' own noise explains {cells:.2%}; a block shift of about {excess:.2%} is left."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
