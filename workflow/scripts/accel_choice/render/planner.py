"""The planner in the report: the FLOP check, exercise 4's scenario, the cost model and break-even
(its figure: render.break_even_figure)."""

from __future__ import annotations


from accel_choice.io import paths
from accel_choice.records.breakeven import BreakEvenSummary, BreakEvenTable
from accel_choice.records.planner import CostModelTable, FlopCheck, Scenario
from accel_choice.render.formatting import AXIS_NOUNS, counted, ms, number, table
from accel_choice.render.planner_residuals import residual_section
from accel_choice.render.gpu_profile import (
    coverage_sentence,
    faster_where,
    gpu_source_line,
    never_reason,
    profile_section,
)


# An interval is wide when its ends are more than this factor apart, or it reaches outside the sweep.
WIDE_FACTOR = 2.0
_OUTSIDE = {"below_sweep": "below the sweep", "beyond_sweep": "beyond the sweep"}


def _bound(value: float | None, where: str) -> str:
    return f"{value:,.0f}" if value is not None else _OUTSIDE[where]


def interval_text(s: BreakEvenSummary) -> str:
    """Say the interval in words, as "95 % interval L–H"; a bound outside the sweep as "below/beyond the sweep"."""
    low, high = _bound(s.break_even_low, s.break_even_low_where), _bound(s.break_even_high, s.break_even_high_where)
    return f"{100 * s.confidence:g} % interval {low if low == high else f'{low}–{high}'}"


def is_wide(s: BreakEvenSummary) -> bool:
    """Say whether the break-even is known only roughly.

    The break-even is known only roughly: its interval's ends are more than WIDE_FACTOR apart, or one
    lies in the sweep and the other outside it (or they lie on either side). An interval wholly
    below or beyond the sweep is not wide: the GPU is then faster, or not, over the whole sweep."""
    if s.break_even_low is None or s.break_even_high is None:
        return s.break_even_low_where != s.break_even_high_where
    return s.break_even_high > WIDE_FACTOR * s.break_even_low


def break_even_verdict(s: BreakEvenSummary) -> str:
    """Say the break-even in words with its interval.

    The break-even in words with its interval: "GPU faster from about N rows (95 % interval L–H)";
    where the GPU never turns faster, why (render.gpu_profile.never_reason)."""
    where = faster_where(
        s,
        at=lambda at: f"GPU faster from about {at:,.0f} {AXIS_NOUNS[s.axis]}",
        always="GPU faster over the whole range",
        until=lambda until: f"GPU faster only up to {s.axis} = {until:,} (grid value)",
        never=lambda: never_reason(s),
    )
    wide = ""
    if is_wide(s):
        spread = (
            f"its ends {s.break_even_high / s.break_even_low:.1f}× apart"  # type: ignore[operator]
            if s.break_even_low is not None and s.break_even_high is not None
            else "it reaches outside the sweep"
        )
        wide = f"; **wide**: {spread}"
    if s.break_even is None and not s.gpu_always_faster and s.gpu_always_faster_share > 0:
        wide += f"; the GPU wins over the whole range in {s.gpu_always_faster_share:.0%} of refits"
    return f"{where} ({interval_text(s)}{wide})"


def short_verdict(s: BreakEvenSummary) -> str:
    """Say the break-even in a few words for the first screen.

    The break-even in a few words for the first screen: "~N (L–H; wide)", the axis named before it. Why a GPU
    never turns faster, how far apart a wide interval's ends are and the refits' shares: the planner section's
    table (break_even_verdict)."""
    where = faster_where(
        s,
        at=lambda at: f"~{at:,.0f}",
        always="every size of the sweep",
        until=lambda until: f"only up to {until:,}",
        never=lambda: f"none up to {s.sweep_max:,}",
    )
    low, high = _bound(s.break_even_low, s.break_even_low_where), _bound(s.break_even_high, s.break_even_high_where)
    if low == high:
        interval = low
    elif s.break_even_low is None and s.break_even_high is None:
        interval = "below–beyond the sweep"
    else:
        interval = f"{low}–{high}"
    return f"{where} ({interval}{'; wide' if is_wide(s) else ''})"


