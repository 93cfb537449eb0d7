"""The run's own noise floor in words: how far this machine's speed moved between timing jobs (the drift
sentinel, records.sentinel), and every flag the run raised, counted by reason in one table."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze import accuracy
from accel_choice.analyze.stats import NoiseRules
from accel_choice.analyze.trust import remeasure_command
from accel_choice.records.decision import RunTrust
from accel_choice.records.loads import LoadCell
from accel_choice.records.sentinel import SentinelSummary
from accel_choice.records.training import NonFiniteRun, TrainingCell
from accel_choice.render.formatting import counted, ms, ratio_words, table

# A flagged job's reasons by kind: the words each reason holds, and the kind's name in the report
JOB_FLAG_KINDS = {
    "sentinel": "the machine's speed (sentinel)",
    "stole": "hypervisor steal",
    "GPU clocks": "GPU clocks held down",
    "other processes": "other processes' CPU",
    "load average": "a rising load average",
}


def noise_floor_section(sentinels: Sequence[tuple[str, SentinelSummary]]) -> str:
    """Render one paragraph per device's sentinel, then the flagged jobs (kept in the tables, flagged)."""
    if not sentinels:
        return ""
    parts = ["## The run's noise floor (drift sentinel)"]
    for device, s in sentinels:
        jobs = len(s.jobs)
        ratios = [j.over_run_median for j in s.jobs]
        text = (
            f"Every {device} timing job timed the same fixed work ({s.workload}) at its start, between its rounds "
            f"of epochs and at its end. Over the {counted(jobs, 'job')} the median took {s.run_median_s * 1e3:.1f} ms; "
            f"job medians ranged {min(ratios):.2f}–{max(ratios):.2f}× of it."
        )
        if s.noise_floor is None:
            text += " Too few unflagged jobs to state a noise floor: treat every small difference as unproven."
        else:
            text += (
                f" **Differences below ±{s.noise_floor:.1%} on this machine today are not evidence**: that is how far "
                "the machine's own speed moved between jobs (half the central 90 % range of the "
                f"{sum(not j.reasons for j in s.jobs)} unflagged jobs of {jobs}), "
                f"and every comparison in this report counts a difference only when its {s.confidence:.0%} "
                "interval lies wholly beyond it."
            )
        if s.host_run_median_s is not None:
            text += (
                f" Each {device} job also timed the CPU's fixed work on its host right after every tick (the host "
                f"launches the kernels: its drift slows a launch-bound model with no sign on the GPU): the median took "
                f"{s.host_run_median_s * 1e3:.1f} ms, and a job off it by more than the tolerance is flagged too."
            )
        flagged = [j for j in s.jobs if j.reasons]
        if flagged:
            worst = max(flagged, key=lambda j: abs(j.over_run_median - 1))
            text += (
                f" {counted(len(flagged), 'job')} flagged (tolerance ±{s.tolerance:.0%} of the run's speed; the farthest, "
                f"{worst.job}, ran at {worst.over_run_median:.2f}× the run median; kept in the tables, their cells "
                "marked; counted by reason under Measurement conditions and flags)."
            )
        else:
            text += f" No job ran more than ±{s.tolerance:.0%} off the run's speed, and none lost CPU to steal."
        parts.append(text)
    return "\n\n".join(parts)


def _why(trust: RunTrust) -> str:
    """The flags' reasons by kind, counted in jobs: "the machine's speed (sentinel) 20, other processes' CPU 12"."""
    counts = {kind: len(jobs) for kind, jobs in _jobs_by_kind(trust).items()}
    return ", ".join(f"{kind} {n}" for kind, n in counts.items() if n) or "other reasons"


def _jobs_by_kind(trust: RunTrust) -> dict[str, list[str]]:
    """The flagged jobs under each kind of reason (a job flagged for two reasons is under both)."""
    jobs: dict[str, list[str]] = {kind: [] for kind in [*JOB_FLAG_KINDS.values(), "other reasons"]}
    for job in trust.flagged:
        text = " ".join(job.reasons)
        kinds = [kind for key, kind in JOB_FLAG_KINDS.items() if key in text] or ["other reasons"]
        for kind in kinds:
            jobs[kind].append(job.job if job.table == "cpu" else f"{job.table} {job.job}")
    return jobs


def _cell(cell: TrainingCell) -> str:
    """A training cell in a few words: 'B=32 dataloader, 2 threads' (device, precision, placement where not the CPU's)."""
    where = "" if cell.device == "cpu" else f"{cell.device} {cell.precision} {cell.placement} "
    threads = f", {counted(cell.threads, 'thread')}" if cell.device == "cpu" else ""
    return f"{where}B={cell.batch_size} {cell.loader}{threads}{' compiled' if cell.compiled else ''}"


