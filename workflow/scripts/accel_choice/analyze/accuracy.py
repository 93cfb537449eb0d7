"""How accurate the harness is (issue 25, accuracy): each CPU cell's epoch over the plain loop timed in
the same jobs (measure.reference; the ratio with its paired interval, analyze.aggregate.versus_reference)
judged against a tolerance, and, per thread count, whether a job can time its cells to that tolerance at all
(decided per run: on a 2-core VM, 2 threads were the worse in three runs of four). Numbers and codes
only; render.noise says them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from accel_choice.analyze.job_intervals import median_interval
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import TrainingCell

# The harness may add or take at most this share of the user's loop (the target).
TOLERANCE = 0.10

# within: the whole interval inside 1 ± TOLERANCE; outside: wholly beyond it; unsettled: it reaches both.
Judgement = Literal["within", "outside", "unsettled"]


def judge(ratio: Estimate, tolerance: float = TOLERANCE) -> Judgement:
    """Where a cell's pipeline/reference interval lies against 1 ± `tolerance`."""
    if 1 - tolerance <= ratio.low and ratio.high <= 1 + tolerance:
        return "within"
    if ratio.low > 1 + tolerance or ratio.high < 1 - tolerance:
        return "outside"
    return "unsettled"


@dataclass(frozen=True)
class ThreadsAccuracy:
    """The cells timed at one thread count against their plain loops. `job_ratios`: every job's median epoch
    over the reference timed in it, all cells pooled; `every_core`: the count is at least the cores the timing
    jobs could use, so the loop shares them with the system and the harness."""

    threads: int
    judgements: tuple[Judgement, ...]
    job_ratios: tuple[float, ...]
    every_core: bool
    level: float

    @property
    def cells(self) -> int:
        return len(self.judgements)

    @property
    def pooled(self) -> Estimate:
        """pipeline/plain over all these jobs: the geometric mean with its t interval (jobs - 1 degrees of freedom)."""
        return median_interval([(r,) for r in self.job_ratios], self.level)

    @property
    def spread(self) -> float:
        """Return how far one job's two timings of the same work disagree: the standard deviation of the log ratios."""
        return statistics.stdev(math.log(r) for r in self.job_ratios) if len(self.job_ratios) > 1 else 0.0

    @property
    def jobs_outside(self) -> int:
        """Jobs whose pipeline/plain lies beyond 1 ± TOLERANCE."""
        return sum(abs(r - 1) > TOLERANCE for r in self.job_ratios)

    @property
    def measurable(self) -> bool:
        """Say whether a job can time these cells to ±TOLERANCE.

        Whether a job can time these cells to ±TOLERANCE: the same work timed twice in one job (pipeline and
        plain loop, side by side) disagrees by less than the tolerance (its log spread under log(1 + TOLERANCE)).
        Measured on this 2-core VM (2026-12-04, docs/statistics.md): in a quiet run 1 thread 5.3 % (4 of 30 jobs
        beyond ±10 %), 2 threads 15.2 % (14 of 30); in busier ones 10-20 % at either."""
        return self.spread <= math.log(1 + TOLERANCE)


def cpu_checked(cells: Sequence[TrainingCell]) -> list[TrainingCell]:
    """Return the CPU job's cells that have a reference.

    The CPU job's cells that have a reference (host data); a GPU job's resident cell, whose reference is
    timed on another device at other threads, is said in the GPU section (render.gpu_checks)."""
    return [c for c in cells if c.placement == "host" and c.epoch_s_over_reference is not None]


def by_threads(cells: Sequence[TrainingCell], cores: int | None) -> list[ThreadsAccuracy]:
    """Return one ThreadsAccuracy per thread count of the CPU cells that have a reference, fewest threads first."""
    found = [c for c in cpu_checked(cells) if c.reference_s_jobs is not None]
    return [
        ThreadsAccuracy(
            threads=threads,
            judgements=tuple(judge(c.epoch_s_over_reference) for c in found if c.threads == threads),  # type: ignore[arg-type]
            job_ratios=tuple(
                statistics.median(epochs) / reference
                for c in found
                if c.threads == threads
                for epochs, reference in zip(c.epoch_s_jobs, c.reference_s_jobs)  # type: ignore[arg-type]
            ),
            every_core=cores is not None and threads >= cores,
            level=found[0].confidence,
        )
        for threads in sorted({c.threads for c in found})
    ]