def answer_lines(break_even: BreakEvenTable | None) -> str:
    """Render the report's first screen on "at what size would a GPU pay off".

    The report's first screen on "at what size would a GPU pay off": each axis's break-even per placement
    with its interval, and the GPU it is modelled on (the planner section gives the model and the reasons)."""
    if break_even is None or not break_even.summary:
        return ""
    summary = sorted(break_even.summary, key=lambda s: (s.axis, s.placement))
    lines = [f"- {AXIS_NOUNS[s.axis]}, {s.placement}: {short_verdict(s)}" for s in summary]
    return (
        f"**At what size would a GPU pay off?** {gpu_source_line(break_even)}, "
        f"{100 * summary[0].confidence:g} % intervals:\n\n" + "\n".join(lines)
    )


def flop_section(result: FlopCheck | None) -> str:
    if not result:
        return ""
    rows = [
        (
            r.batch_size,
            f"{r.counted_forward_per_batch:,}",
            f"{r.counted_backward_per_batch:,}",
            f"{r.counted_per_batch:,}",
            f"{r.formula_3x_per_batch:,}",
            f"{r.counted_over_3x:.3f}",
            ms(r.epoch_s) if r.epoch_s is not None else "—",
            number(r.gflop_per_s_3x, ".3f"),
            number(r.gflop_per_s_counted, ".3f"),
        )
        for r in result.table
    ]
    return (
        "## FLOP formula against torch's FLOP counter\n\n"
        "`torch.utils.flop_counter.FlopCounterMode` run on one forward and one backward pass of the actual model, "
        "against the formula (forward 2·B·Σ d_in·d_out; forward + backward ≈ 3× forward). Achieved GFLOP/s: FLOP of "
        "the whole epoch (the partial last batch counted exactly) over the measured median CPU fast-path epoch.\n\n"
        + table(
            (
                "B",
                "counted fwd/batch",
                "counted bwd/batch",
                "counted total",
                "3× formula",
                "counted / 3×",
                "epoch ms (measured)",
                "GFLOP/s by 3×",
                "GFLOP/s by counter",
            ),
            rows,
        )
        + "\n\nWhy the counter shows less than 3×: backward costs two matrix products per layer - the weight "
        "gradient and the input gradient - so ≈ 2× forward. The first layer's input is the data, which needs no "
        "gradient, so autograd computes only its weight gradient: that layer's forward + backward is 2× its forward, "
        "not 3×, and the counted total is 3× forward − 2·B·d·h. The counter also leaves out what is not a "
        "matrix product (bias adds, ReLU, the loss, Adam's update), which the 3× rule of thumb silently includes "
        "or ignores. Neither count is time: the achieved rate also carries the per-step overhead that the cost model "
        "below separates from the compute."
    )