def flags_section(
    cells: Sequence[TrainingCell],
    loads: Sequence[LoadCell],
    non_finite: Sequence[NonFiniteRun],
    trust: RunTrust | None,
    rules: NoiseRules,
) -> str:
    """Render every flag the run raised in one table.

    Every flag the run raised in one table - what was flagged, over how many, and which - then the runs that
    went non-finite. Each cell's own reasons stay in its table's flag column."""
    iqr, outlier = f"IQR/median > {rules.noise_iqr_ratio:.0%}", f"a repeat > {rules.outlier_factor:g}× the median"
    rows: list[list[str]] = []
    if trust is not None:
        for kind, jobs in _jobs_by_kind(trust).items():
            if jobs:
                rows.append([kind, "timing jobs", f"{len(jobs)} of {trust.jobs}", ", ".join(jobs)])
    for words, key in ((iqr, "IQR/median"), (outlier, "the median (>")):
        noisy = [_cell(c) for c in cells if any(key in reason for reason in c.noise_reasons)]
        if noisy:
            rows.append([f"noisy: {words}", "training cells", f"{len(noisy)} of {len(cells)}", "; ".join(noisy)])
        noisy_loads = [f"{c.dataset} {c.format}" for c in loads if any(key in reason for reason in c.noise_reasons)]
        if noisy_loads:
            rows.append(
                [f"noisy: {words}", "load/convert cells", f"{len(noisy_loads)} of {len(loads)}", "; ".join(noisy_loads)]
            )
    busy_loads = [f"{c.dataset} {c.format} repeat {r.repeat}" for c in loads for r in c.contaminated]
    if busy_loads:
        repeats = sum(c.repeats for c in loads)
        rows.append(
            ["beside other work", "load/convert repeats", f"{len(busy_loads)} of {repeats}", "; ".join(busy_loads)]
        )
    if non_finite:
        rows.append(
            ["non-finite loss or weights (left out of the medians)", "runs", str(len(non_finite)), "listed below"]
        )
    highest = max([c.loadavg_max for c in cells] or [0.0])
    text = (
        "## Measurement conditions and flags\n\n"
        f"A cell is flagged noisy when IQR/median > {rules.noise_iqr_ratio:.0%} or a repeat exceeds "
        f"{rules.outlier_factor:g}× the median; a timing job or repeat is flagged when the drift sentinel saw another "
        "machine speed or hypervisor steal, other processes used more than the configured share of a core during it "
        "(from /proc/stat, or psutil where /proc is absent), or the load average rose. Highest 1-minute load average "
        f"seen around a training measurement: {highest:.2f}.\n\n"
    ) + (
        "Every flag this run raised, counted (flagged measurements stay in the tables, marked, never averaged away):"
        "\n\n" + table(["flag", "counted in", "count", "which"], rows)
        if rows
        else "Nothing was flagged: no timing job ran beside other work or at another machine speed, and no cell was noisy."
    )
    if trust is not None and trust.contaminated:
        text += (
            f"\n\n**This run was contaminated**: more than {trust.limit:.0%} of its timing jobs were flagged "
            "(aggregate.bad_run_share), for the reasons counted above. Every outcome resting on its timings is "
            "undecided: a measured speedup, the fastest CPU configuration, the step-time growth."
        )
    if non_finite:
        text += "\n\nNon-finite runs (NaN/inf loss or weights), excluded from the medians:\n" + "\n".join(
            f"- {r.device} {r.precision}{_scaler_words(r)} {r.placement} "
            f"B={r.batch_size} {r.loader} repeat {r.repeat}: first non-finite loss at step {r.nonfinite_step}"
            for r in non_finite
        )
    return text


def _scaler_words(row: NonFiniteRun) -> str:
    if row.precision != "fp16":
        return ""
    return " + GradScaler" if row.grad_scaler else " without GradScaler"


def trust_banner(trust: RunTrust | None) -> str:
    """Render the report's first line about the run itself.

    The report's first line about the run itself: how many timing jobs were flagged and why; for a
    contaminated run, that its measured figures are unreliable (its reasons counted under the flags, and
    remeasure_line the command that re-measures them)."""
    if trust is None or not trust.flagged:
        return "" if trust is None else f"All {trust.jobs} timing jobs ran clean (no job flagged)."
    if not trust.contaminated:
        said = f"{len(trust.flagged)} of {trust.jobs} timing jobs were flagged (by {_why(trust)})"
        return f"{said}: kept in the tables, their cells marked."
    return (
        f"**This run was contaminated: {len(trust.flagged)} of {trust.jobs} timing jobs were flagged, over the "
        f"{trust.limit:.0%} allowed (aggregate.bad_run_share). Its measured figures are unreliable.**"
    )


