"""Variance components of a run's CPU epoch times, on the log scale: what the calibration harness draws.

A CPU timing job times every variant (batch size × loader) of one thread count in `epochs` interleaved
rounds. The log epoch time of variant v in round k of job j is modelled as

    y[j, v, k] = mu[v] + job[j] + inter[j, v] + drift[j] · (k - mean k) + round[j, k] + epoch[j, v, k]

- `mu[v]`: the variant's true level (fixed);
- `job`: the job effect, a shift every variant of the job shares (what pairing cancels);
- `inter`: the variant × job interaction, a variant's own job-to-job deviation (what pairing leaves);
- `drift`: a linear trend of the job's times over its rounds, shared by its variants (per round);
- `round`: the rest of a round's shared shift, beyond the trend;
- `epoch`: the epoch noise, within a variant within a job.

The random terms are independent, normal, mean 0. The estimates are the method of moments of the balanced
nested ANOVA (Searle, Casella and McCulloch, *Variance Components*, ch. 4): jobs (random) nested in the
thread count, rounds (random) nested in jobs, variants (fixed) crossed with both. Its mean squares and what
they estimate, with J jobs, V variants and K rounds:

    jobs              J - 1              VK·job² + K·inter² + V·round² + epoch²
    variant × job     (J - 1)(V - 1)     K·inter² + epoch²
    trend over rounds J                  V·S·drift² + V·round² + epoch²     (S = Σ (k - mean k)²)
    rest of rounds    J(K - 2)           V·round² + epoch²
    residual          J(V - 1)(K - 1)    epoch²

Each component is solved from them, set to 0 when negative, and given Satterthwaite's degrees of freedom.
Several thread counts and runs pool their sums of squares and degrees of freedom. Divided by each job's
reference step (`job_tables(..., reference)`), the job component says what of the job effect that reference
does not track: a reference that moves with the work takes it out. The drift's square is
the mean square slope, a mean trend every job shares included. Each is a standard deviation of log times:
about the relative spread (0.05: 5 %).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from accel_choice.records.training import TrainingRecord

NAMES = ("job", "interaction", "drift", "round", "epoch")
MEANING = {
    "job": "job effect: the shift every variant of a job shares",
    "interaction": "variant × job: a variant's own job-to-job deviation (what pairing leaves)",
    "drift": "drift within a job: the trend per round every variant shares",
    "round": "round: a round's shared shift beyond the trend",
    "epoch": "epoch noise: within a variant within a job",
}


@dataclass(frozen=True)
class Component:
    """One component: a standard deviation of log times and its (Satterthwaite) degrees of freedom."""

    name: str
    sd: float
    df: float


@dataclass(frozen=True)
class Components:
    """A run's components with the shape of the tables they came from."""

    job: Component
    interaction: Component
    drift: Component
    round: Component
    epoch: Component
    tables: int  # job tables pooled (thread counts × runs)
    jobs: int  # jobs in all
    epochs: int  # epoch times in all

    def all(self) -> tuple[Component, ...]:
        """Return the components in the model's order."""
        return tuple(getattr(self, name) for name in NAMES)


def variant_order(keys: Iterable[tuple]) -> list[tuple]:
    """Return variant keys in the order of a job table's variants, and of a components file's blocks.

    The order is by repr, as every shipped components file stores its blocks. It is not by batch size:
    ('cpu', …, 'dataloader', 128, …) comes before ('cpu', …, 'dataloader', 32, …).
    Whatever gives the cells of a draw their identity (a run's true times) must order them by this."""
    return sorted(keys, key=repr)


def job_tables(
    records: Iterable[TrainingRecord], reference: Mapping[tuple[int, int], float] | None = None
) -> list[np.ndarray]:
    """Return each thread count's epoch times as one array [job, variant, round], variants in `variant_order`.

    Only the thread counts whose every job timed the same variants the same number of epochs (a balanced
    table, two jobs at least) are kept; the others are left out. `reference`: each job's reference median
    by (threads, repeat) (records.sentinel.ReferenceStepReadings); each epoch is then divided by its job's,
    so the job component is that of log(cell / reference). A job without one is left out."""
    by_threads: dict[int, dict[int, dict[tuple, list[float]]]] = {}
    for r in records:
        if r.device != "cpu" or (reference is not None and (r.threads, r.repeat) not in reference):
            continue
        scale = 1.0 if reference is None else reference[r.threads, r.repeat]
        by_threads.setdefault(r.threads, {}).setdefault(r.repeat, {})[r.key] = [t / scale for t in r.epoch_s_each]
    tables = []
    for threads in sorted(by_threads):
        jobs = [by_threads[threads][repeat] for repeat in sorted(by_threads[threads])]
        keys = variant_order(jobs[0])
        shapes = {tuple(len(job.get(key, ())) for key in keys) for job in jobs}
        if len(jobs) < 2 or any(set(job) != set(keys) for job in jobs) or len(shapes) != 1:
            continue
        if len(set(next(iter(shapes)))) != 1:
            continue
        tables.append(np.array([[job[key] for key in keys] for job in jobs], dtype=float))
    return tables