def scenario_section(plan: Scenario | None) -> str:
    if not plan:
        return ""

    def fits(answer: bool | None) -> str:
        return "unknown" if answer is None else ("yes" if answer else "**no**")

    def gb(n: int | None) -> str:
        return "unknown" if n is None else f"{n / 1e9:,.1f} GB"

    modelled = plan.modelled
    rows = [
        ("input bytes n·d·4", f"{plan.input_bytes:,} B = {plan.input_bytes / 1e9:g} GB"),
        ("fits in host memory", f"{fits(plan.fits_in_host_memory)} (the measuring host: {gb(plan.host_memory_bytes)})"),
        (
            "fits in GPU memory",
            f"{fits(plan.fits_in_gpu_memory)} ({gb(plan.gpu_memory_bytes)}, {plan.gpu_memory_source})",
        ),
        ("parameters P", f"{plan.params:,}"),
        ("Adam fp32 bound 4·P·4", f"{plan.adam_fp32_bytes:,} B ≈ {plan.adam_fp32_bytes / 1024:.0f} KiB"),
        (
            f"activations of one batch (B = {plan.batch_size})",
            f"input {plan.batch_input_bytes:,} + hidden {plan.batch_hidden_bytes:,} + logits "
            f"{plan.batch_logit_bytes:,} = {plan.forward_activation_bytes:,} B forward; ≈ "
            f"{plan.forward_backward_activation_bytes:,} B with backward",
        ),
        (f"transfer at {plan.bandwidth_gb_s:g} GB/s (assumed)", f"{plan.transfer_s:.1f} s per pass over the input"),
        ("steps per epoch", f"{plan.steps_per_epoch:,}"),
        (
            "FLOP per epoch (3× rule / executed, counted)",
            f"{plan.flop_per_epoch_3x:.3e} / {plan.flop_per_epoch_counted:.3e}",
        ),
    ]
    if modelled:
        rows += [
            ("CPU epoch (modelled, extrapolated)", f"{modelled.cpu_epoch_s:,.1f} s"),
            (
                f"GPU epoch, data resident (modelled, GPU {modelled.gpu_model_source})",
                f"{modelled.gpu_epoch_s_resident:,.1f} s",
            ),
            ("GPU epoch, input copied every epoch (modelled)", f"{modelled.gpu_epoch_s_streamed:,.1f} s"),
        ]
    stream = "must be streamed" if plan.must_stream else "can sit whole in memory"
    return (
        f"## Planner: the scale scenario (exercise 4; computed, not measured)\n\n"
        f"n = {plan.rows:,} rows, d = {plan.features}, model {' → '.join(map(str, plan.widths))}, "
        f"B = {plan.batch_size} (config `planner.scenario`). The input {stream}.\n\n"
        + table(("quantity", "value"), rows)
        + "\n\nBefore claiming a speedup at this size, measure: "
        + "; ".join(plan.to_measure)
        + ". "
        "The modelled epochs extrapolate the fitted cost model far beyond the measured grid; read them as an order of "
        "magnitude. They assume the input is already in memory: no term reads it from disk, although "
        + (
            "here it does not fit in host memory."
            if plan.fits_in_host_memory is False
            else "at this size loading may dominate."
        )
    )


def counted_paragraph(cost_model: CostModelTable, break_even: BreakEvenTable) -> str:
    """Say what the planner models when the timed model is not the grid's MLP.

    What the planner models when the timed model is not the grid's MLP: its own rates beside the
    MLPs', and how well they predict its cells (leave-one-out)."""
    models = sorted({p.model for p in cost_model.points if p.features is None})
    if not models:
        return ""
    rates = [
        f"{m.device}: {m.counted_seconds_per_step * 1e6:,.1f} µs per step and "
        f"{number(m.counted_gflop_per_s, '.2f', 'no compute term')} GFLOP/s against the MLPs' "
        f"{m.seconds_per_step * 1e6:,.1f} µs and {number(m.gflop_per_s, '.2f', 'no compute term')} GFLOP/s; "
        f"{m.counted_points} cells, leave-one-out median |error| {m.counted_loo_median_abs_rel_error:.1%}"
        for m in cost_model.models
        if m.counted_points is not None
        and m.counted_seconds_per_step is not None
        and m.counted_loo_median_abs_rel_error is not None
    ]
    axes = {x.axis for x in break_even.summary}
    skipped = [s for s in ("features", "hidden") if s not in axes]
    return (
        f"**The planner models {', '.join(f'`{m}`' for m in models)} from its counted profile** "
        f"(`{paths.MODEL_PROFILE}`): each of its fast-path cells is entered with the steps, FLOP and bytes its "
        "profile counts (`analyze.model_work`: FLOP and activations per sample, optimizer state per step). "
        "The grid's MLPs fit each device's rates; this model keeps their bytes per second and gets its own "
        "seconds per step and per FLOP, fitted to its cells (`analyze.counted_fit`: more modules per step and "
        "other kernels than an MLP's run at other rates): "
        + ("; ".join(rates) if rates else "no cell measured")
        + "".join(f". **{m.device}: {m.counted_warning}**" for m in cost_model.models if m.counted_warning)
        + _gpu_caveat(cost_model)
        + ". The break-even curves grow this model along rows"
        + (" and batch size" if "batch_size" in axes else "")
        + (
            f" ({' and '.join(f'`planner.sweep.{a}`' for a in skipped)}: the textbook MLP's widths, not drawn for it)"
            if skipped
            else ""
        )
        + ". Its cells vary in batch size only, so its own rates split per step from per row, and the curves "
        "extrapolate along rows from one measured row count.\n\n"
    )