def remeasure_line(trust: RunTrust) -> str:
    """Return the one command that re-measures a contaminated run's flagged jobs and brings the report up to date."""
    return f"Re-measure the flagged jobs on a quiet machine: `{remeasure_command(trust)}`"


def accuracy_section(cells: Sequence[TrainingCell], cores: int | None) -> str:
    """Render each CPU cell's epoch over the plain loop timed beside it.

    Each CPU cell's epoch over the plain loop timed beside it (analyze.accuracy), and what each thread count
    shows; "" where no CPU cell has a reference."""
    timed = accuracy.cpu_checked(cells)
    if not timed:
        return ""
    tolerance = f"±{accuracy.TOLERANCE:.0%}"
    rows = [(c.batch_size, c.loader, c.threads, *versus_plain_loop(c)) for c in timed]
    level = f"{timed[0].confidence:.0%}"
    lines = []
    for group in accuracy.by_threads(timed, cores):
        pooled = group.pooled
        line = (
            f"- {counted(group.threads, 'thread')}, {counted(group.cells, 'cell')}, {counted(len(group.job_ratios), 'job')}: pipeline / plain "
            f"{pooled.point:.2f}× ({pooled.low:.2f}–{pooled.high:.2f}) over all of them; one job's two timings of "
            f"the same work differ by {group.spread:.1%} (standard deviation of the log ratio), "
            f"{group.jobs_outside} of {len(group.job_ratios)} jobs beyond {tolerance}: "
        )
        if group.measurable:
            line += f"in this run these cells were timed to {tolerance}."
        else:
            line += f"**in this run these cells could not be timed to {tolerance}"
            if group.every_core:
                line += (
                    f": its {counted(group.threads, 'thread')} took every core the jobs were given ({cores}), which the loop shares with "
                    "the system and the harness"
                )
            line += "; read their times, and every comparison that rests on them, as this spread at best.**"
        lines.append(line)
    return (
        "## Accuracy: the pipeline against a plain loop\n\n"
        "Every CPU timing job also timed the loop a user writes (zero_grad, forward, loss, backward, step over the "
        "same loader) under `torch.utils.benchmark.Timer`, in its middle round right after each cell's own epoch "
        "(the mean of 3 epochs after the Timer's 2 warm-up runs of 4 batches). A cell's epoch over it is what the "
        f"harness adds to the user's loop: 1.00× is an accurate harness. The ratio is paired by job, with its {level} t interval, "
        f"and judged against {tolerance} (docs/statistics.md). {rehearsal_sentence(timed)}\n\n"
        + table(("B", "loader", "threads", "pipeline (ms)", "plain loop (ms)", "pipeline / plain", "interval"), rows)
        + "\n\n"
        + "\n".join(lines)
    )


def rehearsal_sentence(cells: Sequence[TrainingCell]) -> str:
    """Say how the pipeline's timed epochs began: after untimed updates of their own variant, or cold."""
    most = max(cell.rehearsal_steps for cell in cells)
    if not most:
        return "The pipeline's epochs started cold, right after other variants' (a run before 2026-12-08)."
    return (
        f"Each of the pipeline's timed epochs began after up to {most} untimed updates of its own variant, "
        "all they changed put back (measure.rehearsal)."
    )


def versus_plain_loop(cell: TrainingCell) -> tuple[str, str, str, str]:
    """Render a cell with a reference as the Accuracy table shows it.

    A cell with a reference as the Accuracy table shows it: its epoch (ms), its plain loop's (the references'
    geometric mean), their ratio with its paired interval, and that interval against the tolerance."""
    ratio, tolerance = cell.epoch_s_over_reference, f"±{accuracy.TOLERANCE:.0%}"
    assert ratio is not None
    words = {"within": "within {}", "outside": "**outside {}**", "unsettled": "unsettled (reaches {})"}
    return (
        ms(cell.epoch_s.point),
        ms(cell.epoch_s.point / ratio.point),
        ratio_words(ratio),
        words[accuracy.judge(ratio)].format(tolerance),
    )


def accuracy_line(cells: Sequence[TrainingCell], cores: int | None) -> str:
    """Render the first screen's line on the thread counts that missed the tolerance.

    For the first screen: the thread counts whose jobs could not time their cells to the tolerance in this run
    (analyze.accuracy); "" where every one could, or no cell has a reference."""
    short = [group for group in accuracy.by_threads(cells, cores) if not group.measurable]
    if not short:
        return ""
    spreads = ", ".join(f"{group.spread:.0%} at {counted(group.threads, 'thread')}" for group in short)
    return (
        f"**Accuracy:** same-work timings spread {spreads}, over ±{accuracy.TOLERANCE:.0%}: smaller differences are "
        "not measured there (see Accuracy)."
    )
