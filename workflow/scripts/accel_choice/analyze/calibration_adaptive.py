"""Check the stopping rule of timing.budget_s (analyze.timing_plan) in synthetic runs: jobs added until the
first screen's intervals are narrow enough, or the budget is spent.

Naive intervals after optional stopping are tilted: a run stops early when its jobs happened to agree, and
its intervals are then too narrow. This counts by how much. Each run is analyze.calibration's job tables
(`simulate_jobs`), drawn from measured variance components as analyze.calibration_paired draws them, with
`most` jobs; the rule sees the first `start`, then one more a round. Every cell's true time is 1.
The first cell of the first thread count stands for the fastest (calibration_paired's choice: no
selection among equal cells), or with `select` the cell of the lowest point, as the report chooses it.
Against it, every other cell is a paired ratio with borrowed spread (same_jobs): one job times every thread
count (`Cells.shared`). With `shared` off, each thread count has its own jobs, and a cell of another count is a
Welch ratio. The first cell of its thread count against the last is the step-time growth: what
decision_intervals.cpu_statements computes, round by round. The ratios not measurably above 1
(job_intervals.outcome, beyond `floor`) are the stated ties; their widths and the growth's drive the rule
(timing_plan.decide), with the budget set to `most` jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from accel_choice.analyze import same_jobs, timing_plan
from accel_choice.analyze.calibration import LEVEL, Design
from accel_choice.analyze.calibration_rows import Cells, _tables
from accel_choice.analyze.job_intervals import outcome, ratio_interval
from accel_choice.records.estimate import Estimate
from accel_choice.records.timing_plan import width, widest_of


@dataclass(frozen=True)
class AdaptiveRates:
    """What the stopping rule gets in synthetic runs, beside the fixed designs of `start` and `most` jobs."""

    coverage: float  # a ratio to the fastest (or the growth) holds 1, at the stop: every such ratio counted
    coverage_start: float  # the same at `start` jobs, nothing added
    coverage_most: float  # at `most` jobs, nothing added
    threads_coverage: float  # the fastest against its twin at the other thread count, at the stop
    threads_coverage_most: float
    growth_coverage: float  # the step-time growth (paired, borrowed), at the stop
    mean_jobs: float  # jobs at the stop
    met: float  # share of runs that stopped with the target met
    within: float  # share of stated intervals within the target at the stop


Cell = tuple[int, int]  # (table, variant)


@dataclass(frozen=True)
class Statements:
    """What the first screen states from a synthetic run: every cell's ratio to the fastest, the growth, the thread tie."""

    fastest: Cell
    others: list[Cell]  # every other cell, in the order of `ratios`
    ratios: list[Estimate]  # each other cell over the fastest
    growth: Estimate  # the last cell of the fastest's table over its first
    growth_cells: tuple[Cell, Cell]
    twin_cell: Cell  # the fastest's twin in the next table

    @property
    def twin(self) -> Estimate:
        """The thread tie: the twin over the fastest, one of the ratios."""
        return self.ratios[self.others.index(self.twin_cell)]


def statements(run: list[np.ndarray], jobs: int, select: bool = False, shared: bool = False) -> Statements:
    """Return every cell's ratio to the fastest, the step-time growth and the thread tie, from the first `jobs` jobs.

    The fastest is cell 0 of table 0, or with `select` the cell of the lowest point (the geometric mean of its
    job medians), as the report chooses it. The growth is the first cell of the fastest's table against its last;
    the thread tie, the fastest against its twin in the next table. Both are also among the ratios.
    `shared`: the tables' cells were timed by the same jobs (calibration_rows.Cells.shared), so every ratio pairs."""
    times = [table[:jobs].transpose(1, 0, 2) for table in run]  # each cells × jobs × rounds
    variants = times[0].shape[0]
    spreads = same_jobs.fit([([(t, v) for v in range(variants)], m) for t, m in enumerate(times)])
    cells = [(t, v) for t in range(len(run)) for v in range(variants)]

    def ratio(a: Cell, b: Cell) -> Estimate:
        ta, tb = times[a[0]][a[1]], times[b[0]][b[1]]
        if a[0] != b[0] and not shared:
            return ratio_interval(ta, tb, level=LEVEL)  # Welch: separate processes
        moderated = spreads.ratio(a, b, same_jobs.paired_logs(ta, tb), LEVEL)
        return same_jobs.alone(ta, tb, LEVEL) if moderated is None else moderated  # as decision_intervals.cell_ratio

    point = {c: float(np.mean(np.log(np.median(times[c[0]][c[1]], axis=1)))) for c in cells}
    fastest = min(cells, key=point.__getitem__) if select else (0, 0)
    others = [cell for cell in cells if cell != fastest]
    ratios = [ratio(fastest, cell) for cell in others]
    growth_cells = ((fastest[0], 0), (fastest[0], variants - 1))
    twin_cell = ((fastest[0] + 1) % len(run), fastest[1])
    return Statements(fastest, others, ratios, ratio(*growth_cells), growth_cells, twin_cell)