def _gpu_caveat(cost_model: CostModelTable) -> str:
    """Where the CPU has this model's own rates and the GPU has not (assumed, or none of its cells timed)."""
    cpu = any(m.device == "cpu" and m.counted_points for m in cost_model.models)
    gpu = [m for m in cost_model.models if m.device != "cpu"]
    if not cpu or any(m.counted_points for m in gpu):
        return ""
    return (
        ". **The GPU side has no rates of this model**"
        + (" (assumed: `planner.gpu_assumed`)" if any(m.source == "assumed" for m in gpu) else "")
        + ": it runs at the MLPs' rates while the CPU runs at this model's own; where this model is slower than "
        "the MLPs on the CPU it would likely be slower on a GPU too, so these break-evens lean towards the GPU"
    )


def planner_section(cost_model: CostModelTable | None, break_even: BreakEvenTable | None) -> str:
    if not cost_model or not break_even:
        return ""
    models = [
        (
            m.device,
            m.source,
            f"{m.seconds_per_step * 1e6:.1f}",
            number(m.gflop_per_s, ".2f", "dropped"),
            number(m.gb_per_s, ".2f", "dropped"),
            m.points or "—",
            number(m.r2, ".4f"),
            number(m.median_abs_rel_error, ".1%"),
            number(m.max_abs_rel_error, ".1%"),
            number(m.loo_median_abs_rel_error, ".1%"),
        )
        for m in cost_model.models
    ]
    warnings = [f"- {m.device}: {m.warning}" for m in cost_model.models if m.warning]
    verdicts = [(s.axis, s.placement, break_even_verdict(s), f"{s.break_even_share:.0%}") for s in break_even.summary]
    points = cost_model.points
    noisy = sum(1 for p in points if p.noisy)
    busy = sum(1 for p in points if p.busy_repeats)
    assumed = break_even.gpu_model_source == "assumed"
    return (
        "## Planner: cost model and break-even (modelled)\n\n"
        + counted_paragraph(cost_model, break_even)
        + "Each device's epoch is modelled as steps · (seconds per step) + FLOP / (FLOP/s) + bytes / (bytes/s). "
        "The FLOP are those the matrix products execute (the counter's, above); the bytes are `costmodel.work`'s. "
        "Each measured device is fitted by non-negative least squares on relative errors. "
        f"The fit points are the planner's timed grid and the benchmark's fast-path cells (`{paths.COST_MODEL}`). "
        'A term the fit dropped is marked "dropped". '
        "Quote the leave-one-out error: each point predicted by a fit without its workload. "
        f"The CPU rates hold for {counted(cost_model.threads, 'torch thread')} (`timing.threads`). "
        f"Points: {len(points)}; flagged noisy: {noisy}; with a busy repeat: {busy}. All stay in the fit.\n\n"
        + table(
            (
                "device",
                "source",
                "µs per step",
                "sustained GFLOP/s",
                "GB/s",
                "points",
                "R²",
                "median |error|",
                "max |error|",
                "leave-one-out median |error|",
            ),
            models,
        )
        + ("\n\n" + "\n".join(warnings) if warnings else "")
        + "\n\n"
        + (residual_section(cost_model) + "\n\n" if cost_model.residuals else "")
        + profile_section(cost_model.gpu_profile)
        + f"The break-evens grow the benchmark workload along one axis at a time (`{paths.BREAK_EVEN_PNG}`: lines "
        "modelled, markers measured). "
        f"They compare a training job of {cost_model.epochs} epochs (`planner.epochs`). "
        f"The GPU pays its start-up once: {cost_model.gpu_startup_s:.2f} s ({cost_model.gpu_startup_source}). "
        f"Its copies run at {cost_model.host_to_device_gb_s:.1f} GB/s ({copy_source(cost_model)}): "
        "once for resident data, every epoch when streamed.\n\n"
        + table(("axis", "GPU placement", "break-even (modelled)", "resamples with a break-even"), verdicts)
        + "\n\n"
        + interval_paragraph(break_even, grid_jobs(cost_model))
        + (
            "\n\n**No GPU was measured: the GPU side is your assumption (`planner.gpu_assumed`), not a measurement, "
            "and so is every break-even above.** Its intervals hold the CPU's timing noise, none of your numbers' own "
            "uncertainty."
            if assumed
            else ""
        )
    )


