"""The report's section on the timed model: the textbook's formulas (section 28.3.4) for its MLP,
the figures profile_model counted for a user's model."""

from __future__ import annotations

from accel_choice.io import paths
from accel_choice.records.decision import TheoryTable
from accel_choice.render.formatting import number, table


def theory_section(theory_table: TheoryTable) -> str:
    t = theory_table
    rows = [
        (
            r.batch_size,
            r.steps_per_epoch,
            f"{r.forward_flop_per_batch:,}",
            f"{r.forward_backward_flop_per_batch_3x:,}",
            f"{r.forward_backward_flop_per_batch_counted:,}",
            f"{r.forward_backward_flop_per_epoch_3x / 1e6:.1f}",
            f"{r.forward_activation_bytes_per_batch:,}",
            f"{r.batch_transfer_s_assumed * 1e6:.2f}",
            number(r.achieved_gflop_per_s_3x, ".2f", ""),
        )
        for r in t.table
    ]
    formula = t.figures == "formula"
    return (
        ("## Theoretical estimates (computed, not measured)\n\n" if formula else "## Model figures (counted)\n\n")
        + (
            f"Model {t.model_label}: P = {t.params:,} parameters; Adam fp32 bound 4·P·4 = {t.adam_fp32_bytes:,} bytes. "
            if formula
            else f"Model `{t.model_label}`, counted on the module ({paths.MODEL_PROFILE_CSV}; no formula describes "
            f"it): P = {t.params:,} parameters; parameters, gradients, buffers and optimizer state {t.adam_fp32_bytes:,} "
            "bytes; FLOP from torch's FlopCounterMode, activations from forward hooks. "
        )
        + f"Benchmark matrix {t.rows:,} × {t.input_bytes // t.rows // 4} fp32 = {t.input_bytes:,} bytes: "
        f"{t.input_transfer_s_assumed * 1e3:.3f} ms to transfer at "
        f"{t.bandwidth_gb_s:g} GB/s (assumed effective bandwidth, `report.bandwidth_gb_s`).\n\n"
        + table(
            (
                "B",
                "steps/epoch",
                "fwd FLOP/batch",
                "fwd+bwd FLOP/batch (3×)",
                "fwd+bwd counted*",
                "fwd+bwd MFLOP/epoch",
                "fwd activation bytes/batch",
                "batch transfer µs",
                "achieved GFLOP/s by the 3× rule (CPU fast path, measured epoch)",
            ),
            rows,
        )
        + (
            "\n\n*What a FLOP counter sees: the first layer computes no input gradient, so backward is below 2× "
            "forward. Backward activations are of a similar size to the forward ones (about 2× in total)."
            if formula
            else "\n\n*Counted (FlopCounterMode, matrix products only); the 3× columns apply the rule to the counted forward."
        )
    )