def _holds(estimate: Estimate, truth: float = 1.0) -> bool:
    return estimate.low <= truth <= estimate.high


def _covered(said: Statements, truths: np.ndarray) -> tuple[int, bool, bool]:
    """How many ratios hold their true value, and whether the growth and the thread tie do."""

    def true(a: Cell, b: Cell) -> float:  # b over a, as the ratios
        return float(truths[b] / truths[a])

    held = sum(_holds(r, true(said.fastest, c)) for r, c in zip(said.ratios, said.others))
    return held, _holds(said.growth, true(*said.growth_cells)), _holds(said.twin, true(said.fastest, said.twin_cell))


def stated(ratios: list[Estimate], growth: Estimate, floor: float = 0.0) -> list[Estimate]:
    """Return what the first screen states: the ties (not measurably slower than the fastest beyond `floor`,
    as decision_intervals.fastest_ties) and the growth, always."""
    return [r for r in ratios if r != growth and outcome(r, floor) != "a_faster"] + [growth]


def adaptive_rates(
    design: Design,
    draws: int,
    cells: Cells = Cells(),
    start: int = 3,
    most: int = 8,
    target: float = 0.10,
    floor: float = 0.0,
    select: bool = False,
    truths: np.ndarray | None = None,
    seed: int = 13,
) -> AdaptiveRates:
    """Simulate runs whose jobs are added by the stopping rule; count coverage and cost beside fixed designs.

    `truths` [table, variant]: each cell's true time (1 where None); a ratio covers when it holds their ratio."""
    if not 2 <= start <= most:
        raise ValueError(f"start {start} and most {most}: need 2 <= start <= most")
    rng = np.random.default_rng(seed)
    tables, variants = cells.tables, cells.variants
    truths = np.ones((tables, variants)) if truths is None else np.asarray(truths, dtype=float)
    per_ratio = ("coverage", "coverage_start", "coverage_most")  # over every ratio; the rest over the runs
    held = dict.fromkeys((*per_ratio, "threads_coverage", "threads_coverage_most", "growth_coverage"), 0)
    jobs_used, met, within, counted = 0, 0, 0, 0
    for _ in range(draws):
        sigmas = cells.sigmas(rng, design.sigma_epoch)
        run = _tables(rng, replace(design, jobs=most), variants, tables, sigmas, cells.shared, cells.block)
        run = [table * truths[t][None, :, None] for t, table in enumerate(run)]
        for jobs in range(start, most + 1):
            said = statements(run, jobs, select, cells.shared)
            if jobs == start:
                held["coverage_start"] += _covered(said, truths)[0]
            widest = widest_of(stated(said.ratios, said.growth, floor))
            if timing_plan.decide(widest, jobs, 1, most, target) != "add":  # seconds counted in jobs
                break
        ratios_held, growth_held, twin_held = _covered(said, truths)
        held["coverage"] += ratios_held
        held["threads_coverage"] += twin_held
        held["growth_coverage"] += growth_held
        jobs_used += jobs
        met += widest <= target
        widths = [width(r) for r in stated(said.ratios, said.growth, floor)]
        within += sum(w <= target for w in widths)
        counted += len(widths)
        ratios_held, _, twin_held = _covered(statements(run, most, select, cells.shared), truths)
        held["coverage_most"] += ratios_held
        held["threads_coverage_most"] += twin_held
    ratios_drawn = draws * (tables * variants - 1)  # every cell's ratio to the fastest
    shares = {name: count / (ratios_drawn if name in per_ratio else draws) for name, count in held.items()}
    return AdaptiveRates(**shares, mean_jobs=jobs_used / draws, met=met / draws, within=within / counted)
