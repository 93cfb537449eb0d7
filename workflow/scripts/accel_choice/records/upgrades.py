"""Older versions of record files, brought up to date (records.from_json applies a class's `UPGRADES`).

An archived results folder stays readable by `compare`, the benchmarks and the report tools after a record's
version moves, where the move is one these functions can make and check. Each returns the next version's JSON,
or raises ValueError naming the field where the file does not add up.
"""

from __future__ import annotations

import math
import statistics
from typing import Any


def without_derived(job: dict[str, Any]) -> dict[str, Any]:
    """Return a job file of the version before raw times were stored once (training-job 12, planner-grid-job 7) as
    the next: each record's median epoch and evaluation and its throughput dropped, once checked against its raw
    times (the checks that version's records held)."""
    upgraded = []
    for number, r in enumerate(job.get("records", [])):
        r = dict(r)
        for name, each in (("epoch_s", "epoch_s_each"), ("eval_s", "eval_s_each")):
            stored, times = r.pop(name, None), r.get(each)
            if (
                not times
                or not isinstance(stored, float)
                or not math.isclose(stored, statistics.median(times), rel_tol=1e-12)
            ):
                raise ValueError(f"records[{number}].{name} {stored!r} is not the median of {each} {times!r}")
        rate, samples = r.pop("samples_per_s", None), r.get("samples")
        if not isinstance(rate, float) or not math.isclose(
            rate, samples / statistics.median(r["epoch_s_each"]), rel_tol=1e-9
        ):
            raise ValueError(f"records[{number}].samples_per_s {rate!r} is not samples / epoch_s")
        checks = dict(r.get("invariants", {}))
        if checks.pop("samples_per_s_eq_samples_over_epoch_s", None) is not True:
            raise ValueError(f"records[{number}].invariants: samples_per_s_eq_samples_over_epoch_s does not hold")
        upgraded.append({**r, "invariants": checks})
    return {**job, "records": upgraded}