def _sums(y: np.ndarray) -> dict[str, tuple[float, int]]:
    """One table's sums of squares and degrees of freedom (y: log times [job, variant, round])."""
    jobs, variants, rounds = y.shape
    grand = y.mean()
    job = y.mean(axis=(1, 2))
    variant = y.mean(axis=(0, 2))
    cell = y.mean(axis=2)
    round_ = y.mean(axis=1)  # [job, round]
    k = np.arange(rounds) - (rounds - 1) / 2
    s = float((k**2).sum())
    slope = (round_ * k).sum(axis=1) / s  # each job's trend per round
    ss_round = variants * float(((round_ - job[:, None]) ** 2).sum())
    ss_trend = variants * s * float((slope**2).sum())
    residual = y - cell[:, :, None] - round_[:, None, :] + job[:, None, None]
    return {
        "job": (variants * rounds * float(((job - grand) ** 2).sum()), jobs - 1),
        "interaction": (
            rounds * float(((cell - job[:, None] - variant[None, :] + grand) ** 2).sum()),
            (jobs - 1) * (variants - 1),
        ),
        "trend": (ss_trend, jobs),
        "rest": (ss_round - ss_trend, jobs * (rounds - 2)),
        "residual": (float((residual**2).sum()), jobs * (variants - 1) * (rounds - 1)),
        "shape": (s, variants * rounds),  # S and V·K, to weigh the pooled mean squares
    }


def _solve(terms: Sequence[tuple[float, float, float]], divisor: float, name: str) -> Component:
    """A component from Σ c·MS / divisor (terms: c, MS, df), 0 when negative; Satterthwaite's df."""
    value = sum(c * ms for c, ms, _ in terms)
    if value <= 0:
        return Component(name, 0.0, 0.0)
    df = value**2 / sum((c * ms) ** 2 / df for c, ms, df in terms if df > 0)
    return Component(name, math.sqrt(value / divisor), df)


def winsorized(logs: np.ndarray, clip: float) -> np.ndarray:
    """Return log times [job, variant, round] with each variant's rounds in a job clipped to clip robust sds.

    The robust sd is 1.4826 × the median absolute deviation from the median of those rounds."""
    centre, spread = _centre_spread(logs)
    return np.clip(logs, centre - clip * spread, centre + clip * spread)


def bulk(logs: np.ndarray, clip: float) -> np.ndarray:
    """Return log times [job, variant, round] without their slow tail: an epoch beyond `clip` robust sds above
    the median of its variant's rounds in a job set to that median, one as far below clipped to the edge.

    The slow tail (a preempted thread, the collector) is drawn apart (`tail`), so it must not widen the bulk."""
    centre, spread = _centre_spread(logs)
    low = np.maximum(logs, centre - clip * spread)
    return np.where(low > centre + clip * spread, np.broadcast_to(centre, logs.shape), low)


