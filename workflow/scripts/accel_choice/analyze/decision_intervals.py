"""The verdict's intervals: the CPU/GPU full-path speedup and the CPU configurations tied with the
fastest, from the same two-level bootstrap as the tables (analyze.bootstrap)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from accel_choice.analyze.aggregate import cell_seed
from accel_choice.analyze.bootstrap import can_pair, estimate_from, outcome, ratio_interval, resampled_medians
from accel_choice.records.estimate import Estimate
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.decision import StepScaling, TiedConfiguration
from accel_choice.records.training import FullPathRow, TrainingCell


def _epoch_and_eval(cell: TrainingCell) -> list[list[float]]:
    """Each job's training epoch + evaluation pass, epoch by epoch (both were timed back to back)."""
    return [[t + e for t, e in zip(train, ev)] for train, ev in zip(cell.epoch_s_jobs, cell.eval_s_jobs)]


FULL_PATH = "percentile bootstrap of the full path: training and evaluation resampled, the rest held fixed"


def speedup_estimate(cpu: FullPathRow, gpu: FullPathRow, cells: Sequence[TrainingCell], rules: NoiseRules) -> Estimate:
    """CPU/GPU full-path time of one epoch, each side with its start-up, with its interval.

    The training and evaluation time of each side is resampled (jobs, then epochs); its load,
    conversion, copies and start-up are medians of other jobs and held fixed, so the interval is
    the one of the part that was repeated here.
    """
    by_variant = {c.key: c for c in cells}
    cpu_cell, gpu_cell = by_variant[cpu.key], by_variant[gpu.key]
    cpu_fixed, gpu_fixed = cpu.one_off_s, gpu.one_off_s
    seed = cell_seed((cpu.key, gpu.key))
    cpu_times = cpu_fixed + resampled_medians(_epoch_and_eval(cpu_cell), rules.bootstrap_resamples, seed)
    gpu_times = gpu_fixed + resampled_medians(_epoch_and_eval(gpu_cell), rules.bootstrap_resamples, seed + 1)
    point = cpu.total_with_startup_s / gpu.total_with_startup_s
    return estimate_from(
        point, np.asarray(cpu_times / gpu_times), rules.confidence, min(cpu_cell.repeats, gpu_cell.repeats), FULL_PATH
    )


def fastest_ties(
    cpu_cells: Sequence[TrainingCell], fastest: TrainingCell, floor: float | None, rules: NoiseRules
) -> tuple[TiedConfiguration, ...]:
    """The CPU configurations whose epoch is not measurably slower than the fastest's: the interval of
    their ratio to it holds 1 or stays within the noise floor (paired where both ran in one job)."""
    ties = []
    for cell in cpu_cells:
        if cell is fastest:
            continue
        # Same batch size and threads: the same jobs timed both (loaders, eager and compiled), epochs interleaved.
        same_jobs = (cell.batch_size, cell.threads) == (fastest.batch_size, fastest.threads)
        paired = same_jobs and can_pair(fastest.epoch_s_jobs, cell.epoch_s_jobs)
        ratio = ratio_interval(
            fastest.epoch_s_jobs,
            cell.epoch_s_jobs,
            paired=paired,
            level=rules.confidence,
            resamples=rules.bootstrap_resamples,
            seed=cell_seed((fastest.key, cell.key)),
        )
        if outcome(ratio, floor or 0.0) == "no_difference":
            ties.append(
                TiedConfiguration(
                    loader=cell.loader,
                    batch_size=cell.batch_size,
                    threads=cell.threads,
                    compiled=cell.compiled,
                    epoch_s=cell.epoch_s.point,
                    over_fastest=ratio,
                )
            )
    return tuple(sorted(ties, key=lambda t: t.over_fastest.point))


# The step time grew less than half as much as the samples per step: fixed per-step cost dominates.
OVERHEAD_BOUND_GROWTH = 0.5


def step_scaling(cpu_train: Sequence[TrainingCell], rules: NoiseRules = NoiseRules()) -> StepScaling | None:
    """How the per-step time grew from the smallest to the largest batch size (fast path where
    measured), with its interval: the epoch ratio's (bootstrap.ratio_interval, the two cells from
    different jobs) times the ratio of their step counts. Overhead or work is called only when the
    whole interval lies on one side of half the growth of the samples per step. Cells at the thread
    count of the fastest CPU cell (timing.threads), so the growth is the batch size's alone."""
    best = min(cpu_train, key=lambda r: r.epoch_s.point)
    threads = best.threads
    cpu_train = [r for r in cpu_train if (r.threads, r.compiled) == (threads, best.compiled)]
    smallest = min(cpu_train, key=lambda r: (r.batch_size, r.loader != "fastpath"))
    largest = max(cpu_train, key=lambda r: (r.batch_size, r.loader == "fastpath"))
    if smallest.batch_size == largest.batch_size:
        return None
    epochs = ratio_interval(
        smallest.epoch_s_jobs,
        largest.epoch_s_jobs,
        level=rules.confidence,
        resamples=rules.bootstrap_resamples,
        seed=cell_seed((smallest.key, largest.key), "step scaling"),
    )
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
