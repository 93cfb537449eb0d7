"""Check the rows `compare` states over the rest of their job (analyze.row_relative) in synthetic run pairs.

The runs are analyze.calibration's job tables (`simulate_jobs`), drawn from measured variance components.
Cells may differ in their epoch noise (`unlike`): each cell's sd is the design's times a factor drawn
log-uniform in [1/unlike, unlike]. Real cells differ so (docs/statistics.md), and the moderated t must
hold its level then too. Every figure goes through the library's own functions: `row_relative.rows`, the
gate's rule (calibration.gate_flags) and the family level compare gives a row (Bonferroni over rows ×
metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import row_relative
from accel_choice.analyze.calibration import GATE_PERCENT, JOB_T, LEVEL, Design, _cells, gate_flags, simulate_jobs
from accel_choice.analyze.compare_match import TIME_METRICS


@dataclass(frozen=True)
class RowRates:
    """What the rows over the rest of their job get in synthetic run pairs (`row_rates`)."""

    coverage: float  # A/A: a row's 95 % interval holds 1
    row_false_alarm: float  # A/A: a row's time fails the gate at the family level
    table_false_alarm: float  # A/A: some row over the rest of its job fails the gate
    table_false_alarm_both: float  # A/A: some row fails, over the rest of its job or raw (compare's gate)
    power: float  # one cell of B truly `slowdown` slower: its row over the rest of its job fails the gate
    power_raw: float  # the same cell's raw row (Welch t on job medians) fails the gate
    prior_df: float  # the median prior degrees of freedom the rows were lent (row_relative.fit_prior)


def _tables(
    rng: np.random.Generator, design: Design, variants: int, tables: int, sigmas: np.ndarray
) -> list[np.ndarray]:
    """`tables` job tables [job, variant, round]; each variant's own epoch noise `sigmas[t, v]`."""
    quiet = Design(
        jobs=design.jobs,
        sigma_job=design.sigma_job,
        epochs=design.epochs,
        sigma_epoch=0.0,
        sigma_interaction=design.sigma_interaction,
        sigma_drift=design.sigma_drift,
        sigma_round=design.sigma_round,
    )
    found = []
    for t in range(tables):
        table = simulate_jobs(rng, quiet, variants)
        found.append(table * np.exp(rng.normal(0.0, 1.0, table.shape) * sigmas[t][None, :, None]))
    return found


def _groups(
    a: list[np.ndarray], b: list[np.ndarray], variants: int
) -> list[tuple[list[tuple[int, int]], np.ndarray, np.ndarray]]:
    """Each thread count's job group for row_relative.fit: its rows' keys (table, variant) and both sides' cells ×
    jobs medians."""
    return [
        ([(t, v) for v in range(variants)], np.median(ta, axis=2).T, np.median(tb, axis=2).T)
        for t, (ta, tb) in enumerate(zip(a, b))
    ]


def row_rates(
    design: Design,
    draws: int,
    variants: int = 10,
    tables: int = 2,
    slowdown: float = 0.2,
    unlike: float = 1.0,
    percent: float = GATE_PERCENT,
    seed: int = 11,
) -> RowRates:
    """Synthetic run pairs of the CPU design (`tables` thread counts × `variants` cells, `design.jobs` jobs a side),
    each time metric drawn as its own tables. A/A: coverage and false alarms; then one random cell of B
    `slowdown` slower: how often its row fails the gate, over the rest of its job and raw."""
    rng = np.random.default_rng(seed)
    rows = tables * variants
    level = JOB_T.family_level(LEVEL, rows * len(TIME_METRICS))
    counts = dict.fromkeys(("cover", "row", "table", "both", "power", "raw"), 0)
    priors = []
    for _ in range(draws):
        sigmas = design.sigma_epoch * np.exp(
            rng.uniform(-np.log(unlike), np.log(unlike), (len(TIME_METRICS), tables, variants))
        )
        a = [_tables(rng, design, variants, tables, sigmas[m]) for m in range(len(TIME_METRICS))]
        b = [_tables(rng, design, variants, tables, sigmas[m]) for m in range(len(TIME_METRICS))]
        flagged_any, raw_any = False, False
        for m in range(len(TIME_METRICS)):
            fitted = row_relative.fit(_groups(a[m], b[m], variants))
            if fitted.prior is not None:
                priors.append(fitted.prior.df)
            covered = [fitted.ratio(key, LEVEL) for key in fitted.rows]
            counts["cover"] += sum(e.low <= 1.0 <= e.high for e in covered)  # type: ignore[union-attr]
            flags = [gate_flags(fitted.ratio(key, level), percent) for key in fitted.rows]  # type: ignore[arg-type]
            counts["row"] += sum(flags)
            flagged_any |= any(flags)
            raw_any |= any(gate_flags(JOB_T.ratio(x, y, level), percent) for x, y in zip(_cells(a[m]), _cells(b[m])))
        counts["table"] += flagged_any
        counts["both"] += flagged_any or raw_any
        m, t, v = int(rng.integers(len(TIME_METRICS))), int(rng.integers(tables)), int(rng.integers(variants))
        slow = [table.copy() for table in b[m]]
        slow[t][:, v, :] *= 1 + slowdown
        fitted = row_relative.fit(_groups(a[m], slow, variants))
        counts["power"] += gate_flags(fitted.ratio((t, v), level), percent)  # type: ignore[arg-type]
        counts["raw"] += gate_flags(JOB_T.ratio(_cells([a[m][t]])[v], _cells([slow[t]])[v], level), percent)
    cells = draws * len(TIME_METRICS) * rows
    return RowRates(
        coverage=counts["cover"] / cells,
        row_false_alarm=counts["row"] / cells,
        table_false_alarm=counts["table"] / draws,
        table_false_alarm_both=counts["both"] / draws,
        power=counts["power"] / draws,
        power_raw=counts["raw"] / draws,
        prior_df=float(np.median(priors)) if priors else 0.0,
    )
