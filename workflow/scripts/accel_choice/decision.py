"""The GPU decision sheet of section 28.3.5 and a verdict that claims only what was measured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import theory

MEASURED = "measured"
COMPUTED = "computed"
CHECKED = "checked"
NOT_MEASURABLE = "not measurable here"


def _gpu_status(environment: dict[str, Any]) -> tuple[bool, str]:
    if environment.get("is_cuda_available"):
        names = ", ".join(environment.get("nvidia_gpu_models") or []) or "unnamed device"
        return True, f"CUDA {environment.get('cuda_compiled_version')} visible: {names}"
    return False, f"no CUDA device visible (torch {environment.get('torch_version')}, CUDA build: {environment.get('cuda_compiled_version') or 'none'})"


def decision_sheet(
    train_table: Sequence[dict[str, Any]],
    load_table: Sequence[dict[str, Any]],
    environment: dict[str, Any],
    widths: Sequence[int],
    batch_sizes: Sequence[int],
) -> list[dict[str, str]]:
    """The six steps, each with an honest status and the evidence behind it."""
    cuda_visible, gpu_line = _gpu_status(environment)
    gpu_missing = NOT_MEASURABLE if not cuda_visible else "not measured: this workflow version has no GPU timing rules"
    repeats = sorted({row["repeats"] for row in train_table})
    largest = max(batch_sizes)
    return [
        {
            "step": "1",
            "title": "CPU baseline: load, convert, train, eval, repeats",
            "status": MEASURED,
            "evidence": f"{len(load_table)} load/convert cells and {len(train_table)} training cells, repeats {repeats}",
        },
        {"step": "2", "title": "GPU environment: is_available, CUDA version, GPU name", "status": CHECKED, "evidence": gpu_line},
        {
            "step": "3",
            "title": "Transfer measured on its own (to(device) + synchronize)",
            "status": gpu_missing,
            "evidence": "estimated only, from the configured bandwidth (see Theoretical estimates)",
        },
        {"step": "4", "title": "Same model on the GPU, same batches and repeats", "status": gpu_missing, "evidence": "no GPU timings"},
        {
            "step": "5",
            "title": "Compare the full path, not only the matrix multiply",
            "status": "CPU side measured; GPU side " + gpu_missing,
            "evidence": "full-path table below: load + convert + train + eval",
        },
        {
            "step": "6",
            "title": "Memory upper bound: Adam fp32 4·P·4 bytes + activations",
            "status": COMPUTED,
            "evidence": f"{theory.adam_fp32_bytes(widths):,} bytes + {theory.activation_bytes(largest, widths):,} bytes of forward activations at B={largest}",
        },
    ]


def verdict(
    train_table: Sequence[dict[str, Any]],
    full_path_rows: Sequence[dict[str, Any]],
    environment: dict[str, Any],
    widths: Sequence[int],
) -> dict[str, Any]:
    """CPU unless a GPU was measured and beat it; without CUDA no speedup is claimed at all."""
    cuda_visible, gpu_line = _gpu_status(environment)
    best = min(full_path_rows, key=lambda r: r["total_s"])
    fastest_train = min(train_table, key=lambda r: r["epoch_s_median"])
    smallest = min(train_table, key=lambda r: (r["batch_size"], r["loader"] != "fastpath"))
    largest = max(train_table, key=lambda r: (r["batch_size"], r["loader"] == "fastpath"))
    epoch_flop = theory.forward_backward_flops(fastest_train["samples"], widths)
    achieved = epoch_flop / fastest_train["epoch_s_median"]
    step_growth = largest["step_us_median"] / smallest["step_us_median"]
    batch_growth = largest["batch_size"] / smallest["batch_size"]
    reasons = [
        f"Fastest measured full path: {best['format']} + {best['loader']} at B={best['batch_size']}, "
        f"{best['total_s'] * 1e3:.1f} ms per epoch, of which training is {best['train_share']:.0%}.",
        f"The fastest epoch ({fastest_train['loader']}, B={fastest_train['batch_size']}) does ~{epoch_flop / 1e6:.0f} MFLOP "
        f"in {fastest_train['epoch_s_median'] * 1e3:.1f} ms: {achieved / 1e9:.2f} GFLOP/s achieved.",
        f"From B={smallest['batch_size']} to B={largest['batch_size']} ({batch_growth:.0f}× the samples per step) the time per "
        f"optimizer step grew {step_growth:.1f}×: the step is bound by fixed per-step overhead (Python, dispatch), "
        "which a faster arithmetic unit does not remove.",
        f"Memory never forces a GPU here: the Adam fp32 bound is {theory.adam_fp32_bytes(widths):,} bytes.",
    ]
    if not cuda_visible:
        claim = "No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed."
    else:
        claim = f"{gpu_line}, but no GPU timing was taken by this workflow version: no speedup is claimed."
    return {"device": "CPU", "gpu_measured": False, "cuda_visible": cuda_visible, "claim": claim, "reasons": reasons}
