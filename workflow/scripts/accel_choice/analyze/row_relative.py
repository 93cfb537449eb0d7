"""Compare one row of two runs against the rest of its job: the job effect cancels, the spread is shared.

A row of `compare` pairs two runs' cells. Its raw ratio carries each job's own speed (the job effect),
which no two runs share. Every cell of one CPU job shares that speed, and so do the cells of one GPU job.
So in each round of a job a cell's epoch is divided by the median of the *other* cells' epochs of that round
(the cells measured on both sides, each centred on its own level first), and the job's quotient is the median
over its rounds. The job effect, its drift and its rounds cancel in that quotient, and so does a shift of the
whole run. A cell slowed by δ moves its
own quotient by δ. The others' median is the reference, not their mean: cells that changed in B, a
minority of the job, leave the other cells' quotients where they were.

The rows of one time metric and job group share one spread model: empirical Bayes (Smyth 2004, limma's
`squeezeVar`). Each row's pooled variance of log quotients, on its n_a + n_b - 2 degrees of freedom, is
shrunk towards a prior fitted to all rows. The prior's degrees of freedom say how alike the rows' spreads
are. Alike rows lend each other many degrees of freedom, at most all the rows have; unlike rows lend few.
The moderated t interval uses both. `benchmarks/calibration.py --in-job` shows its coverage, false alarm
and power (docs/statistics.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from accel_choice.analyze.job_intervals import _t_estimate, _t_quantile, gate_fails, outcome
from accel_choice.records.estimate import Estimate

METHOD = "moderated t on log job medians over the rest of the job"
MIN_CELLS = 3  # a job of two cells compares each with one other: too little to call "the rest"
DF_CAP = 1e6  # an infinite prior (rows exactly alike) is read as this many degrees of freedom
# A variance of log quotients below this is rounding, not spread (real rows spread by 1e-5 and more).
TINY = 1e-14
# Another cell of the row's job got measurably faster in B: the rest of the job is no fixed reference there.
REFERENCE_MOVED = "another cell of its job got faster in B: the rest of the job moved, nothing is decided on it"


def leave_one_out(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return each side's log quotients, cells × jobs: a cell's time over the median of the other cells' in its job.

    `a` and `b` are one job group's times on sides A and B, the same cells in the same order (`centred_quotients`
    takes them both, so each cell is centred on its own mean log over both sides)."""
    qa, qb = centred_quotients(a, b)
    return qa, qb


def centred_quotients(*sides: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return each side's log quotients, cells × jobs: a cell's time over the median of the other cells' in its job.

    Each side is one job group's cells × jobs medians, or cells × jobs × rounds (every timed epoch, the rounds of a
    job in the order run), the same cells in the same order. Each cell is first centred on its own mean log over
    every side, so cells of any size compare: the others' median then reads the job's speed, not which cell is the
    middle-sized one. With rounds, the quotient is taken in each round, against the other cells' epochs of that
    round, and its median over the rounds is the job's: a round's shift, which every cell of the round shares,
    cancels there too. Needs MIN_CELLS cells."""
    return tuple(job_quotients(z) for z in centred_logs(*sides))


def centred_logs(*sides: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return each side's log times, each cell centred on its own mean log over every side (`centred_quotients`)."""
    for side in sides:
        if side.ndim not in (2, 3) or side.shape[0] < MIN_CELLS:
            raise ValueError(f"a job group needs at least {MIN_CELLS} cells × jobs (× rounds), got shape {side.shape}")
        if not (np.isfinite(side).all() and (side > 0).all()):
            raise ValueError("job times must be positive finite times")
    first = sides[0]
    if any(side.shape[0] != first.shape[0] or side.ndim != first.ndim for side in sides):
        raise ValueError(
            f"the sides hold {', '.join(str(side.shape) for side in sides)} times: the same cells, alike, are needed"
        )
    logs = [np.log(side) for side in sides]
    cells = first.shape[0]
    anchor = np.concatenate([z.reshape(cells, -1) for z in logs], axis=1).mean(axis=1)
    anchor = anchor.reshape((cells,) + (1,) * (first.ndim - 1))
    return tuple(z - anchor for z in logs)


