"""Check the rows `compare` states over the rest of their job (analyze.row_relative) in synthetic run pairs.

The runs are analyze.calibration's job tables (`simulate_jobs`), drawn from measured variance components.
Cells may differ in their epoch noise (`unlike`): each cell's sd is the design's times a factor drawn
log-uniform in [1/unlike, unlike]. Real cells differ so (docs/statistics.md), and the moderated t must
hold its level then too. Every figure goes through the library's own functions: `row_relative.fit`, the
gate's rule (calibration.gate_flags) and the family level compare gives a row (Bonferroni over rows ×
metrics).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import row_relative
from accel_choice.analyze.calibration import GATE_PERCENT, JOB_T, LEVEL, _cells, gate_flags
from accel_choice.analyze.synthetic import Design, sides, simulate_jobs, slow_epochs
from accel_choice.analyze.compare_match import TIME_METRICS


@dataclass(frozen=True)
class RowRates:
    """What the rows over the rest of their job get in synthetic run pairs (`row_rates`)."""

    coverage: float  # A/A: a row's 95 % interval holds 1
    row_false_alarm: float  # A/A: a row's time fails the gate at the family level
    table_false_alarm: float  # A/A: some row over the rest of its job fails the gate
    table_false_alarm_both: float  # A/A: some row fails, over the rest of its job or raw (compare's gate)
    others_faster_false_alarm: float  # 4 of a table's 10 cells of B `faster` faster, none slower: some row fails
    power: float  # one cell of B truly `slowdown` slower: its row over the rest of its job fails the gate
    power_raw: float  # the same cell's raw row (Welch t on job medians) fails the gate
    power_cell: float  # one whole cell of B slower, epoch and eval: a row of it fails, either way (compare's gate)
    prior_df: float  # the median prior degrees of freedom the rows were lent (row_relative.fit_prior)


def _tables(
    rng: np.random.Generator,
    design: Design,
    variants: int,
    tables: int,
    sigmas: np.ndarray,
    shared: bool = False,
    block: float = 0.0,
) -> list[np.ndarray]:
    """`tables` job tables [job, variant, round]; each variant's own epoch noise `sigmas[t, v]`.

    `shared`: one job times every table's cells in one order (the CPU design since training-job 14), so the
    tables share each job's speed, drift and rounds; else each table has its own jobs. `block`: with `shared`,
    the log sd of a job's shift of one table's whole block (a thread count running fast or slow in one job).
    With `design.blocks` (measured jobs, resampled), a cell's insides are scaled by sigmas[t, v] / design.sigma_epoch."""
    resampled = design.blocks is not None
    quiet = design if resampled else dataclasses.replace(design, sigma_epoch=0.0, tail_share=0.0)
    # each cell's factor on its block's insides; else each cell's epochs are drawn below
    spread = (sigmas / design.sigma_epoch if design.sigma_epoch > 0 else np.ones_like(sigmas)) if resampled else None
    drawn = None
    if shared:
        whole = simulate_jobs(rng, quiet, variants * tables, spread=None if spread is None else spread.ravel())
        drawn = np.split(whole, tables, axis=1)
    found = []
    for t in range(tables):
        table = (
            drawn[t]
            if drawn is not None
            else simulate_jobs(rng, quiet, variants, spread=None if spread is None else spread[t])
        )
        if drawn is not None and block:
            table = table * np.exp(rng.normal(0.0, block, (table.shape[0], 1, 1)))
        if not resampled:
            sigma = sigmas[t][None, :, None]
            table = table * np.exp(
                rng.normal(0.0, 1.0, table.shape) * sigma + slow_epochs(rng, design, table.shape, sigma)
            )
        found.append(table)
    return found


@dataclass(frozen=True)
class Cells:
    """A synthetic run's cells beyond its design: `tables` thread counts × `variants` cells. Each cell's epoch sd is
    the design's times a factor log-uniform in [1/unlike, unlike]; the last thread count's is `noisier` times the
    first's (the counts between on a geometric scale)."""

    variants: int = 10
    tables: int = 2
    unlike: float = 1.0
    noisier: float = 1.0
    shared: bool = True  # one job times every thread count (`_tables`); False: a job a thread count, as before
    block: float = 0.0  # with `shared`: sd of a job's shift of one thread count's block (`_tables`)

    def sigmas(self, rng: np.random.Generator, sigma: float, metrics: int | None = None) -> np.ndarray:
        """Draw each cell's epoch sd: [table, variant], or [metric, table, variant] for `metrics` time metrics."""
        shape = (self.tables, self.variants) if metrics is None else (metrics, self.tables, self.variants)
        factors = np.geomspace(1.0, self.noisier, self.tables)[:, None]
        return sigma * factors * np.exp(rng.uniform(-np.log(self.unlike), np.log(self.unlike), shape))


def _groups(
    a: list[np.ndarray], b: list[np.ndarray], variants: int
) -> list[tuple[list[tuple[int, int]], np.ndarray, np.ndarray]]:
    """Each thread count's job group for row_relative.fit: its rows' keys (table, variant) and both sides' cells ×
    jobs × rounds times, as compare_match hands them over (a group a thread count, shared jobs or not)."""
    return [
        ([(t, v) for v in range(variants)], ta.transpose(1, 0, 2), tb.transpose(1, 0, 2))
        for t, (ta, tb) in enumerate(zip(a, b))
    ]


