"""The decision in words: the verdict and its reasons, the GPU decision sheet and the CPU vs GPU table
(the decision figure is render/decision_figure.py). Every sentence follows from a field of the decision
records (no number is computed here, and no sentence is said unless its figures show it)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from accel_choice.analyze.job_intervals import SETTLE_AWAY, WELCH
from accel_choice.records.decision import CpuConfiguration, DeviceComparison, GpuVisibility, Verdict
from accel_choice.records.estimate import Estimate
from accel_choice.records.training import TrainingCell
from accel_choice.records.fullpath import FullPathRow
from accel_choice.render.formatting import counted, level_words, ms, table
from accel_choice.render.noise import remeasure_line, trust_banner


def path_name(row: FullPathRow) -> str:
    """Name a full path: variant name (records' Variant.name, the one way a variant is named), format, batch size."""
    return f"{row.name}, {row.format}, B={row.batch_size}"


def gpu_line(gpu: GpuVisibility) -> str:
    """Say what was visible, in one phrase."""
    if gpu.kind == "cuda":
        names = ", ".join(gpu.names)
        if gpu.source == "probe":
            return f"CUDA {gpu.cuda_version} visible: {names} (driver {gpu.driver or 'unknown'})"
        return f"CUDA {gpu.cuda_version} visible: {names}"
    if gpu.kind == "mps":
        return "Apple MPS visible"
    device = "CUDA or MPS device" if gpu.source == "probe" else "CUDA device"
    return f"no {device} visible (torch {gpu.torch_version}, CUDA build: {gpu.cuda_version or 'none'})"


def contaminated(verdict: Verdict) -> bool:
    return verdict.trust is not None and verdict.trust.contaminated


def configuration(c: CpuConfiguration) -> str:
    """Name a CPU configuration in a few words: "fastpath B=512 on 1 thread" ("compiled" after the loader)."""
    return f"{c.loader}{' compiled' if c.compiled else ''} B={c.batch_size} on {counted(c.threads, 'thread')}"


def claim(verdict: Verdict) -> str:
    """Return the verdict's sentence.

    The verdict's sentence: what was measured, and why the device it names follows (the first screen; the
    comparison section gives the full paths it rests on: measured_sentence)."""
    if verdict.reason == "no_gpu_visible":
        return "No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed."
    if verdict.reason == "gpu_visible_not_measured":
        return f"{gpu_line(verdict.gpu)}, but no GPU timing was taken in this run: no speedup is claimed."
    c = verdict.comparison
    assert c is not None
    span = "one epoch's full path" if c.epochs == 1 else f"{c.epochs} epochs' full path"
    measured = (
        f"Measured speedup {c.speedup.point:.2f}× ({level_words(c.speedup.level)} interval "
        f"{c.speedup.low:.2f}–{c.speedup.high:.2f}×) over {span}"
    )
    if verdict.outcome == "GPU":
        return f"{measured}: the whole interval lies above the {c.threshold:g}× threshold, so the GPU pays off."
    if verdict.outcome == "CPU":
        return f"{measured}: the whole interval lies at or below the {c.threshold:g}× threshold, so the GPU does not pay off."
    if verdict.reason == "run_contaminated":
        return f"{measured}: undecided, the run was contaminated, so this speedup is not evidence."
    more = (
        f" About {verdict.repeats_to_settle} timing repeats (timing.repeats) would settle it."
        if verdict.repeats_to_settle
        else " No practical number of repeats (up to 200) would settle it."
    )
    return f"{measured}: undecided, the interval straddles the {c.threshold:g}× threshold.{more}"


def _paired(c: DeviceComparison) -> str:
    """Say how the per-epoch speedup was taken: paired in the GPU's jobs, or between the two devices' jobs."""
    if c.cpu_beside_per_epoch_s is not None:  # set exactly where the speedup paired (decision.compare_devices)
        there = ms(c.cpu_beside_per_epoch_s)
        return f", paired: the CPU timed in the GPU's {c.speedup_per_epoch.jobs} jobs, {there} ms an epoch there"
    return ", the two devices' own jobs"


def measured_sentence(verdict: Verdict) -> str:
    """Say the measured comparison behind the verdict, in full.

    The measured comparison behind the verdict, in full: each side's best path, its start-up and the speedups
    (the comparison section); for an undecided one, the repeats that would settle it and why."""
    c = verdict.comparison
    if c is None:
        return ""
    span, e = ("one epoch", c.epochs) if c.epochs == 1 else (f"{c.epochs} epochs (gpu.epochs or Northstar's)", c.epochs)
    said = (
        f"Measured full path of {span}, each side's one-off costs and start-up paid once: best CPU ({path_name(c.cpu)}) "
        f"{ms(c.cpu.one_off_s + e * c.cpu.per_epoch_s)} ms, of which {ms(c.cpu.startup_s)} ms start-up, vs best GPU "
        f"({path_name(c.gpu)}) {ms(c.gpu.one_off_s + e * c.gpu.per_epoch_s)} ms, of which "
        f"{ms(c.gpu.startup_s)} ms start-up (context and first-step costs): speedup {c.speedup.point:.2f}× "
        f"({level_words(c.speedup.level)} interval {c.speedup.low:.2f}–{c.speedup.high:.2f}×; each further epoch "
        f"{c.speedup_per_epoch.point:.2f}×, {c.speedup_per_epoch.low:.2f}–{c.speedup_per_epoch.high:.2f}×{_paired(c)})."
    )
    if verdict.reason != "interval_straddles_threshold":
        return said
    if not verdict.repeats_to_settle:  # planned from the spread these jobs showed (job_intervals.jobs_to_settle)
        return f"{said} No practical number of repeats (up to 200) would settle it: its jobs spread too widely."
    return (
        f"{said} About {verdict.repeats_to_settle} timing repeats (timing.repeats) would settle it, at least 80 % of "
        f"the time when the true speedup lies {SETTLE_AWAY:g}× or more from the threshold (docs/statistics.md)."
    )


def ties_sentence(verdict: Verdict) -> str:
    """Which CPU configurations this run cannot tell from the fastest, or that none can be."""
    fastest, ties = verdict.fastest_cpu_epoch, verdict.fastest_cpu_ties
    if contaminated(verdict):
        return (
            "Which CPU configuration is fastest is undecided: the run was contaminated (see above); by its point, "
            f"{fastest.loader} B={fastest.batch_size} on {counted(fastest.threads, 'thread')}."
        )
    if not ties:
        return (
            f"Every other CPU configuration was measurably slower than {fastest.loader} at B={fastest.batch_size} "
            f"with {counted(fastest.threads, 'thread')} ({verdict.confidence:.0%} intervals beyond the noise floor)."
        )
    listed = ", ".join(f"{configuration(t)} ({t.over_fastest.point:.2f}×, {_span(t.over_fastest)})" for t in ties)
    return (
        f"Tied with the fastest ({configuration(fastest)}): {listed} — none measurably slower in this run "
        f"({verdict.confidence:.0%} intervals of the epoch ratio reach down to 1 or into the noise floor)."
    )


def _span(ratio: Estimate) -> str:
    """Render a tie's interval: a Welch ratio came from separate processes (why it is wide); one wholly below 1 is
    a close cell its jobs' rounds put ahead of the fastest by its point (analyze.decision_intervals.fastest_ties)."""
    note = ", separate processes" if ratio.method == WELCH else ", faster round by round" if ratio.high < 1 else ""
    return f"{ratio.low:.2f}–{ratio.high:.2f}{note}"


def reasons(verdict: Verdict) -> list[str]:
    """Return the figures behind the verdict, each sentence only where its numbers show it."""
    best, fastest = verdict.fastest_cpu_path, verdict.fastest_cpu_epoch
    said = [
        f"Fastest CPU full path: {best.format} + {best.loader} at B={best.batch_size}, {counted(best.threads, 'thread')}, "
        f"{ms(best.total_s)} ms per epoch, "
        f"of which training is {best.train_share:.0%} (a sum of medians from different jobs, with no interval: "
        "not a measured difference; the fastest epoch and its ties below are decided by intervals).",
        f"The fastest CPU epoch ({fastest.loader}{', compiled' if fastest.compiled else ''}, B={fastest.batch_size}, "
        f"{counted(fastest.threads, 'thread')}) does "
        f"~{fastest.flop_3x / 1e6:.0f} MFLOP in "
        f"{ms(fastest.epoch_s)} ms: {fastest.flop_per_s_3x / 1e9:.2f} GFLOP/s achieved "
        + (
            "(3× rule; the FLOP-counter section gives the executed count)."
            if fastest.figures == "formula"
            else "(3× rule on the counted forward; the model figures give the counted total)."
        ),
        ties_sentence(verdict),
    ]
    scaling = verdict.scaling
    if scaling is not None:
        grew = (
            f"From B={scaling.smallest_batch} to B={scaling.largest_batch} ({scaling.samples_ratio:.0f}× the samples "
            f"per step, {counted(scaling.threads, 'thread')}) the time per optimizer step grew "
            f"{growth_words(scaling.step_time_ratio, verdict.confidence)}"
        )
        growth = "contaminated" if contaminated(verdict) else scaling.growth
        said.append(grew + _GROWTH[growth].format(half=scaling.samples_ratio / 2))
    said.append(_memory_sentence(verdict))
    comparison = verdict.comparison
    if comparison is not None and comparison.break_even_gpu is not None:
        cpu, gpu = comparison.cpu, comparison.break_even_gpu
        said.append(
            f"Per epoch (training and evaluation) the GPU path ({path_name(gpu)}) is faster by "
            f"{ms(cpu.per_epoch_s - gpu.per_epoch_s)} ms; its extra one-off costs (start-up, "
            f"copies, load: {ms(max(gpu.one_off_s - cpu.one_off_s, 0.0))} ms beyond the CPU's) "
            f"are repaid after {comparison.break_even_epochs:.1f} epochs of this size."
        )
    return said


_GROWTH = {
    "overhead": ": the whole interval lies below half the samples' growth ({half:.0f}×), so the step is bound by "
    "fixed per-step overhead (Python, dispatch), which a faster arithmetic unit does not remove.",
    "work": ": the whole interval lies at or above half the samples' growth ({half:.0f}×), so the work per step "
    "grows with the batch and arithmetic throughput matters at these sizes.",
    "undecided": ": the interval straddles half the samples' growth ({half:.0f}×), so this run cannot tell a "
    "per-step overhead from work that grows with the batch.",
    "contaminated": ": undecided, the run was contaminated (see above).",
}


def _memory_sentence(verdict: Verdict) -> str:
    m = verdict.memory
    need = (
        (
            "the Adam fp32 state"
            if m.figures == "formula"
            else "the parameters, gradients, buffers and optimizer state, counted,"
        )
        + f" ({m.adam_bytes:,} bytes), forward and backward activations at B={m.batch_size} "
        f"({m.activation_bytes:,} bytes) and the data matrix ({m.data_bytes:,} bytes) need {m.bound_bytes:,} bytes"
    )
    capacities = [
        (fits, f"the measuring host's {size:,} bytes" if who == "host" else f"the GPU's {size:,} bytes")
        for fits, size, who in (
            (m.fits_host, m.host_memory_bytes, "host"),
            (m.fits_device, m.device_memory_bytes, "device"),
        )
        if fits is not None
    ]
    if not capacities:
        return f"Memory: {need}; the measuring host's memory is not known, so memory is not compared."
    short = [words for fits, words in capacities if not fits]
    if short:
        return f"Memory decides: {need}, more than {' and '.join(short)}."
    return f"Memory does not decide here: {need}, within {' and '.join(words for _, words in capacities)}."


# The first screen lists this many ties; the verdict's reasons under the decision sheet list them all.
FIRST_SCREEN_TIES = 3


def fastest_line(verdict: Verdict) -> str:
    """Render the first screen's fastest CPU configuration, with its epoch."""
    fastest = verdict.fastest_cpu_epoch
    named = f"{configuration(fastest)}, {ms(fastest.epoch_s)} ms per epoch"
    if contaminated(verdict):
        return f"Fastest CPU configuration: undecided; by its point, {named}."
    return f"Fastest CPU configuration: {named}."


def ties_line(verdict: Verdict) -> str:
    """Render the first screen's ties with the fastest, each with its interval ("" in a contaminated run)."""
    ties = verdict.fastest_cpu_ties
    if contaminated(verdict):
        return ""
    if not ties:
        return "Every other CPU configuration was measurably slower."
    listed = "; ".join(
        f"{configuration(t)} ({t.over_fastest.point:.2f}×, {_span(t.over_fastest)})" for t in ties[:FIRST_SCREEN_TIES]
    )
    more = f"; {len(ties) - FIRST_SCREEN_TIES} more below the decision sheet" if len(ties) > FIRST_SCREEN_TIES else ""
    return f"Tied with it ({level_words(ties[0].over_fastest.level)} intervals): {listed}{more}."


_GROWTH_SHORT = {
    "overhead": "fixed per-step overhead dominates",
    "work": "the work per step grows with the batch",
    "undecided": "overhead or work, this run cannot tell",
    "contaminated": "overhead or work, undecided",
}


def growth_words(ratio: Estimate, confidence: float) -> str:
    """Render the step-time growth with its interval: "1.35× (95% interval 1.26–1.45×)"."""
    return f"{ratio.point:.2f}× ({confidence:.0%} interval {ratio.low:.2f}–{ratio.high:.2f}×)"


def growth_line(verdict: Verdict) -> str:
    """Render the first screen's step-time growth and what it shows ("" with one batch size)."""
    s = verdict.scaling
    if s is None:
        return ""
    ratio = s.step_time_ratio
    return (
        f"Step time grew {growth_words(ratio, verdict.confidence)} "
        f"from B={s.smallest_batch} to B={s.largest_batch} ({s.samples_ratio:.0f}× the samples): "
        f"{_GROWTH_SHORT['contaminated' if contaminated(verdict) else s.growth]}."
    )


def floor_line(verdict: Verdict) -> str:
    """Render the run's noise floor (its section says what it is and what it rests on)."""
    if verdict.noise_floor is None:
        return "No noise floor could be stated: every small difference is unproven."
    return f"Noise floor ±{verdict.noise_floor:.1%}: smaller differences are not evidence."


def headline(verdict: Verdict) -> str:
    """Render the first screen.

    The first screen: the verdict with a short line each for the fastest CPU configuration, its ties, the
    step-time growth and the noise floor; the run's trust above it where any job was flagged (with the command
    that re-measures a contaminated run's), under it where none was. The reasons come under the decision sheet."""
    lines = [fastest_line(verdict), ties_line(verdict), growth_line(verdict), floor_line(verdict)]
    said = f"**Verdict: {verdict.device}.** {claim(verdict)}\n\n" + "\n".join(f"- {line}" for line in lines if line)
    trust = trust_banner(verdict.trust)  # "" without a trust record
    if verdict.trust is not None and verdict.trust.contaminated:
        trust += f"\n\n{remeasure_line(verdict.trust)}"
    parts = [trust, said] if verdict.trust and verdict.trust.flagged else [said, trust]
    return "\n\n".join(part for part in parts if part)


def reasons_section(verdict: Verdict) -> str:
    """Render the figures behind the verdict and what each shows, in full.

    The figures behind the verdict and what each shows, in full: the first screen's lines said with their
    reasons and caveats, and the figures the first screen leaves out (the full path, the arithmetic rate, memory)."""
    return "**The figures behind the verdict.**\n\n" + "\n".join(f"- {r}" for r in reasons(verdict))


def comparison_section(verdict: Verdict) -> str:
    c = verdict.comparison
    if c is None:
        return ""
    return f"## CPU vs GPU, full path of one epoch\n\n{measured_sentence(verdict)}\n\n" + table(
        ("", "CPU", "GPU"),
        [
            ("best variant", path_name(c.cpu), path_name(c.gpu)),
            ("full path, ms", ms(c.cpu.total_s), ms(c.gpu.total_s)),
            ("per epoch (train + eval), ms", ms(c.cpu.per_epoch_s), ms(c.gpu.per_epoch_s)),
            ("once (load, copies, start-up), ms", ms(c.cpu.one_off_s), ms(c.gpu.one_off_s)),
            (
                "spread, ms",
                f"{ms(c.cpu.total_min_s)}–{ms(c.cpu.total_max_s)}",
                f"{ms(c.gpu.total_min_s)}–{ms(c.gpu.total_max_s)}",
            ),
            ("start-up (once), ms", ms(c.cpu.startup_s), ms(c.gpu.startup_s)),
            (
                "speedup CPU/GPU",
                "",
                f"{c.speedup.point:.2f}× ({level_words(c.speedup.level)} interval {c.speedup.low:.2f}–{c.speedup.high:.2f}×); "
                f"threshold {c.threshold:g}×",
            ),
        ],
    )


def startup_line(cells: Sequence[TrainingCell]) -> str:
    """Render the GPU jobs' one-off start-up and its parts.

    The GPU jobs' one-off start-up and its parts (medians over the eager cells: a compiled cell's
    start-up holds its compilation too)."""
    cells = [c for c in cells if not c.compiled] or list(cells)
    total = statistics.median(c.startup_s_median for c in cells)
    context = [c.context_startup_s_median for c in cells if c.context_startup_s_median is not None]
    part = statistics.median(context) if context else 0.0
    return (
        f"\n\nOne-off start-up per GPU job (median): {total * 1e3:.1f} ms: the CUDA context {part * 1e3:.1f} ms (the "
        f"first CUDA call, the driver left cold by an NVML availability check), then up to the end of the first "
        f"training step, less a steady step, {(total - part) * 1e3:.1f} ms (the model and data placed, cuBLAS, lazy "
        f"kernel loading, first-call imports)."
    )
