"""Can this run's timings be trusted at all? Its timing jobs, the ones flagged (the drift sentinel saw another
machine speed or hypervisor steal; other processes used the CPU; the load average rose) and why, and whether
more than the configured share were: then the run is contaminated, and every outcome that rests on its timings
is undecided (analyze.decision) and REPORT.md says so first, with the command that re-measures only them.

Flagged jobs stay in the tables and intervals, marked: with the default three jobs, leaving one out leaves two
(a t interval with one degree of freedom: the quantile 12.7 for 95 %), and leaving out the slow ones biases
every time towards the fast; a run where many were flagged is named as such instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze.aggregate import job_name
from accel_choice.io import paths
from accel_choice.records.decision import FlaggedJob, RunTrust
from accel_choice.records.training import TrainingTable


def record_path(table: str, job: str) -> str:
    """Return the path of the timing record of job `job` of the `table` table.

    The timing record of job `job` ("rep2", "bs64.rep2": aggregate.job_name) of the `table` ("cpu" or
    "gpu") table, under results/."""
    return f"{paths.RESULTS}/{paths.training_record(table, job)}"


def run_trust(tables: Sequence[tuple[str, TrainingTable]], limit: float) -> RunTrust:
    """Judge whether the run's timing jobs can be trusted.

    The run's timing jobs (one per sentinel reading of each table), the flagged ones with every reason
    given for them (the sentinel's, and each cell's contaminated repeats), and whether more than `limit`
    of the jobs were flagged."""
    jobs = 0
    flagged: dict[tuple[str, str], dict[str, None]] = {}
    for name, table in tables:
        jobs += len(table.sentinel.jobs)
        for sentinel_job in table.sentinel.jobs:
            if sentinel_job.reasons:
                flagged.setdefault((name, sentinel_job.job), {}).update(dict.fromkeys(sentinel_job.reasons))
        for cell in (*table.table, *table.beside):  # a GPU job's CPU cells too: the paired speedup rests on them
            for repeat in cell.contaminated:
                label = job_name(cell, repeat.repeat, name)
                flagged.setdefault((name, label), {}).update(dict.fromkeys(repeat.reasons))
    found = tuple(
        FlaggedJob(table=name, job=label, record=record_path(name, label), reasons=tuple(reasons))
        for (name, label), reasons in sorted(flagged.items())
    )
    return RunTrust(jobs=jobs, flagged=found, limit=limit, contaminated=len(found) > limit * jobs)


# The rule whose jobs write each training table's timing records (workflow/rules/timing.smk, gpu.smk).
TIMING_RULES = {"cpu": "time_cpu_training", "gpu": "time_gpu_training"}


def remeasure_command(trust: RunTrust, cores: int = 4) -> str:
    """Return the command that measures only the flagged jobs again.

    The command that measures only the flagged jobs again, then brings every table and the report up to date.
    Where every timing job was flagged, their rules are named instead of their records (`--forcerun`: every job
    of the rule, then everything that reads them), a line a reader can still read at 30 jobs or more."""
    if len(trust.flagged) == trust.jobs:
        rules = " ".join(TIMING_RULES[table] for table in sorted({job.table for job in trust.flagged}))
        return f"snakemake --cores {cores} --forcerun {rules}"
    targets = " ".join(job.record for job in trust.flagged)
    return f"snakemake --cores {cores} --force {targets} && snakemake --cores {cores}"
