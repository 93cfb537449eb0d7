"""Older versions of record files, brought up to date (records.from_json applies a class's `UPGRADES`).

An archived results folder stays readable by `compare`, the benchmarks and the report tools after a record's
version moves, where the move is one these functions can make and check. Each returns the next version's JSON,
or raises ValueError naming the field where the file does not add up.
"""

from __future__ import annotations

import math
import statistics
from typing import Any


def one_thread_count(job: dict[str, Any]) -> dict[str, Any]:
    """Return a CPU job file of the version whose jobs held one thread count each (training-job 13) as the next.

    Version 14 lets one job hold every thread count (docs/measurement.md): a job of one count is one of those,
    its fields unchanged. Such a run's jobs of one repeat now share a name (rep<r>), so aggregating them again
    stops with an error (analyze.aggregate.training_table); the tables they made keep their names (t<T>.rep<r>)."""
    return job


def without_beside(document: dict[str, Any]) -> dict[str, Any]:
    """Return a file of the version before GPU jobs timed the CPU beside the GPU (training-job 14,
    training-table 11, decision 9) as the next: the next adds `beside`, the CPU's records or cells of GPU
    jobs (a decision: `cpu_beside_per_epoch_s`, its paired speedup's CPU side), and these timed none."""
    return document


def without_thread_counts(plan: dict[str, Any]) -> dict[str, Any]:
    """Return a timing plan of the version whose rounds added one job a thread count (timing-plan 1) as the next.

    Its `jobs` counted repeats, and a round cost all thread counts' jobs of one repeat: what version 2 counts
    with one job a repeat. So only `thread_counts` goes."""
    if not isinstance(plan.get("thread_counts"), int):
        raise ValueError("thread_counts: a version 1 timing plan names how many thread counts it added jobs for")
    return {key: value for key, value in plan.items() if key != "thread_counts"}


def without_derived(job: dict[str, Any]) -> dict[str, Any]:
    """Return a job file of the version before raw times were stored once (training-job 12, planner-grid-job 7) as
    the next: each record's median epoch and evaluation and its throughput dropped, once checked against its raw
    times (the checks that version's records held)."""
    upgraded = []
    for number, r in enumerate(job.get("records", [])):
        try:
            medians = {name: statistics.median(r[f"{name}_each"]) for name in ("epoch_s", "eval_s")}
            rate = r["samples"] / medians["epoch_s"]
        except (KeyError, TypeError, ZeroDivisionError, statistics.StatisticsError):
            raise ValueError(f"records[{number}]: its raw times and samples cannot be read") from None
        for name, median in medians.items():
            stored = r.get(name)
            if not isinstance(stored, float) or not math.isclose(stored, median, rel_tol=1e-12):
                raise ValueError(
                    f"records[{number}].{name} {stored!r} is not the median of {name}_each {r[name + '_each']!r}"
                )
        if not isinstance(r.get("samples_per_s"), float) or not math.isclose(r["samples_per_s"], rate, rel_tol=1e-9):
            raise ValueError(f"records[{number}].samples_per_s {r.get('samples_per_s')!r} is not samples / epoch_s")
        checks = dict(r.get("invariants", {}))
        if checks.pop("samples_per_s_eq_samples_over_epoch_s", None) is not True:
            raise ValueError(f"records[{number}].invariants: samples_per_s_eq_samples_over_epoch_s does not hold")
        derived = ("epoch_s", "eval_s", "samples_per_s")
        upgraded.append({**{key: value for key, value in r.items() if key not in derived}, "invariants": checks})
    return {**job, "records": upgraded}


def without_rehearsal(document: dict[str, Any]) -> dict[str, Any]:
    """Return a file of the version before each timed epoch was rehearsed (training-job 15, planner-grid-job 8,
    training-table 12) as the next: every record and cell gets `rehearsal_steps` 0.

    Its epochs started cold after the round's other variants (measure.rehearsal): none was rehearsed."""
    upgraded = dict(document)
    for key in ("records", "beside", "table"):
        if key in document:
            if not isinstance(document[key], list) or not all(isinstance(item, dict) for item in document[key]):
                raise ValueError(f"{key}: a list of records or cells")
            upgraded[key] = [{**item, "rehearsal_steps": item.get("rehearsal_steps", 0)} for item in document[key]]
    return upgraded
