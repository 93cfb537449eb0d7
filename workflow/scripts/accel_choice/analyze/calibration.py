"""Does a stated confidence mean what it says? Synthetic runs drawn through the project's own interval,
outcome, gate and verdict functions, counted (benchmarks/calibration.py prints the table).

A synthetic cell is `jobs` timing jobs of `epochs` epochs each: every job has its own speed (a
log-normal job effect with spread `sigma_job`: the machine's drift from one process to the next,
the larger source on a shared VM) and every epoch its own (log-normal, `sigma_epoch`). The true
epoch time is 1, so an interval covers when it holds 1, and a ratio of two cells of one distribution
is truly 1 (an A/A pair).

A synthetic job table (`simulate_jobs`, `design_rates`) is the current CPU design: one job per thread
count and repeat times `variants` cells in `epochs` interleaved rounds. It adds what a real run's
records show (analyze.variance): a variant × job interaction (`sigma_interaction`), a drift per round
shared by the job's cells (`sigma_drift`, each epoch at its place in the round's order) and a round's
shared shift (`sigma_round`). With those 0 and one variant it is `simulate`'s model.

Two methods are compared: `BOOTSTRAP`, the two-level percentile bootstrap every table used
(analyze.bootstrap, one 95 % interval per comparison), and `JOB_T`, Student's t on the log job
medians (analyze.job_intervals) with the gate's rows and the verdict's candidates counted as one
family (Bonferroni). Every figure the docs quote comes from here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from accel_choice.analyze import bootstrap, job_intervals, same_jobs
from accel_choice.analyze.compare_match import TIME_METRICS
from accel_choice.analyze.compare_table import TABLE_LEVEL, TableShift
from accel_choice.analyze.bootstrap import repeats_to_settle
from accel_choice.analyze.job_intervals import Groups, gate_fails, outcome
from accel_choice.analyze.synthetic import Design, sides, simulate, simulate_jobs
from accel_choice.records.estimate import Estimate

LEVEL = 0.95
ROWS = 20  # the rows of a default run's comparison table, each with an interval per time metric
GATE_PERCENT = 5.0  # compare --fail-if-slower 5


@dataclass(frozen=True)
class Method:
    """How intervals are made (`cell`, `ratio`: groups and a level to an Estimate) and at which level a
    family of comparisons is judged (`family_level`: the per-comparison level for a family of n)."""

    name: str
    point: Callable[[Groups], float]
    cell: Callable[[Groups, float], Estimate]
    ratio: Callable[[Groups, Groups, float], Estimate]
    family_level: Callable[[float, int], float]
    settle: Callable[[Groups, Groups, Estimate, float], int | None]  # the jobs a re-run should have


BOOTSTRAP = Method(
    "percentile bootstrap (jobs, then epochs), each comparison at 95 %",
    bootstrap.pooled_median,
    lambda g, level: bootstrap.median_interval(g, level),
    lambda a, b, level: bootstrap.ratio_interval(a, b, level=level),
    lambda level, n: level,
    lambda a, b, speedup, threshold: repeats_to_settle(speedup, threshold),
)
JOB_T = Method(
    "Student t on log job medians, a family at 95 % together (Bonferroni)",
    job_intervals.point,
    job_intervals.median_interval,
    lambda a, b, level: job_intervals.ratio_interval(a, b, level=level),
    job_intervals.simultaneous_level,
    lambda a, b, speedup, threshold: job_intervals.jobs_to_settle(a, b, threshold),
)


def coverage(method: Method, design: Design, draws: int, seed: int = 0) -> float:
    """Return how often a cell's interval holds its true median."""
    rng = np.random.default_rng(seed)
    held = 0
    for _ in range(draws):
        estimate = method.cell(simulate(rng, design), LEVEL)
        held += estimate.low <= 1.0 <= estimate.high
    return held / draws


