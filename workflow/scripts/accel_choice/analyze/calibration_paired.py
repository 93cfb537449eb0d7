"""Check the within-run ratios of cells timed in the same jobs (analyze.same_jobs) in synthetic runs.

The runs are analyze.calibration's job tables (`simulate_jobs`), drawn from measured variance components,
each cell with its own epoch noise as in analyze.calibration_rows (`unlike`). Every cell's true time is 1,
so every ratio of two cells is truly 1: an interval covers when it holds 1. Each table's first cell is
compared with every other, as the first screen compares the fastest cell with the rest; the first against
the last is the step-time growth's pair, counted apart. The thread counts may spread unlike (`noisier`) and
the jobs may tilt over the cells (`gradient`), two ways real runs leave the harness's simple model. Both ways go
through the library: `same_jobs.fit`, `paired_logs` and `Spreads.ratio` (moderated, round by round, as the
report takes it), `same_jobs.alone` (the pair's own paired t, round by round too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import same_jobs
from accel_choice.analyze.calibration import LEVEL, Design
from accel_choice.analyze.calibration_rows import Cells, _tables

WITHIN = 0.10  # the first screen's target: a ratio's 95 % interval within ±10 % of its point


@dataclass(frozen=True)
class PairedRates:
    """What within-run paired ratios get in synthetic runs: borrowed spread (`same_jobs`) and the pair alone."""

    coverage: tuple[float, ...]  # per table (thread count): the borrowed interval holds the true ratio 1
    coverage_alone: tuple[float, ...]  # per table: the pair's own paired t interval holds it
    extreme: float  # the first cell against the last (smallest B against the largest: the step-time growth), borrowed
    extreme_alone: float
    half_width: float  # the borrowed interval's median half width over its point, every table
    half_width_alone: float
    within: float  # share of borrowed intervals within ±WITHIN of their point
    within_alone: float


def paired_rates(
    design: Design, draws: int, cells: Cells = Cells(), gradient: float = 0.0, seed: int = 12
) -> PairedRates:
    """Simulate runs of the CPU design and count the paired ratios' coverage and width, borrowed and alone.

    Each run is `cells` (thread counts × cells, unlike and a noisier thread count), `design.jobs` jobs, each
    timing every thread count (`Cells.shared`; else `design.jobs` jobs a thread count). `gradient`: each job's own trend over the cells, in log time per step of two cells (an octave of batch
    size, two loaders each), drawn with this sd: the cell × job moves that go together, which the cells' own
    spreads do not show."""
    variants, tables = cells.variants, cells.tables
    rng = np.random.default_rng(seed)
    place = (np.arange(variants) // 2 - (variants // 2 - 1) / 2)[None, :, None]  # octaves from the middle
    held = np.zeros(tables)
    held_alone = np.zeros(tables)
    extreme, extreme_alone, widths, widths_alone = 0, 0, [], []
    for _ in range(draws):
        sigmas = cells.sigmas(rng, design.sigma_epoch)
        run = _tables(rng, design, variants, tables, sigmas, cells.shared, cells.block)  # each [job, variant, round]
        # Each job's own trend: one for all its thread counts where one job times them all.
        tilts = [rng.normal(0.0, gradient, (design.jobs, 1, 1)) for _ in range(1 if cells.shared else tables)]
        run = [table * np.exp(tilts[t % len(tilts)] * place) for t, table in enumerate(run)]
        times = [table.transpose(1, 0, 2) for table in run]  # each cells × jobs × rounds
        spreads = same_jobs.fit([([(t, v) for v in range(variants)], m) for t, m in enumerate(times)])
        for t, m in enumerate(times):
            for v in range(1, variants):
                moderated = spreads.ratio((t, 0), (t, v), same_jobs.paired_logs(m[0], m[v]), LEVEL)
                alone = same_jobs.alone(m[0], m[v], LEVEL)
                if moderated is None:
                    raise ValueError(f"{variants} cells × {design.jobs} jobs lend no spread: the design is too small")
                covered, covered_alone = moderated.low <= 1.0 <= moderated.high, alone.low <= 1.0 <= alone.high
                held[t] += covered
                held_alone[t] += covered_alone
                if v == variants - 1:
                    extreme += covered
                    extreme_alone += covered_alone
                widths.append(moderated.half_width_ratio)
                widths_alone.append(alone.half_width_ratio)
    pairs = draws * (variants - 1)
    return PairedRates(
        coverage=tuple(held / pairs),
        coverage_alone=tuple(held_alone / pairs),
        extreme=extreme / (draws * tables),
        extreme_alone=extreme_alone / (draws * tables),
        half_width=float(np.median(widths)),
        half_width_alone=float(np.median(widths_alone)),
        within=float(np.mean(np.array(widths) <= WITHIN)),
        within_alone=float(np.mean(np.array(widths_alone) <= WITHIN)),
    )
