"""The GPU decision sheet of section 28.3.5 in words: each step's title, status and evidence."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.records.decision import GpuVisibility, SheetStep
from accel_choice.render.decision import gpu_line
from accel_choice.render.formatting import table

STEP_TITLES = {
    1: "CPU baseline: load, convert, train, eval, repeats",
    2: "GPU environment: is_available, CUDA version, GPU name",
    3: "Transfer measured on its own (to(device) + synchronize)",
    4: "Same model on the GPU, same batches and repeats",
    5: "Compare the full path, not only the matrix multiply",
    6: "Memory upper bound: Adam fp32 4·P·4 bytes + activations",
}
# A model the formulas do not describe (analyze.figures): its state is counted, not 4·P·4.
COUNTED_STEP_6 = "Memory upper bound: parameters, gradients, buffers and optimizer state (counted) + activations"
MISSING_WORDS = {
    "not_measurable_here": "not measurable here",
    "accelerator_off": "not measured (accelerator: off)",
    "not_planned": "not measured in this run: a GPU is visible, but no GPU job was planned",
}


def status_words(step: SheetStep) -> str:
    missing = MISSING_WORDS.get(step.missing or "", "")
    return {
        "measured": "measured",
        "checked": "checked",
        "computed": "computed",
        "computed_and_measured": "computed and measured",
        "measured_on_both_devices": "measured on both devices",
        "cpu_measured_gpu_missing": f"CPU side measured; GPU side {missing}",
        "missing": missing,
    }[step.status]


def evidence_words(step: SheetStep, gpu: GpuVisibility) -> str:
    if step.step == 1:
        return (
            f"{step.value('load_cells')} load/convert cells and {step.value('training_cells')} training cells, "
            f"repeats [{step.value('repeats')}]"
        )
    if step.step == 2:
        return gpu_line(gpu)
    if step.step == 3:
        if step.status != "measured":
            return "estimated only, from the configured bandwidth (see the theoretical estimates or model figures)"
        return (
            f"matrix host→device {step.value('matrix_gb_per_s'):.2f} GB/s pageable; context start-up "
            f"{step.value('context_startup_s') * 1e3:.0f} ms (fixed cost)"
        )
    if step.step == 4:
        if step.status != "measured":
            return "no GPU timings"
        return f"{step.value('gpu_cells')} GPU cells: {step.value('variants')}"
    if step.step == 5:
        return "full-path table: load + convert + transfer + train + eval (+ fixed start-up)"
    peak = step.value("peak_memory_bytes")
    return (
        f"{step.value('adam_bytes'):,} bytes + {step.value('activation_bytes'):,} bytes of forward activations at "
        f"B={step.value('batch_size')}"
        + (f"; measured peak {peak:,} bytes (torch.cuda.max_memory_allocated)" if peak else "")
    )


def sheet_section(sheet: Sequence[SheetStep], gpu: GpuVisibility, counted: bool = False) -> str:
    """`counted`: the model figures are counted (analyze.figures), so step 6 is not the 4·P·4 formula."""
    titles = {**STEP_TITLES, 6: COUNTED_STEP_6} if counted else STEP_TITLES
    return "## GPU decision sheet (section 28.3.5)\n\n" + table(
        ("step", "what", "status", "evidence"),
        [(s.step, titles[s.step], status_words(s), evidence_words(s, gpu)) for s in sheet],
    )