def aa_differs(method: Method, design: Design, draws: int, seed: int = 1) -> float:
    """Return how often two independent runs of one distribution are declared different (floor 0)."""
    rng = np.random.default_rng(seed)
    differ = 0
    for _ in range(draws):
        differ += outcome(method.ratio(simulate(rng, design), simulate(rng, design), LEVEL)) != "no_difference"
    return differ / draws


def gate_flags(ratio: Estimate, percent: float = GATE_PERCENT, floor: float = 0.0) -> bool:
    """Apply the regression gate's rule to one row (bootstrap.gate_fails, what analyze.compare.regressions applies)."""
    return gate_fails(ratio.low, outcome(ratio, floor), percent)


def gate_rates(
    method: Method, design: Design, draws: int, slowdown: float = 0.0, rows: int = ROWS, seed: int = 2
) -> float:
    """Return the regression gate's false-alarm rate or power.

    With `slowdown` 0: how often an A/A table of `rows` rows fails the gate (any row's epoch or eval time
    flagged). Otherwise: how often the gate flags the one time whose B is truly `slowdown` slower (its power).
    Every ratio of the table at the level compare gives it (compare_match.family_size: rows × time metrics)."""
    rng = np.random.default_rng(seed)
    comparisons = rows * len(TIME_METRICS)
    level = method.family_level(LEVEL, comparisons)
    hits = 0
    for _ in range(draws):
        if slowdown:
            hits += gate_flags(method.ratio(simulate(rng, design), simulate(rng, design, 1 + slowdown), level))
        else:
            hits += any(
                gate_flags(method.ratio(simulate(rng, design), simulate(rng, design), level))
                for _ in range(comparisons)
            )
    return hits / draws


def verdict(method: Method, cpu: Groups, gpus: list[Groups], threshold: float) -> tuple[str, Estimate, Groups]:
    """Apply the verdict's rule to training epochs.

    The verdict's rule on training epochs: the fastest GPU candidate by its point, the CPU/GPU speedup's
    interval at the level of a family as large as its contenders (job_intervals.contenders); GPU when it lies wholly above the threshold,
    CPU wholly below, undecided otherwise (analyze.decision.verdict)."""
    index = min(range(len(gpus)), key=lambda i: method.point(gpus[i]))
    best = gpus[index]
    level = method.family_level(LEVEL, job_intervals.contenders(gpus, index, LEVEL))
    speedup = method.ratio(best, cpu, level)  # B/A = cpu/gpu: the speedup
    if speedup.low > threshold:
        return "GPU", speedup, best
    if speedup.high < threshold:
        return "CPU", speedup, best
    return "undecided", speedup, best


def verdict_error_at_threshold(
    method: Method, design: Design, draws: int, candidates: int = 1, threshold: float = 1.5, seed: int = 3
) -> float:
    """Return how often a verdict other than undecided is given when the true speedup is exactly the threshold."""
    rng = np.random.default_rng(seed)
    wrong = 0
    for _ in range(draws):
        cpu = simulate(rng, design, threshold)
        gpus = [simulate(rng, design) for _ in range(candidates)]
        wrong += verdict(method, cpu, gpus, threshold)[0] != "undecided"
    return wrong / draws


def settle_rate(
    method: Method,
    design: Design,
    draws: int,
    away: float = job_intervals.SETTLE_AWAY,
    threshold: float = 1.5,
    seed: int = 4,
) -> tuple[float | None, int]:
    """Return how often a suggested re-run settles an undecided run rightly.

    A true speedup `away` times the threshold: of the runs left undecided, how often a re-run with the
    jobs the method suggests decides it rightly; a suggestion past 200 jobs, or none, counts as not
    settled. (None when no run was undecided) and how many were."""
    rng = np.random.default_rng(seed)
    undecided = settled = 0
    for _ in range(draws):
        cpu = simulate(rng, design, threshold * away)
        said, speedup, gpu = verdict(method, cpu, [simulate(rng, design)], threshold)
        if said != "undecided":
            continue
        undecided += 1
        jobs = method.settle(gpu, cpu, speedup, threshold)
        if jobs is None or jobs > 200:
            continue
        again = Design(jobs=max(jobs, 2), sigma_job=design.sigma_job, epochs=design.epochs)
        cpu, gpu = simulate(rng, again, threshold * away), simulate(rng, again)
        settled += verdict(method, cpu, [gpu], threshold)[0] == "GPU"
    return (settled / undecided if undecided else None), undecided


