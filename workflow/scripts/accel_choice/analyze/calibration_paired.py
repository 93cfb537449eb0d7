"""Check the within-run ratios of cells timed in the same jobs (analyze.same_jobs) in synthetic runs.

The runs are analyze.calibration's job tables (`simulate_jobs`), drawn from measured variance components,
each cell with its own epoch noise as in analyze.calibration_rows (`unlike`). Every cell's true time is 1,
so every ratio of two cells is truly 1: an interval covers when it holds 1. Each table's first cell is
compared with every other, as the first screen compares the fastest cell with the rest. Both ways go
through the library: `same_jobs.fit` and `Spreads.ratio` (moderated), `job_intervals.ratio_interval`
(the pair alone).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import same_jobs
from accel_choice.analyze.calibration import LEVEL, Design
from accel_choice.analyze.calibration_rows import _tables
from accel_choice.analyze.job_intervals import ratio_interval

WITHIN = 0.10  # the first screen's target: a ratio's 95 % interval within ±10 % of its point


@dataclass(frozen=True)
class PairedRates:
    """What within-run paired ratios get in synthetic runs: moderated (`same_jobs`) and alone (`paired`)."""

    coverage: float  # the moderated interval holds the true ratio 1
    coverage_alone: float  # the pair's own paired t interval holds it
    half_width: float  # the moderated interval's median half width over its point
    half_width_alone: float
    within: float  # share of moderated intervals within ±WITHIN of their point
    within_alone: float


def paired_rates(
    design: Design, draws: int, variants: int = 10, tables: int = 2, unlike: float = 1.0, seed: int = 12
) -> PairedRates:
    """Simulate runs of the CPU design and count the paired ratios' coverage and width, moderated and alone.

    Each run is `tables` thread counts × `variants` cells, `design.jobs` jobs a thread count."""
    rng = np.random.default_rng(seed)
    held, held_alone, widths, widths_alone = 0, 0, [], []
    for _ in range(draws):
        sigmas = design.sigma_epoch * np.exp(rng.uniform(-np.log(unlike), np.log(unlike), (tables, variants)))
        run = _tables(rng, design, variants, tables, sigmas)  # each [job, variant, round]
        medians = [np.median(table, axis=2).T for table in run]  # each cells × jobs
        spreads = same_jobs.fit([([(t, v) for v in range(variants)], m) for t, m in enumerate(medians)])
        for t, m in enumerate(medians):
            for v in range(1, variants):
                moderated = spreads.ratio((t, 0), (t, v), np.log(m[v]) - np.log(m[0]), LEVEL)
                alone = ratio_interval([[x] for x in m[0]], [[x] for x in m[v]], paired=True, level=LEVEL)
                if moderated is None:
                    raise ValueError(f"{variants} cells × {design.jobs} jobs lend no spread: the design is too small")
                held += moderated.low <= 1.0 <= moderated.high
                held_alone += alone.low <= 1.0 <= alone.high
                widths.append(moderated.half_width_ratio)
                widths_alone.append(alone.half_width_ratio)
    pairs = len(widths)
    return PairedRates(
        coverage=held / pairs,
        coverage_alone=held_alone / pairs,
        half_width=float(np.median(widths)),
        half_width_alone=float(np.median(widths_alone)),
        within=float(np.mean(np.array(widths) <= WITHIN)),
        within_alone=float(np.mean(np.array(widths_alone) <= WITHIN)),
    )