def _failing(
    a: list[np.ndarray], b: list[np.ndarray], variants: int, level: float, percent: float
) -> tuple[row_relative.Quotients, dict[tuple[int, int], tuple[bool, bool]]]:
    """The rows' quotients, and per row whether it fails compare's gate over the rest of its job, and raw."""
    fitted = row_relative.fit(_groups(a, b, variants))
    cells = [(_cells([ta]), _cells([tb])) for ta, tb in zip(a, b)]  # each table's cells, built once
    raw = {(t, v): JOB_T.ratio(ca[v], cb[v], level) for t, (ca, cb) in enumerate(cells) for v in range(variants)}
    found = {}
    for key, r in raw.items():
        in_job = fitted.ratio(key, level)
        found[key] = (
            in_job is not None and row_relative.gate_fails_in_job(in_job, r.point, percent),
            gate_flags(r, percent),
        )
    return fitted, found


def _slowed(tables: list[np.ndarray], t: int, v: int, slowdown: float) -> list[np.ndarray]:
    """Return copies of a side's job tables with cell v of table t `slowdown` slower."""
    found = [table.copy() for table in tables]
    found[t][:, v, :] *= 1 + slowdown
    return found


def row_rates(
    design: Design,
    draws: int,
    cells: Cells = Cells(),
    slowdown: float = 0.2,
    faster: float = 0.25,
    percent: float = GATE_PERCENT,
    seed: int = 11,
    family: int | None = None,
) -> RowRates:
    """Simulate run pairs of the CPU design and return each time metric's rates.

    Synthetic run pairs of the CPU design (`cells`: thread counts × cells, `design.jobs` jobs a side), each time
    metric drawn as its own tables. A/A: coverage and false alarms. Then 4 cells of one table of B `faster`
    faster and none slower: how often some row fails. Then one random cell of B `slowdown` slower in one time
    metric: how often its row fails the gate, over the rest of its job and raw. Last, the whole cell slower, in
    every metric (a slower step slows epoch and eval): how often any row of it fails, as compare's gate sees it
    and as benchmarks/plant_slowdowns.py counts a plant on real runs. `family`: the gate's family size instead of
    compare's (every row of every metric), to see what a less strict one would cost and buy."""
    variants, tables = cells.variants, cells.tables
    rng = np.random.default_rng(seed)
    rows = tables * variants
    level = JOB_T.family_level(LEVEL, rows * len(TIME_METRICS) if family is None else family)  # compare's: all rows
    counts = dict.fromkeys(("cover", "row", "table", "both", "faster", "power", "raw", "cell"), 0)
    priors = []
    for _ in range(draws):
        sigmas = cells.sigmas(rng, design.sigma_epoch, len(TIME_METRICS))

        def run(jobs: Design, sigmas: np.ndarray = sigmas) -> list[list[np.ndarray]]:  # each metric's tables
            return [
                _tables(rng, jobs, variants, tables, sigmas[m], cells.shared, cells.block)
                for m in range(len(TIME_METRICS))
            ]

        a, b = sides(run, design)  # side A's tables, then side B's; no measured job in both (synthetic.sides)
        in_job_any, either_any = False, False
        for m in range(len(TIME_METRICS)):
            fitted, found = _failing(a[m], b[m], variants, level, percent)
            priors += [prior.df for prior in {id(p): p for p in fitted.priors.values() if p is not None}.values()]
            covered = [fitted.ratio(key, LEVEL) for key in fitted.rows]
            counts["cover"] += sum(e.low <= 1.0 <= e.high for e in covered)  # type: ignore[union-attr]
            counts["row"] += sum(fails for fails, _ in found.values())
            in_job_any |= any(fails for fails, _ in found.values())
            either_any |= any(fails or raw for fails, raw in found.values())
        counts["table"] += in_job_any
        counts["both"] += either_any
        m, t = int(rng.integers(len(TIME_METRICS))), int(rng.integers(tables))
        quick = [table.copy() for table in b[m]]
        quick[t][:, rng.choice(variants, size=4, replace=False), :] *= 1 - faster
        counts["faster"] += any(f or r for f, r in _failing(a[m], quick, variants, level, percent)[1].values())
        v = int(rng.integers(variants))
        fails, raw = _failing(a[m], _slowed(b[m], t, v, slowdown), variants, level, percent)[1][(t, v)]
        counts["power"] += fails
        counts["raw"] += raw
        # The whole cell slower: its row in metric m, just decided, or its row in any other metric.
        counts["cell"] += (
            fails
            or raw
            or any(
                any(_failing(a[n], _slowed(b[n], t, v, slowdown), variants, level, percent)[1][(t, v)])
                for n in range(len(TIME_METRICS))
                if n != m
            )
        )
    drawn = draws * len(TIME_METRICS) * rows
    return RowRates(
        coverage=counts["cover"] / drawn,
        row_false_alarm=counts["row"] / drawn,
        table_false_alarm=counts["table"] / draws,
        table_false_alarm_both=counts["both"] / draws,
        others_faster_false_alarm=counts["faster"] / draws,
        power=counts["power"] / draws,
        power_raw=counts["raw"] / draws,
        power_cell=counts["cell"] / draws,
        prior_df=float(np.median(priors)) if priors else 0.0,
    )