@dataclass(frozen=True)
class FlaggedChoice:
    """What keeping a flagged job in a cell's interval does, against leaving it out: each way's coverage of the
    cell's true median, the median width of its interval (high/low) and its A/A "differs" rate."""

    coverage_kept: float
    coverage_dropped: float
    width_kept: float
    width_dropped: float
    aa_differs_kept: float
    aa_differs_dropped: float


def flagged_job_choice(design: Design, draws: int, slow: float, seed: int = 5) -> FlaggedChoice:
    """Compare the t interval with and without a flagged job.

    One job of every cell flagged and truly `slow` times slower (1: flagged, yet no slower); the t interval
    on all the jobs (kept, what the tables do: analyze.trust) against the interval without the flagged job."""
    rng = np.random.default_rng(seed)
    held = {True: 0, False: 0}
    widths: dict[bool, list[float]] = {True: [], False: []}
    differs = {True: 0, False: 0}
    for _ in range(draws):
        cell = simulate(rng, design)
        flagged = int(rng.integers(design.jobs))
        cell[flagged] = [value * slow for value in cell[flagged]]
        other = simulate(rng, design)
        for kept in (True, False):
            jobs = cell if kept else [job for index, job in enumerate(cell) if index != flagged]
            estimate = JOB_T.cell(jobs, LEVEL)
            held[kept] += estimate.low <= 1.0 <= estimate.high
            widths[kept].append(estimate.high / estimate.low)
            differs[kept] += outcome(JOB_T.ratio(other, jobs, LEVEL)) != "no_difference"
    return FlaggedChoice(
        held[True] / draws,
        held[False] / draws,
        float(np.median(widths[True])),
        float(np.median(widths[False])),
        differs[True] / draws,
        differs[False] / draws,
    )


def binomial_bounds(p: float, draws: int, z: float = 3.0) -> tuple[float, float]:
    """Where a rate of true value `p` lands in `draws` draws, ±`z` standard errors: a test's tolerance."""
    half = z * (p * (1 - p) / draws) ** 0.5
    return max(0.0, p - half), min(1.0, p + half)


# A default run's CPU timing jobs (30 before the paired design, 6 since; the figures docs quote drew 30) and its
# sentinel's spread between them.
SENTINEL_JOBS, SENTINEL_SPREAD = 30, 0.05


def table_gate_rate(
    design: Design,
    draws: int,
    slowdown: float = 0.0,
    sigma_run: float = 0.0,
    groups: int = 10,
    cells: int = 2,
    percent: float = GATE_PERCENT,
    seed: int = 6,
) -> float:
    """Return how often the whole-table gate fails.

    How often the whole-table gate (analyze.compare_table) fails: two runs of `groups` job groups (a default
    CPU table: 5 batch sizes × 2 thread counts) of `cells` cells each (the loaders, sharing each job's speed), B
    every cell `slowdown` slower (0: an A/A pair). Each run has its own machine speed (log-normal, `sigma_run`),
    which its sentinel sees too (SENTINEL_JOBS jobs spread SENTINEL_SPREAD): the gate's guard against it."""
    rng = np.random.default_rng(seed)
    fails = 0
    for _ in range(draws):
        pairs: list[list[list[float]]] = [[], []]
        sentinels = []
        for side, scale in enumerate((1.0, 1.0 + slowdown)):
            machine = scale * float(rng.lognormal(0.0, sigma_run)) if sigma_run else scale
            for _ in range(groups):
                jobs = rng.lognormal(0.0, design.sigma_job, size=design.jobs)
                epochs = rng.lognormal(0.0, design.sigma_epoch, size=(design.jobs, cells, design.epochs))
                per_job = machine * jobs * np.exp(np.log(np.median(epochs, axis=2)).mean(axis=1))
                pairs[side].append([float(v) for v in per_job])
            sentinels.append([[machine / scale * float(v)] for v in rng.lognormal(0.0, SENTINEL_SPREAD, SENTINEL_JOBS)])
        machine_ratio = job_intervals.ratio_interval(sentinels[0], sentinels[1], level=LEVEL)
        shift = TableShift(
            device="cpu",
            cells=groups * cells,
            groups=groups,
            ratio=job_intervals.table_ratio(list(zip(pairs[0], pairs[1])), TABLE_LEVEL),
            machine_high=machine_ratio.high,
        )
        fails += shift.fails(percent)
    return fails / draws


