"""The verdict's intervals: the CPU/GPU full-path speedup (analyze.job_intervals: Welch t on log job medians), its
per-epoch speedup (paired round by round where the GPU's jobs timed the CPU beside it), and the CPU configurations
tied with the fastest and the step-time growth (cells of the same jobs: analyze.same_jobs, paired round by round)."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze import job_intervals, same_jobs
from accel_choice.analyze.job_intervals import outcome, ratio_interval, simultaneous_level
from accel_choice.records.estimate import Estimate
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.decision import StepScaling, CpuConfiguration, TiedConfiguration
from accel_choice.records.training import TrainingCell
from accel_choice.records.fullpath import FullPathRow


def _epoch_and_eval(cell: TrainingCell) -> list[list[float]]:
    """Each job's training epoch + evaluation pass, epoch by epoch (both were timed back to back)."""
    return [[t + e for t, e in zip(train, ev)] for train, ev in zip(cell.epoch_s_jobs, cell.eval_s_jobs)]


def full_path_jobs(row: FullPathRow, cell: TrainingCell, epochs: int = 1) -> list[list[float]]:
    """Return each timing job's full path of `epochs` epochs.

    Each timing job's full path of `epochs` epochs: its one-off costs (its start-up and the load,
    conversion and copies of the data-path jobs of its repeat: `row.one_off_s_jobs`) paid once, plus
    `epochs` × that job's training + evaluation epoch."""
    if len(row.one_off_s_jobs) != len(cell.epoch_s_jobs):
        raise ValueError(
            f"{len(row.one_off_s_jobs)} one-off costs for {len(cell.epoch_s_jobs)} timing jobs of {row.name}"
        )
    return [[one_off + epochs * t for t in job] for one_off, job in zip(row.one_off_s_jobs, _epoch_and_eval(cell))]


def per_epoch_jobs(cell: TrainingCell) -> list[list[float]]:
    """Return each timing job's training + evaluation epochs: what a longer job repeats, without its one-off costs."""
    return _epoch_and_eval(cell)


def contenders(
    rows: Sequence[FullPathRow], best: FullPathRow, cells: Sequence[TrainingCell], level: float, epochs: int = 1
) -> int:
    """Count how many of one device's full paths could have been its fastest.

    How many of one device's full paths `rows` could have been its fastest over `epochs` epochs, `best`
    among them (job_intervals.contenders on each row's per-job full paths)."""
    by_variant = {c.key: c for c in cells}
    jobs = [full_path_jobs(row, by_variant[row.key], epochs) for row in rows]
    return job_intervals.contenders(jobs, rows.index(best), level)


def speedup_estimate(
    cpu: FullPathRow,
    gpu: FullPathRow,
    cells: Sequence[TrainingCell],
    rules: NoiseRules,
    family: int = 1,
    epochs: int = 1,
) -> Estimate:
    """Estimate the CPU/GPU full-path speedup with its t interval.

    CPU/GPU full-path time of `epochs` epochs, each side's one-off costs and start-up paid once, with its t
    interval (Welch: the
    two sides ran in different jobs) at the level of a family of `family` comparisons (see `contenders`).

    Each job's training, evaluation and start-up are its own; its load, conversion and copies are those of
    the data-path jobs of its repeat (independent jobs, `full_path_jobs`), so the interval carries the
    spread of every term of the full path.
    """
    by_variant = {c.key: c for c in cells}
    return ratio_interval(
        full_path_jobs(gpu, by_variant[gpu.key], epochs),
        full_path_jobs(cpu, by_variant[cpu.key], epochs),
        level=simultaneous_level(rules.confidence, family),
    )


def beside_twin(cpu: TrainingCell, gpu: TrainingCell, beside: Sequence[TrainingCell]) -> TrainingCell | None:
    """Return the cell of `cpu`'s configuration timed in at least two of `gpu`'s jobs (`beside`), or None."""
    twin = next((cell for cell in beside if cell.key == cpu.key), None)
    return twin if twin is not None and sum(job in twin.jobs for job in gpu.jobs) >= 2 else None


def per_epoch_speedup(
    cpu: TrainingCell, gpu: TrainingCell, level: float, beside: Sequence[TrainingCell] = ()
) -> Estimate:
    """Return the CPU/GPU ratio of a training + evaluation epoch with its interval.

    Paired round by round over the GPU's jobs (`same_jobs.alone`) where they timed the CPU's configuration
    beside it (`beside`: a GPU table's CPU cells, TrainingJob.beside): the drift the two sides shared cancels.
    Welch between the CPU's and the GPU's jobs otherwise (another batch size, or a run before version 15)."""
    twin = beside_twin(cpu, gpu, beside)
    if twin is None:
        return ratio_interval(per_epoch_jobs(gpu), per_epoch_jobs(cpu), level=level)
    shared = [job for job in gpu.jobs if job in twin.jobs]
    gpu_jobs, cpu_jobs = per_epoch_jobs(gpu), per_epoch_jobs(twin)
    return same_jobs.alone(
        [gpu_jobs[gpu.jobs.index(job)] for job in shared], [cpu_jobs[twin.jobs.index(job)] for job in shared], level
    )