def _centre_spread(logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centre = np.median(logs, axis=2, keepdims=True)
    return centre, 1.4826 * np.median(np.abs(logs - centre), axis=2, keepdims=True)


@dataclass(frozen=True)
class Tail:
    """The slow epochs beyond the bulk: their share of all epochs and their mean log excess over the bulk's edge."""

    share: float  # of epochs above the median of their cell's rounds in a job by more than `clip` robust sds
    log_size: float  # their mean log excess over that edge (an exponential's mean, as the harness draws it)
    clip: float


def _excess(table: np.ndarray, clip: float) -> np.ndarray:
    """Return each epoch's log excess beyond `winsorized`'s upper edge (0 inside it, below it negative)."""
    logs = np.log(table)
    return logs - winsorized(logs, clip)


def tail(tables: Sequence[np.ndarray], clip: float = 3.0) -> Tail:
    """Return the slow tail of epoch times [job, variant, round] beyond `clip` robust sds (`winsorized`'s edge)."""
    excess = np.concatenate([_excess(t, clip).ravel() for t in tables])
    slow = excess[excess > 0]
    return Tail(share=slow.size / excess.size, log_size=float(slow.mean()) if slow.size else 0.0, clip=clip)


def bursts(tables: Sequence[np.ndarray], clip: float = 3.0) -> tuple[float, float]:
    """Return how many other slow epochs (`tail`'s) a slow epoch's round holds on average, and how many if they
    were independent: (variants - 1) × their share. More than that: slow epochs come in bursts over a round's cells."""
    flags = [_excess(t, clip) > 0 for t in tables]  # each [job, variant, round]
    slow = sum(int(f.sum()) for f in flags)
    if not slow:
        return 0.0, 0.0
    per_round = [f.sum(axis=1) for f in flags]  # slow epochs in each job's round
    others = sum(float((n * (n - 1)).sum()) for n in per_round) / slow
    share = slow / sum(f.size for f in flags)
    return others, float(np.mean([f.shape[1] - 1 for f in flags])) * share


def components(tables: Sequence[np.ndarray], clip: float | None = None) -> Components:
    """Estimate the variance components of balanced tables of epoch times.

    The variance components of balanced tables of epoch times [job, variant, round], pooled. `clip`: of the bulk
    only (`bulk`): the slow tail beyond that many robust sds left out, as `tail` counts it; None keeps every epoch.

    Tables of one shape pool exactly; tables of different shapes (another job or variant count) are
    pooled with their mean coefficients, an approximation. Times must be positive; rounds at least 3."""
    if not tables:
        raise ValueError("no balanced table of CPU epoch times: two jobs of one thread count at least")
    pooled: dict[str, list[float]] = {}
    weights = {"V": 0.0, "K": 0.0, "S": 0.0, "n": 0.0}
    for table in tables:
        if table.ndim != 3 or table.shape[0] < 2 or table.shape[1] < 2 or table.shape[2] < 3:
            raise ValueError(f"a table needs 2 jobs, 2 variants and 3 rounds at least, got {table.shape}")
        if not (np.isfinite(table).all() and table.min() > 0):
            raise ValueError("epoch times must be positive and finite")
        logs = np.log(table)
        sums = _sums(logs if clip is None else bulk(logs, clip))
        for key in ("job", "interaction", "trend", "rest", "residual"):
            ss, df = pooled.setdefault(key, [0.0, 0.0])
            pooled[key] = [ss + sums[key][0], df + sums[key][1]]
        _, variants, rounds = table.shape
        weights["V"] += variants
        weights["K"] += rounds
        weights["S"] += sums["shape"][0]
        weights["n"] += 1
    v, k, s = (weights[key] / weights["n"] for key in ("V", "K", "S"))
    ms = {key: (ss / df if df else 0.0, df) for key, (ss, df) in pooled.items()}
    (m_job, d_job), (m_int, d_int) = ms["job"], ms["interaction"]
    (m_trend, d_trend), (m_rest, d_rest), (m_res, d_res) = ms["trend"], ms["rest"], ms["residual"]
    epoch = Component("epoch", math.sqrt(m_res), d_res)
    return Components(
        job=_solve([(1, m_job, d_job), (-1, m_int, d_int), (-1, m_rest, d_rest), (1, m_res, d_res)], v * k, "job"),
        interaction=_solve([(1, m_int, d_int), (-1, m_res, d_res)], k, "interaction"),
        drift=_solve([(1, m_trend, d_trend), (-1, m_rest, d_rest)], v * s, "drift"),
        round=_solve([(1, m_rest, d_rest), (-1, m_res, d_res)], v, "round"),
        epoch=epoch,
        tables=len(tables),
        jobs=sum(t.shape[0] for t in tables),
        epochs=sum(t.size for t in tables),
    )


def within_job(runs: Sequence[Sequence[np.ndarray]]) -> np.ndarray:
    """Return each job's log epoch times less its cells' medians: [job, thread count, variant, round].

    `runs`: each run's job tables (`job_tables`), one a thread count, whose job j is one process timing them all.
    What is left is all that happens inside a job: its rounds, its drift, its epochs, their slow tail, and bursts
    that slow some variants of a round and not others. The harness resamples these whole (analyze.synthetic.Blocks).
    Each cell's median over its rounds is 0, as a job's value is its median: a drawn cell's true time is its scale."""
    if not runs:
        raise ValueError("no run's job tables: nothing to resample")
    shapes = {tuple(t.shape for t in tables) for tables in runs}
    if len(shapes) != 1 or len(set(next(iter(shapes)))) != 1:
        raise ValueError(f"the runs' job tables differ in shape ({sorted(shapes)}): their jobs cannot be pooled whole")
    found = []
    for tables in runs:
        logs = np.stack([np.log(t) for t in tables])  # [thread count, job, variant, round]
        found.append((logs - np.median(logs, axis=3, keepdims=True)).transpose(1, 0, 2, 3))
    return np.concatenate(found)


def to_json(found: Components, slow: Tail | None = None) -> dict:
    """Return the components as plain JSON: each name's sd and df, the slow tail where given, the tables' shape."""
    tail_json = {} if slow is None else {"tail": {"share": slow.share, "log_size": slow.log_size, "clip": slow.clip}}
    return {
        "components": {c.name: {"sd": c.sd, "df": c.df} for c in found.all()} | tail_json,
        "tables": found.tables,
        "jobs": found.jobs,
        "epochs": found.epochs,
    }
