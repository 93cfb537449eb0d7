"""Per-job resources: Snakemake's `benchmark:` file beside the job's own body timing.

The `benchmark:` directive times the whole job process (interpreter start, imports, the
script) and samples its memory with psutil, first every 0.5 s and later every 30 s, so a
job shorter than the first sample can show NA or an RSS far below its peak. The job's
log ends with the body's own perf_counter wall time and the kernel's peak RSS
(getrusage), see `runtime.BODY_LINE`. The table puts both side by side.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
from collections.abc import Sequence
from pathlib import Path

from accel_choice.io import runtime
from accel_choice.records.resources import JobResources, RuleResources

# Snakemake's max_rss and getrusage's peak are both in MiB here, whatever the "mb" in the names.
BENCHMARK_FIELDS = {
    "s": "process_wall_s",
    "max_rss": "max_rss_mb",
    "cpu_time": "process_cpu_s",
    "mean_load": "mean_load",
}


def read_benchmark(path: str | os.PathLike[str]) -> dict[str, float | None]:
    """Read the first row of a Snakemake benchmark TSV; NA (no sample taken) becomes None."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows or "s" not in rows[0]:
        raise ValueError(f"{path}: not a Snakemake benchmark file (no 's' column)")
    return {name: _number(rows[0].get(column)) for column, name in BENCHMARK_FIELDS.items()}


def _number(text: str | None) -> float | None:
    """A number of the benchmark file; None for NA, an empty cell, or anything a record cannot hold (nan, inf)."""
    try:
        value = float(text) if text not in (None, "", "NA", "-") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def job_row(
    rule: str, job: str, benchmark_path: str | os.PathLike[str], log_path: str | os.PathLike[str]
) -> JobResources:
    bench = read_benchmark(benchmark_path)
    body = runtime.read_body_line(Path(log_path).read_text()) or {
        "body_wall_s": None,
        "body_cpu_s": None,
        "peak_rss_mb": None,
    }
    wall, body_wall = bench["process_wall_s"], body["body_wall_s"]
    return JobResources(
        rule=rule,
        job=job,
        **bench,
        **body,
        outside_body_s=wall - body_wall if wall is not None and body_wall is not None else None,
        rss_sampled=bench["max_rss_mb"] is not None and bench["max_rss_mb"] > 0,
    )


def rule_summary(rows: Sequence[JobResources]) -> list[RuleResources]:
    """Summarise each rule in one line: job count, summed and median process wall time, and the memory seen."""
    summary = []
    for rule in dict.fromkeys(r.rule for r in rows):
        jobs = [r for r in rows if r.rule == rule]
        walls = [r.process_wall_s for r in jobs if r.process_wall_s is not None]
        bodies = [r.body_wall_s for r in jobs if r.body_wall_s is not None]
        sampled = [r.max_rss_mb for r in jobs if r.rss_sampled and r.max_rss_mb is not None]
        peaks = [r.peak_rss_mb for r in jobs if r.peak_rss_mb is not None]
        outside = [r.outside_body_s for r in jobs if r.outside_body_s is not None]
        summary.append(
            RuleResources(
                rule=rule,
                jobs=len(jobs),
                process_wall_total_s=sum(walls),
                process_wall_median_s=statistics.median(walls) if walls else None,
                body_wall_median_s=statistics.median(bodies) if bodies else None,
                outside_body_median_s=statistics.median(outside) if outside else None,
                max_rss_mb_sampled=max(sampled) if sampled else None,
                jobs_without_rss_sample=len(jobs) - len(sampled),
                peak_rss_mb_kernel=max(peaks) if peaks else None,
            )
        )
    return summary