@dataclass(frozen=True)
class DesignRates:
    """What a whole synthetic run of job tables gets (`design_rates`): each rate over every draw's cells or rows."""

    cell_coverage: float  # a cell's t interval holds its true median
    paired_coverage: float  # a paired ratio of two cells of one job table holds the true ratio
    row_false_alarm: float  # A/A: a row's time fails the gate, at the table's family level
    table_false_alarm: float  # A/A: some row of the table fails the gate
    row_power: float  # one cell of B truly `slowdown` slower: its row fails the gate


def _cells(tables: list[np.ndarray]) -> list[Groups]:
    """Every cell of a run's job tables as its jobs' epoch times."""
    return [[list(job) for job in table[:, v, :]] for table in tables for v in range(table.shape[1])]


def design_rates(
    design: Design,
    draws: int,
    variants: int = 10,
    tables: int = 2,
    slowdown: float = 0.2,
    percent: float = GATE_PERCENT,
    seed: int = 7,
) -> DesignRates:
    """Simulate runs of the current CPU design and return their rates.

    Synthetic runs of the current CPU design: `tables` thread counts, each `design.jobs` jobs of `variants` cells
    (batch sizes × loaders) in `design.epochs` rounds (simulate_jobs). Through JOB_T: every cell's interval; the
    paired ratio of cells 2i and 2i + 1 (the loaders of one batch size, same_jobs.alone); `compare --fail-if-slower`'s
    gate on two runs, every row's epoch and eval times (an eval time drawn as a second table of the same model)
    at the family level of all of them, A/A, then with one random cell of B `slowdown` slower."""
    rng = np.random.default_rng(seed)
    rows = tables * variants
    level = JOB_T.family_level(LEVEL, rows * len(TIME_METRICS))
    counts = dict.fromkeys(("cell", "paired", "row", "table", "power"), 0)

    def run(jobs: Design) -> list[np.ndarray]:  # every metric's tables, in turn
        return [simulate_jobs(rng, jobs, variants) for _ in TIME_METRICS for _ in range(tables)]

    for _ in range(draws):
        a, b = (_cells(side) for side in sides(run, design))
        for cell in a:
            estimate = JOB_T.cell(cell, LEVEL)
            counts["cell"] += estimate.low <= 1.0 <= estimate.high
        for i in range(0, len(a) - 1, 2):
            ratio = same_jobs.alone(a[i], a[i + 1], LEVEL)  # as aggregate.versus_fastpath
            counts["paired"] += ratio.low <= 1.0 <= ratio.high
        flagged = [gate_flags(JOB_T.ratio(x, y, level), percent) for x, y in zip(a, b)]
        counts["row"] += sum(flagged)
        counts["table"] += any(flagged)
        slow = int(rng.integers(len(a)))
        counts["power"] += gate_flags(
            JOB_T.ratio(a[slow], [[t * (1 + slowdown) for t in job] for job in b[slow]], level), percent
        )
    cells = draws * len(TIME_METRICS) * rows
    return DesignRates(
        counts["cell"] / cells,
        counts["paired"] / (cells // 2),
        counts["row"] / cells,
        counts["table"] / draws,
        counts["power"] / draws,
    )
