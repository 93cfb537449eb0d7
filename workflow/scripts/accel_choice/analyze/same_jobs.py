"""Compare two cells timed in the same jobs: a paired ratio whose spread the job's other cells help estimate.

A CPU job times every thread count, batch size and loader, interleaved in rounds. The ratio of two of
its cells is paired: each job's log ratio, so the job's own speed cancels. It is taken round by round, each
round's epoch of one cell over the other's of that round, and the job's is the median over its rounds
(`paired_logs`): a round's shift, which both cells of the round share, cancels too.
With three jobs that ratio rests on 2 degrees of freedom, and Student's t at 2 degrees of freedom is 4.30:
a 4 % spread gives ±10 %. Three jobs that happen to agree give an interval that may be far too narrow instead.

The job's other cells know more. A cell's spread beyond its job's speed is read from its quotients over
the rest of its job group (analyze.row_relative, round by round), with jobs - 1 degrees of freedom each. A job group
is one thread count's cells of the same jobs (`fit_cells`). The spreads of one job group share a prior,
fitted as limma's `squeezeVar` does (Smyth 2004, `row_relative.fit_prior`); each cell's is shrunk towards it.
A pair's own variance is then shrunk towards the sum of its two cells', keeping at least half its weight.
A pair of two groups (two thread counts of one job) also borrows the spread of the groups' job levels
(`Spreads.block`): one count's whole block may run fast or slow in one job, and that cancels in neither cell's
quotient. `benchmarks/calibration.py --paired` and `benchmarks/stopping_rule.py --block` show the coverage
(docs/statistics.md).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from accel_choice.analyze import row_relative
from accel_choice.analyze.job_intervals import _t_estimate, paired_t
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import TrainingCell

METHOD = "paired t on log ratios round by round, the pair's spread shrunk towards its cells' over the cells of its jobs"
ALONE = "paired t on log ratios round by round: the pair's own jobs"
Key = Hashable


def quotients(times: np.ndarray) -> np.ndarray:
    """Return each cell's log quotients over the rest of its job, cells × jobs, from one job group's times.

    `times`: cells × jobs medians, or cells × jobs × rounds (every epoch, a job's rounds in the order run), as
    row_relative.centred_quotients takes one side: with rounds, round by round. Needs row_relative.MIN_CELLS cells."""
    (found,) = row_relative.centred_quotients(times)
    return found


def job_times(cells: Sequence[TrainingCell], name: str = "epoch_s") -> np.ndarray:
    """Return one job group's times `name` (epoch_s or eval_s), cells × jobs × rounds, every round in the order run.

    The cells' job medians, cells × jobs (`epoch_s_runs`, `eval_s_runs`), where the jobs' rounds differ in number
    (every job of the workflow times every cell alike, so only a hand-made table does). Their spreads then keep
    the rounds' shifts while a pair's `paired_logs` still cancel them where its two cells match: wider, not narrower."""
    rounds = {len(job) for cell in cells for job in getattr(cell, f"{name}_jobs")}
    if len(rounds) == 1:
        return np.array([getattr(cell, f"{name}_jobs") for cell in cells], dtype=float)
    return np.array([getattr(cell, f"{name}_runs") for cell in cells], dtype=float)


def paired_logs(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> np.ndarray:
    """Return each shared job's log ratio of cell b over cell a: the median over its rounds of log b - log a.

    `a`, `b`: each job's times in the order run, the same jobs in the same order. A job whose two cells hold
    unlike numbers of rounds gives the log ratio of its two medians instead."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} jobs of one cell against {len(b)} of the other: the same jobs are needed")
    found = []
    for ja, jb in zip(a, b):
        ta, tb = np.asarray(ja, dtype=float), np.asarray(jb, dtype=float)
        both = np.concatenate([ta, tb])
        if not (len(ta) and len(tb) and np.isfinite(both).all() and (both > 0).all()):
            raise ValueError("job times must be positive finite times")
        same = len(ta) == len(tb)
        found.append(float(np.median(np.log(tb / ta))) if same else math.log(np.median(tb) / np.median(ta)))
    return np.array(found)


def alone(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], level: float) -> Estimate:
    """Return cell b's time over cell a's, the same jobs, with the pair's own paired t on `paired_logs` at `level`.

    Where no spread can be borrowed: the job group has too few cells or no prior, or a cell lost a job."""
    return paired_t(paired_logs(a, b), level, ALONE)