def cell_ratio(a: TrainingCell, b: TrainingCell, level: float, spreads: same_jobs.Spreads | None = None) -> Estimate:
    """Return B's epoch over A's with its interval.

    B's epoch over A's, paired over the jobs that timed both (the same job names: their epochs interleaved in
    one process, so the drift they shared cancels), round by round (same_jobs.paired_logs). Its spread is
    borrowed from the cells of their jobs where both cells name the same jobs and `spreads` has a prior for each
    (analyze.same_jobs: a thread count's cells a group), else the pair's own (same_jobs.alone).
    Welch between different jobs, or where they share fewer than two."""
    shared = [job for job in a.jobs if job in b.jobs]
    if len(shared) < 2:
        return ratio_interval(a.epoch_s_jobs, b.epoch_s_jobs, level=level)
    a_jobs, b_jobs = ([c.epoch_s_jobs[c.jobs.index(job)] for job in shared] for c in (a, b))
    if spreads is not None and a.jobs == b.jobs:  # a cell that lost a job lends and borrows nothing
        moderated = spreads.ratio(a.key, b.key, same_jobs.paired_logs(a_jobs, b_jobs), level)
        if moderated is not None:
            return moderated
    return same_jobs.alone(a_jobs, b_jobs, level)


def fastest_ties(
    cpu_cells: Sequence[TrainingCell],
    fastest: TrainingCell,
    floor: float | None,
    rules: NoiseRules,
    spreads: same_jobs.Spreads | None = None,
) -> tuple[TiedConfiguration, ...]:
    """Return the CPU configurations whose epoch is not measurably slower than the fastest's.

    The CPU configurations whose epoch is not measurably slower than the fastest's: the interval of
    their ratio to it reaches down to 1 or into the noise floor (`cell_ratio`: paired where the same jobs timed
    both, every batch size and loader at one thread count, the spreads borrowed: `spreads`, or fitted to
    `cpu_cells`). The fastest is the lowest point (its job medians), a paired ratio is taken round by round: a
    cell close to the fastest may read a little below 1 against it, even wholly below. It is listed, not left out."""
    spreads = same_jobs.fit_cells(cpu_cells) if spreads is None else spreads
    ties = []
    for cell in cpu_cells:
        if cell is fastest:
            continue
        ratio = cell_ratio(fastest, cell, rules.confidence, spreads)
        if outcome(ratio, floor or 0.0) != "a_faster":  # not measurably slower than the fastest
            ties.append(TiedConfiguration(**CpuConfiguration.of(cell), over_fastest=ratio))
    return tuple(sorted(ties, key=lambda t: t.over_fastest.point))


# The step time grew less than half as much as the samples per step: fixed per-step cost dominates.
OVERHEAD_BOUND_GROWTH = 0.5


def step_scaling(
    cpu_train: Sequence[TrainingCell], rules: NoiseRules = NoiseRules(), spreads: same_jobs.Spreads | None = None
) -> StepScaling | None:
    """Return how the per-step time grew from the smallest to the largest batch size.

    How the per-step time grew from the smallest to the largest batch size (fast path where
    measured), with its interval: the epoch ratio's (`cell_ratio`: paired, as one CPU job times every
    batch size, the spreads borrowed: `spreads`, or fitted to `cpu_train`) times the ratio of their step counts.
    Overhead or work is called only when the whole interval lies on one side of half the growth of the samples
    per step. Cells at the thread count of the fastest CPU cell (timing.threads), so the growth is the batch
    size's alone."""
    spreads = same_jobs.fit_cells(cpu_train) if spreads is None else spreads
    best = min(cpu_train, key=lambda r: r.epoch_s.point)
    threads = best.threads
    cpu_train = [r for r in cpu_train if (r.threads, r.compiled) == (threads, best.compiled)]
    smallest = min(cpu_train, key=lambda r: (r.batch_size, r.loader != "fastpath"))
    largest = max(cpu_train, key=lambda r: (r.batch_size, r.loader == "fastpath"))
    if smallest.batch_size == largest.batch_size:
        return None
    epochs = cell_ratio(smallest, largest, rules.confidence, spreads)
    per_step = smallest.steps / largest.steps
    samples = largest.batch_size / smallest.batch_size
    ratio = epochs.scaled(per_step)
    half = OVERHEAD_BOUND_GROWTH * samples
    growth = "overhead" if ratio.high < half else "work" if ratio.low >= half else "undecided"
    return StepScaling(
        threads=threads,
        smallest_batch=smallest.batch_size,
        largest_batch=largest.batch_size,
        samples_ratio=samples,
        step_time_ratio=ratio,
        growth=growth,
        overhead_bound=growth == "overhead",
    )


def cpu_statements(
    cpu_train: Sequence[TrainingCell], floor: float | None, rules: NoiseRules = NoiseRules()
) -> tuple[TrainingCell, tuple[TiedConfiguration, ...], StepScaling | None]:
    """Return the fastest CPU cell, the cells tied with it and the step-time growth: the first screen's CPU intervals.

    The spreads are fitted once (same_jobs.fit_cells): the ties and the step growth borrow from them."""
    fastest = min(cpu_train, key=lambda r: r.epoch_s.point)
    spreads = same_jobs.fit_cells(cpu_train)
    return fastest, fastest_ties(cpu_train, fastest, floor, rules, spreads), step_scaling(cpu_train, rules, spreads)