def copy_source(cost_model: CostModelTable) -> str:
    """Where the copy rate comes from, in words."""
    memory = f", {cost_model.host_to_device_memory} memory" if cost_model.host_to_device_memory else ""
    named = {"assumed": "assumed: `report.bandwidth_gb_s`", "profile": "the profile's"}
    return f"{named.get(cost_model.host_to_device_source, cost_model.host_to_device_source)}{memory}"


def grid_jobs(cost_model: CostModelTable) -> int | None:
    """Return the fewest grid jobs behind a grid fit point (None: no grid point)."""
    return min((p.repeats for p in cost_model.points if p.source == "grid"), default=None)


def interval_paragraph(break_even: BreakEvenTable, jobs: int | None = None) -> str:
    """Say how the intervals were made, which of them are wide, and how few grid jobs they rest on."""
    if not break_even.summary:
        return ""
    first = break_even.summary[0]
    wide = [f"{s.axis} ({s.placement})" for s in break_even.summary if is_wide(s)]
    drawn = (
        f" The profile's figures are drawn in each refit too, for a new machine of the kind (its "
        f"{_profile_machines(break_even)} machine(s) behind the host step)."
        if break_even.gpu_profile
        else ""
    )
    return (
        f"Each interval is the {100 * first.confidence:g} % percentile interval of {first.resamples:,} bootstrap "
        f"refits (`aggregate.confidence`, `aggregate.bootstrap_resamples`; seed {break_even.seed}). "
        f"Each refit draws the timed repeats of {', '.join(break_even.resampled_devices)} with replacement: "
        "a grid job with every workload it timed, a benchmark cell's jobs on their own. "
        f"It refits the cost model to their medians and finds the break-even again.{drawn} "
        "It also scales each fitted curve by one of its model's leave-one-out misses, drawn at random: the "
        "curve's own misfit (the residuals above). "
        "The interval holds this run's spread, not another day's machine state. "
        'A bound among refits where the GPU wins over the whole sweep, or never within it, reads "below" or '
        '"beyond the sweep". '
        "The last column is the share of refits with a break-even inside the sweep. "
        + (
            f"Wide (ends more than {WIDE_FACTOR:g}× apart, or reaching outside the sweep): {', '.join(wide)}. "
            "More grid repeats (`planner.repeats`) narrow the CPU's part."
            if wide
            else f"No interval is wide (ends more than {WIDE_FACTOR:g}× apart, or reaching outside the sweep)."
        )
        + coverage_sentence(break_even.coverage, jobs, _profile_machines(break_even))
    )


def _profile_machines(break_even: BreakEvenTable) -> int:
    return break_even.gpu_profile.host_step_machines if break_even.gpu_profile else 0