@dataclass(frozen=True)
class Spreads:
    """Each cell's moderated variance of its quotients over the rest of its job (round by round), and its group's prior."""

    cells: dict[Key, float]
    priors: dict[Key, row_relative.Prior]
    levels: dict[Key, np.ndarray] = field(default_factory=dict)  # each cell's group's level, jobs (× rounds)

    def block(self, key_a: Key, key_b: Key, jobs: int) -> tuple[float, float] | None:
        """Return the variance over jobs of group b's level over group a's, and its degrees of freedom.

        A group's level in a job (and round) is the median of its cells' centred logs there (`levels`). Its
        difference between two groups of the same jobs, the median over a job's rounds, is one count's block
        against the other's. None for two cells of one group (the level cancels) or groups of other jobs."""
        la, lb = self.levels.get(key_a), self.levels.get(key_b)
        if la is None or lb is None or la is lb or len(la) != jobs or len(lb) != jobs:
            return None
        if la.shape != lb.shape:  # rounds unlike in number: the jobs' medians
            la, lb = (np.median(z, axis=1) if z.ndim == 2 else z for z in (la, lb))
        shift = lb - la
        shift = np.median(shift, axis=1) if shift.ndim == 2 else shift
        return float(np.var(shift, ddof=1)), float(jobs - 1)

    def ratio(self, key_a: Key, key_b: Key, d: Sequence[float], level: float) -> Estimate | None:
        """Return B/A at `level` from `d`, the per-job log ratios log b - log a (`paired_logs`), moderated.

        The pair's own variance of `d` (jobs - 1 degrees of freedom) is shrunk towards the sum of its two cells'
        moderated variances, as limma shrinks a row's towards its prior, weighted by the group prior's degrees of
        freedom but never more than the pair's own. A pair whose jobs moved apart more than its cells' spreads say
        keeps half of that: a job's own trend over the batch sizes moves the smallest and the largest apart.
        Two cells of two groups of the same jobs (two thread counts of one job) lend under the smaller prior,
        and add the groups' block variance (`block`).
        None where either cell has no prior: `d` must pair the same jobs (the caller's check)."""
        priors = (self.priors.get(key_a), self.priors.get(key_b))
        if None in priors or len(d) < 2:
            return None
        own = float(np.var(d, ddof=1))
        borrowed = self.cells[key_a] + self.cells[key_b]
        df = len(d) - 1
        lent = min(*(p.df for p in priors), df)  # the pair's own variance keeps at least half the weight
        block = self.block(key_a, key_b, len(d))
        if block is not None:
            borrowed += block[0]
        variance = (lent * borrowed + df * own) / (lent + df)
        if not variance > 0:
            return None
        pooled = min(p.pooled_df for p in priors)
        return _t_estimate(
            float(np.mean(d)), math.sqrt(variance / len(d)), min(lent + df, pooled), level, len(d), METHOD
        )


def levels(times: np.ndarray) -> np.ndarray:
    """Return one job group's level in each job (and round): the median of its cells' centred logs there.

    `times`: cells × jobs (× rounds), as `quotients` takes them; each cell centred on its own mean log first."""
    (centred,) = row_relative.centred_logs(times)
    return np.median(centred, axis=0)


def fit(groups: Sequence[tuple[Sequence[Key], np.ndarray]]) -> Spreads:
    """Fit every cell's moderated spread under its own job group's prior.

    `groups[g]` is (its cells' keys, its cells × jobs (× rounds) times in that order, as `quotients` takes them). Each group gets its own prior:
    one thread count's cells may spread unlike another's (two threads on two cores, say). Groups of fewer than
    row_relative.MIN_CELLS cells, of one job, or too few cells that varied to fit a prior lend nothing."""
    cells: dict[Key, float] = {}
    priors: dict[Key, row_relative.Prior] = {}
    found: dict[Key, np.ndarray] = {}
    for keys, times in groups:
        if len(keys) < row_relative.MIN_CELLS or times.shape[1] < 2:
            continue
        raw = [(float(np.var(q, ddof=1)), len(q) - 1) for q in quotients(times)]
        prior = row_relative.fit_prior([v for v, _ in raw], [d for _, d in raw])
        if prior is None:
            continue
        cells |= {key: row_relative.moderated(*spread, prior)[0] for key, spread in zip(keys, raw)}
        priors |= dict.fromkeys(keys, prior)
        found |= dict.fromkeys(keys, levels(times))
    return Spreads(cells, priors, found)


def fit_cells(cells: Sequence[TrainingCell]) -> Spreads:
    """Fit the epoch spreads of training cells, grouped by the jobs that timed them (their `jobs`) and thread count.

    One job times every thread count, but two threads on two cores may spread unlike one: each count its own prior.
    A cell that lost a job to a non-finite run names fewer jobs: it is of another group than its neighbours."""
    grouped: dict[tuple[tuple[str, ...], int], list[TrainingCell]] = defaultdict(list)
    for cell in cells:
        grouped[cell.jobs, cell.threads].append(cell)
    return fit([([c.key for c in group], job_times(group)) for group in grouped.values()])
