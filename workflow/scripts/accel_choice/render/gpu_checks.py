"""The GPU section's checks in words (issue 42 item 5): each eager fp32 resident cell against the plain loop
timed beside it (as the CPU cells are, render.noise) and against its launch floor, the same training step
replayed as a CUDA graph (records.launch, analyze.gpu_checks). The numbers and codes are the cells'; this
module only says them."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.analyze import accuracy
from accel_choice.analyze.gpu_checks import HOST_BOUND
from accel_choice.records.launch import CellLaunchChecks
from accel_choice.records.training import TrainingCell
from accel_choice.render.formatting import level_words, ms, number, ratio_words, table
from accel_choice.render.noise import versus_plain_loop

BOUND_WORDS = {
    "host": "The host bounds it: the device idles most of each step, and a faster GPU alone would barely shorten it",
    "device": f"The device's own work is most of it: the step lies under {HOST_BOUND:g}× its floor",
    "unsettled": f"Whether the host bounds it is unsettled: the interval reaches {HOST_BOUND:g}×",
}
STATUS_WORDS = {
    "no_cuda_graphs": "this device has no CUDA graphs, so there is no launch floor. The eager step stands alone",
    "capture_failed": "the step could not be captured as a CUDA graph, so there is no launch floor. The job's log says why",
}


def us(seconds: float | None) -> str:
    """Seconds in microseconds, one decimal; "—" for none."""
    return number(None if seconds is None else seconds * 1e6, ",.1f")


def launch_line(cell: TrainingCell) -> str:
    """Say what one cell's launch floor says, from its numbers and status codes."""
    launch: CellLaunchChecks = cell.launch  # type: ignore[assignment]
    where = f"B = {cell.batch_size}"
    if launch.step_over_launch_floor is None or launch.launch_bound is None:
        return f"- {where}: {STATUS_WORDS[launch.status]}."
    said = ratio_words(launch.step_over_launch_floor)
    return (
        f"- {where}: this GPU step takes {said} its launch floor (the same step replayed as a CUDA graph). "
        f"{BOUND_WORDS[launch.launch_bound]}."
    )


def gpu_checks_section(cells: Sequence[TrainingCell]) -> str:
    """Render the GPU cells with a plain-loop reference or launch checks.

    The GPU cells with a plain-loop reference or launch checks: one table row each, then a line per cell
    on its launch floor; "" where no cell has either."""
    checked = [c for c in cells if c.launch is not None or c.epoch_s_over_reference is not None]
    if not checked:
        return ""
    rows = []
    for c in checked:
        plain = versus_plain_loop(c) if c.epoch_s_over_reference is not None else (ms(c.epoch_s.point), "—", "—", "")
        launch = c.launch
        ratio = None if launch is None else launch.step_over_launch_floor
        rows.append(
            (
                c.batch_size,
                *plain,
                f"{c.step_us:,.1f}",
                us(None if launch is None else launch.eager_step_s_median),
                us(None if launch is None else launch.launch_floor_s_median),
                "—" if ratio is None else ratio_words(ratio),
                number(None if launch is None else launch.step_kernels_median, ",.0f"),
                us(None if launch is None else launch.step_kernels_device_s_median),
            )
        )
    counted = {c.launch.counted for c in checked if c.launch is not None}
    kernels = "kernels" if counted == {"cuda_kernels"} else "ops" if counted == {"cpu_ops"} else "kernels or ops"
    level = level_words(checked[0].confidence)
    headers = (
        "B",
        "pipeline epoch (ms)",
        "plain loop (ms)",
        "pipeline / plain",
        f"vs ±{accuracy.TOLERANCE:.0%}",
        "pipeline step (µs)",
        "eager step (µs)",
        "launch floor (µs)",
        "step / floor",
        f"{kernels} per step",
        "their device time (µs)",
    )
    return (
        "### Checked against a plain loop and the launch floor\n\n"
        "Each GPU job also timed the loop a user writes for its eager fp32 resident variant: zero_grad, forward, "
        "loss, backward and step over the same batches sliced on the device, under `torch.utils.benchmark.Timer`, "
        "in its middle round right after the variant's own epoch (the CPU cells' Accuracy check). After its epochs "
        "it timed the same training step on one static batch three ways. Eager: run as the loop runs it. Launch "
        "floor: captured once as a CUDA graph and replayed, the device's own time without the host's Python and "
        "dispatch. And the kernels one warmed step launches, counted by `torch.profiler` with no clock running. "
        f"Both ratios are paired by job, with their {level} t interval. Pipeline / plain is judged against "
        f"±{accuracy.TOLERANCE:.0%}; a step at {HOST_BOUND:g}× its floor or more leaves the device idle most of "
        "the time.\n\n" + table(headers, rows) + "\n\n" + "\n".join(launch_line(c) for c in checked if c.launch)
    ).rstrip()