def job_quotients(z: np.ndarray) -> np.ndarray:
    """Return each cell's log quotient over the other cells of its job, cells × jobs, from centred logs.

    `z`: cells × jobs, or cells × jobs × rounds; with rounds, the median over each job's rounds of its quotients."""
    q = z - others_median(z)
    return np.median(q, axis=2) if z.ndim == 3 else q


def others_median(z: np.ndarray) -> np.ndarray:
    """For each cell and job (and round), the median of the other cells' values there."""
    return np.array([np.median(np.delete(z, c, axis=0), axis=0) for c in range(z.shape[0])])


@dataclass(frozen=True)
class Prior:
    """The rows' shared spread: s0² (log scale) on d0 degrees of freedom (d0 = DF_CAP: the rows alike).
    `pooled_df`: all the rows' degrees of freedom together, the most a row's moderated t may rest on."""

    variance: float
    df: float
    rows: int
    pooled_df: float = math.inf


def _trigamma_inverse(x: float) -> float:
    """The y with trigamma(y) = x (Newton's method, Smyth 2004's appendix)."""
    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(special.polygamma(1, y))
        step = tri * (1 - tri / x) / float(special.polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def fit_prior(variances: Sequence[float], dfs: Sequence[float]) -> Prior | None:
    """Fit the rows' prior by the method of moments on log variances.

    Fit the rows' prior by the method of moments on log variances (Smyth 2004, eq. 6-7). None with fewer than
    three rows that varied: too few to say how alike they are."""
    pairs = [(v, d) for v, d in zip(variances, dfs) if v > TINY and d > 0]
    if len(pairs) < 3:
        return None
    s2 = np.array([v for v, _ in pairs])
    d = np.array([d for _, d in pairs])
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    spread = float(np.var(e, ddof=1) - np.mean(special.polygamma(1, d / 2)))
    pooled = float(d.sum())
    if spread <= 0:
        return Prior(variance=float(math.exp(e.mean())), df=DF_CAP, rows=len(pairs), pooled_df=pooled)
    d0 = min(2 * _trigamma_inverse(spread), DF_CAP)
    variance = math.exp(float(e.mean()) + float(special.digamma(d0 / 2)) - math.log(d0 / 2))
    return Prior(variance=variance, df=d0, rows=len(pairs), pooled_df=pooled)


def row_spread(la: np.ndarray, lb: np.ndarray) -> tuple[float, int]:
    """Return the row's pooled variance of log quotients and its degrees of freedom (n_a + n_b - 2)."""
    df = len(la) + len(lb) - 2
    if df < 1:
        return 0.0, 0
    return float(
        ((len(la) - 1) * np.var(la, ddof=1) if len(la) > 1 else 0.0)
        + ((len(lb) - 1) * np.var(lb, ddof=1) if len(lb) > 1 else 0.0)
    ) / df, df


def moderated(variance: float, df: int, prior: Prior | None) -> tuple[float, float]:
    """Shrink the row's variance towards the prior; its degrees of freedom: df + d0, at most all rows' (limma)."""
    if variance < TINY:
        variance = 0.0
    if prior is None:
        return variance, float(df)
    return (prior.df * prior.variance + df * variance) / (prior.df + df), min(df + prior.df, prior.pooled_df)


def _se(la: np.ndarray, lb: np.ndarray, prior: Prior | None) -> tuple[float, float]:
    """Return the standard error of one row's difference of mean log quotients, moderated, and its df."""
    variance, df = moderated(*row_spread(la, lb), prior)
    return (math.sqrt(variance * (1 / len(la) + 1 / len(lb))) if variance > 0 else 0.0), df


def ratio(la: np.ndarray, lb: np.ndarray, prior: Prior | None, level: float) -> Estimate:
    """Return B/A of one row's quotients over the rest of its job, with its moderated t interval at `level`."""
    se, df = _se(la, lb, prior)
    return _t_estimate(float(np.mean(lb) - np.mean(la)), se, df, level, min(len(la), len(lb)), METHOD)


def detectable(
    la: np.ndarray, lb: np.ndarray, prior: Prior | None, beyond: float, level: float, power: float = 0.8
) -> float | None:
    """Return the smallest true B/A beyond `beyond` this row's interval would put wholly past it with `power`."""
    se, df = _se(la, lb, prior)
    if min(len(la), len(lb)) < 2 or not se > 0:
        return None
    return beyond * math.exp((_t_quantile(1 - (1 - level) / 2, df) + _t_quantile(power, df)) * se)


Key = Hashable


@dataclass(frozen=True)
class Quotients:
    """One time metric's rows over the rest of their job: each row's (A's, B's) log quotients, and the prior of
    each row's job group."""

    rows: dict[Key, tuple[np.ndarray, np.ndarray]]
    priors: dict[Key, Prior | None]
    groups: dict[Key, tuple[Key, ...]] = dataclasses.field(default_factory=dict)  # each row's job group
    _faster_at: dict[float, frozenset[Key]] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def ratio(self, key: Key, level: float) -> Estimate | None:
        """Return row `key`'s B/A over the rest of its job at `level` (None: the row is in no job group).

        It is flagged REFERENCE_MOVED where another row of its group is measurably faster in B at that level."""
        if key not in self.rows:
            return None
        found = ratio(*self.rows[key], self.priors.get(key), level)
        if any(k != key for k in self.groups.get(key, ()) if k in self._faster(level)):
            found = dataclasses.replace(found, flags=(*found.flags, REFERENCE_MOVED))
        return found

    def _faster(self, level: float) -> frozenset[Key]:
        """Return the rows measurably faster in B at `level`, worked out once per level."""
        if level not in self._faster_at:
            self._faster_at[level] = frozenset(
                k for k, pair in self.rows.items() if ratio(*pair, self.priors.get(k), level).high < 1
            )
        return self._faster_at[level]

    def detectable(self, key: Key, beyond: float, level: float) -> float | None:
        return detectable(*self.rows[key], self.priors.get(key), beyond, level) if key in self.rows else None


def fit(groups: Sequence[tuple[Sequence[Key], np.ndarray, np.ndarray]]) -> Quotients:
    """Fit each job group's rows over the rest of their job, each group under its own prior.

    `groups[g]` is (its rows' keys, A's and B's cells × jobs medians of those rows in that order). Each group
    gets its own prior: one thread count's cells may spread unlike another's (two threads on two cores, say),
    and one prior for both would make the noisy group's intervals too narrow and the quiet group's too wide.
    Groups of fewer than MIN_CELLS cells or one job a side are left out: their rows have no quotient."""
    found: dict[Key, tuple[np.ndarray, np.ndarray]] = {}
    members: dict[Key, tuple[Key, ...]] = {}
    priors: dict[Key, Prior | None] = {}
    for keys, a, b in groups:
        if len(keys) < MIN_CELLS or min(a.shape[1], b.shape[1]) < 2:
            continue
        qa, qb = leave_one_out(a, b)
        mine = {key: (qa[i], qb[i]) for i, key in enumerate(keys)}
        spreads = [row_spread(*pair) for pair in mine.values()]
        prior = fit_prior([v for v, _ in spreads], [d for _, d in spreads])
        found |= mine
        members |= dict.fromkeys(keys, tuple(keys))
        priors |= dict.fromkeys(keys, prior)
    return Quotients(found, priors, members)


def gate_fails_in_job(in_job: Estimate, raw_point: float, percent: float) -> bool:
    """Say whether a row over the rest of its job fails `--fail-if-slower percent`.

    It fails with its whole interval beyond 1 + percent/100 and its raw point beyond it too, unless another cell
    of its job got measurably faster in B (REFERENCE_MOVED): a row is not slower because others got faster."""
    if REFERENCE_MOVED in in_job.flags:
        return False
    return gate_fails(in_job.low, outcome(in_job), percent) and raw_point > 1 + percent / 100
