"""The planner's GPU in words: its profile, each figure's source, where it turns faster and why it does not pay off."""

from __future__ import annotations

from collections.abc import Callable

from accel_choice.records.breakeven import BreakEvenSummary, BreakEvenTable, Coverage
from accel_choice.records.device_profile import ProfileUse, UsedFigure
from accel_choice.render.formatting import AXIS_NOUNS, counted, table

_SOURCES = {"measured": "measured", "recorded": "recorded", "datasheet": "from the datasheet"}


def _digits(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def quantity(value: float, unit: str) -> str:
    """Render a figure in its everyday unit: s, ms or µs, TFLOP/s, GB/s."""
    if unit == "s":
        if value >= 1:
            return f"{value:.3g} s"
        return f"{_digits(value * 1e3)} ms" if value >= 1e-3 else f"{_digits(value * 1e6)} µs"
    if unit == "FLOP/s":
        return f"{_digits(value / 1e12)} TFLOP/s"
    return f"{_digits(value / 1e9)} GB/s"


def spread(f: UsedFigure) -> str:
    """Render a figure's interval, or a dash for a datasheet's single value."""
    if f.estimate.low == f.estimate.high:
        return "— (one value)"
    return f"{quantity(f.estimate.low, f.unit)}–{quantity(f.estimate.high, f.unit)}"


def _provenance(f: UsedFigure) -> str:
    if f.source == "datasheet":
        return "from the datasheet"
    return f"{_SOURCES[f.source]} on {counted(f.machines, 'machine')}"


def source_phrase(use: ProfileUse) -> str:
    """Render the first screen's "modelled on ...": the profile by name (profile_section gives its figures' sources)."""
    return f"Modelled on an {use.name} (profile `{use.file}`)"


def faster_where(
    s: BreakEvenSummary,
    *,
    at: Callable[[float], str],
    always: str,
    until: Callable[[int], str],
    never: Callable[[], str],
) -> str:
    """Say where the GPU turns faster, in one verdict's words for each of the curve's shapes.

    A break-even (`at` of it), faster over the whole sweep (`always`), faster only up to a grid value (`until`
    of it), or never faster (`never`): the shapes analyze.planner.break_even_summary tells apart
    (render.planner's verdicts)."""
    if s.break_even is not None:
        return at(s.break_even)
    if s.gpu_always_faster:
        return always
    if s.gpu_faster_until is not None:
        return until(s.gpu_faster_until)
    return never()


def never_reason(s: BreakEvenSummary) -> str:
    """Why a GPU never turns faster along an axis, from both devices' figures at the sweep's end."""
    steps = s.steps_at_end
    gpu_step = (s.gpu_epoch_s_at_end - s.gpu_extra_s_at_end) / steps
    cpu_step = s.cpu_epoch_s_at_end / steps
    bound = ""
    if s.gpu_host_step_s_at_end is not None and s.gpu_device_step_s_at_end is not None:
        host, device = s.gpu_host_step_s_at_end, s.gpu_device_step_s_at_end
        bound = (
            f" (its host's work; the device's own is {quantity(device, 's')})"
            if host >= device
            else f" (its device's work; the host's is {quantity(host, 's')})"
        )
    why = f"its step costs ~{quantity(gpu_step, 's')}{bound} against this CPU's {quantity(cpu_step, 's')}"
    if gpu_step < cpu_step:  # the steps favour the GPU: its start-up and copies do not
        why = (
            f"its step (~{quantity(gpu_step, 's')}) beats this CPU's ({quantity(cpu_step, 's')}), but its start-up "
            f"and copies add {s.gpu_extra_s_at_end:.3g} s an epoch"
        )
    return f"a GPU like this does not pay off along {AXIS_NOUNS[s.axis]} up to {s.sweep_max:,}: {why}"


def profile_section(use: ProfileUse | None) -> str:
    """Render the profile's figures the planner read, each with its interval, source and reference."""
    if use is None:
        return ""
    rows = [
        (
            f.what,
            f.how,
            quantity(f.estimate.point, f.unit),
            spread(f),
            _provenance(f),
            f.reference,
        )
        for f in use.figures
    ]
    kind = (
        "A GPU step takes the larger of its host's work and its device's: the host queues kernels ahead."
        if use.overlapped
        else "This profile is a CPU's: host and device work are one thread, so a step takes their sum."
    )
    missing = (
        f" The profile lacks: {', '.join(use.missing)}. A missing start-up or kernel floor counts as zero, which "
        "favours the GPU; a missing copy rate is `report.bandwidth_gb_s`."
        if use.missing
        else ""
    )
    measured = (
        f"It was measured by `{use.measured_by}`."
        if use.measured_by
        else "No figure in it was measured by `accel-choice profile`."
    )
    return (
        f"**The GPU: {use.name}, from the profile `{use.file}`** (made {use.made}, {use.machines} machine(s)). "
        f"{measured} {kind} Each interval is the spread the break-evens draw from: a new machine of the kind, "
        f"predicted from the machines' values (one machine: its own values bootstrapped).{missing}\n\n"
        + table(("figure", "how the planner reads it", "value", "95 % spread", "source", "reference"), rows)
        + "\n\n"
    )


def coverage_sentence(coverage: Coverage | None, jobs: int | None, machines: int) -> str:
    """Say what the harness says of this design's intervals (benchmarks/calibration.py --planner)."""
    if coverage is None:
        return (
            f" No simulation covers this design ({jobs} grid jobs, {machines} profile machine(s)): run "
            "`benchmarks/calibration.py --planner` with it to learn how often its intervals hold the truth."
        )
    drawn = (
        f"and a GPU step recorded on {coverage.profile_machines} machine(s) ({coverage.sigma_machine:.0%} apart)"
        if coverage.profile_machines
        else "and the GPU taken as given"
    )
    model = (
        " The simulation takes the profile's model of a GPU step as right; no GPU run has checked it yet."
        if coverage.profile_machines
        else ""
    )
    return (
        f" In {coverage.runs:,} synthetic runs of this design ({coverage.grid_jobs} grid jobs at "
        f"{coverage.sigma_job:.0%} job-to-job spread, {drawn}), a {100 * coverage.level:g} % interval held the true "
        f"break-even {100 * coverage.coverage:.0f} % of the time (`{coverage.command}`).{model}"
    )


def gpu_source_line(break_even: BreakEvenTable) -> str:
    """Where the GPU of the break-evens comes from, for the first screen."""
    if break_even.gpu_profile is not None:
        return source_phrase(break_even.gpu_profile)
    if break_even.gpu_model_source == "fitted":
        return "Modelled on a GPU measured in this run"
    return "Modelled on your assumed GPU (`planner.gpu_assumed`: your numbers, not a measurement)"
