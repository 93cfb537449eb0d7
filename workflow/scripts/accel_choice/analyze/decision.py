"""The GPU decision sheet of section 28.3.5 and a verdict that claims only what was measured."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accel_choice.analyze import theory

MEASURED = "measured"
COMPUTED = "computed"
CHECKED = "checked"
NOT_MEASURABLE = "not measurable here"
NOT_MEASURED = "not measured (accelerator: off)"
NOT_RUN = "not measured in this run: a GPU is visible, but no GPU job was planned"


def _gpu_line(probe: dict[str, Any] | None, environment: dict[str, Any]) -> tuple[bool, str]:
    """Whether a GPU is visible, in words, from the device probe (or the environment record)."""
    if probe is not None:
        if probe["cuda_devices"]:
            names = ", ".join(d["name"] for d in probe["cuda_devices"])
            return True, f"CUDA {probe['cuda_version']} visible: {names} (driver {probe['nvidia_driver'] or 'unknown'})"
        if probe["mps_available"]:
            return True, "Apple MPS visible"
        return False, f"no CUDA or MPS device visible (torch {probe['torch_version']}, CUDA build: {probe['cuda_version'] or 'none'})"
    if environment.get("is_cuda_available"):
        return True, f"CUDA {environment.get('cuda_compiled_version')} visible: {', '.join(environment.get('nvidia_gpu_models') or [])}"
    return False, f"no CUDA device visible (torch {environment.get('torch_version')}, CUDA build: {environment.get('cuda_compiled_version') or 'none'})"


def memory_bound_bytes(widths: Sequence[int], batch_size: int, resident_rows: int = 0) -> int:
    """Adam fp32 (4·P·4) + forward and backward activations (2× forward) + resident data."""
    return (
        theory.adam_fp32_bytes(widths)
        + 2 * theory.activation_bytes(batch_size, widths)
        + theory.input_bytes(resident_rows, widths[0] + 1)
    )


def decision_sheet(
    train_table: Sequence[dict[str, Any]],
    load_table: Sequence[dict[str, Any]],
    environment: dict[str, Any],
    widths: Sequence[int],
    batch_sizes: Sequence[int],
    *,
    probe: dict[str, Any] | None = None,
    transfers: dict[str, Any] | None = None,
    accelerator: str = "auto",
) -> list[dict[str, str]]:
    """The six steps, each with an honest status and the evidence behind it."""
    visible, gpu_line = _gpu_line(probe, environment)
    gpu_rows = [r for r in train_table if r["device"] != "cpu"]
    cpu_rows = [r for r in train_table if r["device"] == "cpu"]
    if accelerator == "off":
        missing = NOT_MEASURED
    elif visible:  # e.g. the probe ran on a GPU node while the submit host planned no GPU jobs
        missing = NOT_RUN
    else:
        missing = NOT_MEASURABLE
    repeats = sorted({row["repeats"] for row in cpu_rows})
    largest = max(batch_sizes)
    if transfers:
        matrix = next(r for r in transfers["copies"] if r["what"] == "matrix" and r["memory"] == "pageable")
        transfer_step = (MEASURED, f"matrix host→device {matrix['gb_per_s']:.2f} GB/s pageable; context start-up "
                                   f"{transfers['context_startup_s']['median'] * 1e3:.0f} ms (fixed cost)")
    else:
        transfer_step = (missing, "estimated only, from the configured bandwidth (see Theoretical estimates)")
    if gpu_rows:
        variants = sorted({f"{r['precision']}/{r['placement']}" for r in gpu_rows})
        gpu_step = (MEASURED, f"{len(gpu_rows)} GPU cells: {', '.join(variants)}")
        path_status = MEASURED + " on both devices"
        peak = max((r["peak_memory_bytes_max"] or 0) for r in gpu_rows)
        memory_evidence = f"; measured peak {peak:,} bytes (torch.cuda.max_memory_allocated)" if peak else ""
    else:
        gpu_step = (missing, "no GPU timings")
        path_status = f"CPU side measured; GPU side {missing}"
        memory_evidence = ""
    return [
        {
            "step": "1",
            "title": "CPU baseline: load, convert, train, eval, repeats",
            "status": MEASURED,
            "evidence": f"{len(load_table)} load/convert cells and {len(cpu_rows)} training cells, repeats {repeats}",
        },
        {"step": "2", "title": "GPU environment: is_available, CUDA version, GPU name", "status": CHECKED, "evidence": gpu_line},
        {"step": "3", "title": "Transfer measured on its own (to(device) + synchronize)", "status": transfer_step[0],
         "evidence": transfer_step[1]},
        {"step": "4", "title": "Same model on the GPU, same batches and repeats", "status": gpu_step[0], "evidence": gpu_step[1]},
        {"step": "5", "title": "Compare the full path, not only the matrix multiply", "status": path_status,
         "evidence": "full-path table: load + convert + transfer + train + eval (+ fixed start-up)"},
        {
            "step": "6",
            "title": "Memory upper bound: Adam fp32 4·P·4 bytes + activations",
            "status": COMPUTED + (" and measured" if memory_evidence else ""),
            "evidence": f"{theory.adam_fp32_bytes(widths):,} bytes + {theory.activation_bytes(largest, widths):,} bytes of "
                        f"forward activations at B={largest}{memory_evidence}",
        },
    ]


def compare_devices(full_path_rows: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any] | None:
    """Each device's fastest one-epoch full path (GPU with its fixed start-up), the speedup
    CPU/GPU with its spread, and whether the GPU wins: speedup above `threshold` and the
    GPU's slowest total below the CPU's fastest."""
    cpu = [r for r in full_path_rows if r["device"] == "cpu"]
    gpu = [r for r in full_path_rows if r["device"] != "cpu"]
    if not cpu or not gpu:
        return None
    best_cpu = min(cpu, key=lambda r: r["total_s"])
    best_gpu = min(gpu, key=lambda r: r["total_with_startup_s"])
    startup = best_gpu["startup_s"]
    speedup = best_cpu["total_s"] / best_gpu["total_with_startup_s"]
    low = best_cpu["total_min_s"] / (best_gpu["total_max_s"] + startup)
    high = best_cpu["total_max_s"] / (best_gpu["total_min_s"] + startup)
    overlap = best_gpu["total_max_s"] + startup >= best_cpu["total_min_s"]
    per_epoch_gain = best_cpu["total_s"] - best_gpu["total_s"]
    return {
        "cpu": best_cpu,
        "gpu": best_gpu,
        "speedup": speedup,
        "speedup_range": [low, high],
        "speedup_without_startup": best_cpu["total_s"] / best_gpu["total_s"],
        "spreads_overlap": overlap,
        "threshold": threshold,
        "gpu_wins": speedup > threshold and not overlap,
        "break_even_epochs": startup / per_epoch_gain if per_epoch_gain > 0 else None,
    }


def describe(row: dict[str, Any]) -> str:
    if row["device"] == "cpu":
        return f"CPU {row['format']} + {row['loader']} at B={row['batch_size']}"
    return f"{row['device'].upper()} {row['precision']} {row['placement']} at B={row['batch_size']}"


def verdict(
    train_table: Sequence[dict[str, Any]],
    full_path_rows: Sequence[dict[str, Any]],
    environment: dict[str, Any],
    widths: Sequence[int],
    *,
    probe: dict[str, Any] | None = None,
    threshold: float = 1.5,
) -> dict[str, Any]:
    """GPU only when it was measured and beat the CPU by more than `threshold` on the full
    path with non-overlapping spreads; otherwise CPU with the reason. No CUDA, no claim."""
    cuda_visible, gpu_line = _gpu_line(probe, environment)
    cpu_train = [r for r in train_table if r["device"] == "cpu"]
    cpu_path = [r for r in full_path_rows if r["device"] == "cpu"]
    best = min(cpu_path, key=lambda r: r["total_s"])
    fastest_train = min(cpu_train, key=lambda r: r["epoch_s_median"])
    smallest = min(cpu_train, key=lambda r: (r["batch_size"], r["loader"] != "fastpath"))
    largest = max(cpu_train, key=lambda r: (r["batch_size"], r["loader"] == "fastpath"))
    epoch_flop = theory.forward_backward_flops(fastest_train["samples"], widths)
    achieved = epoch_flop / fastest_train["epoch_s_median"]
    reasons = [
        f"Fastest CPU full path: {best['format']} + {best['loader']} at B={best['batch_size']}, "
        f"{best['total_s'] * 1e3:.1f} ms per epoch, of which training is {best['train_share']:.0%}.",
        f"The fastest CPU epoch ({fastest_train['loader']}, B={fastest_train['batch_size']}) does ~{epoch_flop / 1e6:.0f} MFLOP "
        f"in {fastest_train['epoch_s_median'] * 1e3:.1f} ms: {achieved / 1e9:.2f} GFLOP/s achieved (3× rule; "
        "the FLOP-counter section gives the executed count).",
        f"From B={smallest['batch_size']} to B={largest['batch_size']} ({largest['batch_size'] / smallest['batch_size']:.0f}× "
        f"the samples per step) the time per optimizer step grew {largest['step_us_median'] / smallest['step_us_median']:.1f}×: "
        "the step is bound by fixed per-step overhead (Python, dispatch), which a faster arithmetic unit does not remove.",
        f"Memory never forces a GPU here: the Adam fp32 bound is {theory.adam_fp32_bytes(widths):,} bytes.",
    ]
    comparison = compare_devices(full_path_rows, threshold)
    if comparison is None:
        claim = (
            f"{gpu_line}, but no GPU timing was taken in this run: no speedup is claimed."
            if cuda_visible else "No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed."
        )
        return {"device": "CPU", "gpu_measured": False, "cuda_visible": cuda_visible, "claim": claim, "reasons": reasons,
                "comparison": None}
    low, high = comparison["speedup_range"]
    measured = (
        f"Measured full path of one epoch, fixed start-up included: best CPU ({describe(comparison['cpu'])}) "
        f"{comparison['cpu']['total_s'] * 1e3:.1f} ms vs best GPU ({describe(comparison['gpu'])}) "
        f"{comparison['gpu']['total_with_startup_s'] * 1e3:.1f} ms, of which {comparison['gpu']['startup_s'] * 1e3:.1f} ms "
        f"start-up: speedup {comparison['speedup']:.2f}× (spread {low:.2f}–{high:.2f}×; without start-up "
        f"{comparison['speedup_without_startup']:.2f}×)."
    )
    if comparison["gpu_wins"]:
        device = "GPU"
        claim = f"{measured} This exceeds the {threshold:g}× threshold and the spreads do not overlap."
    else:
        device = "CPU"
        why = (f"below the {threshold:g}× threshold" if comparison["speedup"] <= threshold
               else "the CPU and GPU spreads overlap")
        claim = f"{measured} The GPU does not pay off: {why}."
    if comparison["break_even_epochs"] is not None:
        reasons.append(f"Per epoch (start-up excluded) the GPU path is faster; the start-up is repaid after "
                       f"{comparison['break_even_epochs']:.1f} epochs of this size.")
    return {"device": device, "gpu_measured": True, "cuda_visible": cuda_visible, "claim": claim, "reasons": reasons,
            "comparison": comparison}
