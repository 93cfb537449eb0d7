"""The FLOP formulas of `theory` against torch's FlopCounterMode on the real model.

The counter shows less than the 3× rule because the first layer's backward computes only
its weight gradient (2·B·d·h FLOP), not an input gradient: the input needs no gradient.
For features → hidden → 1 the counted total is therefore 3×forward − 2·B·d·h, which
theory.forward_backward_flops_counted gives exactly. The counter counts matrix-multiply-like
operations only, so bias additions, ReLU, the loss and the Adam update add nothing to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from accel_choice.analyze import theory
from accel_choice.measure import model
from accel_choice.records.planner import FlopRow


def counted_training_flops(features: int, hidden: int, batch_size: int, seed: int = 0) -> dict[str, int]:
    """Counted forward and backward FLOP of one training batch, next to the formulas.

    Uses the model and loss of measure.py (BCEWithLogitsLoss); the input does not require grad.
    """
    net = model.build_model(features, hidden, seed)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, features, generator=generator)
    y = (torch.rand(batch_size, 1, generator=generator) > 0.5).float()
    with FlopCounterMode(display=False) as forward_counter:
        loss = nn.BCEWithLogitsLoss()(net(x), y)
    with FlopCounterMode(display=False) as backward_counter:
        loss.backward()
    forward, backward = forward_counter.get_total_flops(), backward_counter.get_total_flops()
    widths = (features, hidden, 1)
    return {
        "forward": forward,
        "backward": backward,
        "total": forward + backward,
        "formula_forward": theory.forward_flops(batch_size, widths),
        "formula_3x": theory.forward_backward_flops(batch_size, widths),
        "formula_counted": theory.forward_backward_flops_counted(batch_size, widths),
    }


def _epoch_flops(per_batch: Mapping[int, int], rows: int, batch_size: int) -> int:
    """Full batches at the per-batch count plus the partial last batch at its own size."""
    full_batches, last = divmod(rows, batch_size)
    return full_batches * per_batch[batch_size] + (per_batch[last] if last else 0)


def _gflop_per_s(flop: int, seconds: float | None) -> float | None:
    return None if seconds is None else flop / seconds / 1e9


def flop_table(
    features: int,
    hidden: int,
    batch_sizes: Sequence[int],
    rows: int,
    epoch_seconds: Mapping[int, float] | None,
) -> list[FlopRow]:
    """Return the FLOP table, one row per batch size.

    One row per batch size: counted and formula FLOP per batch and per epoch, and the
    achieved GFLOP/s of a measured epoch by both counts (None without a measured time)."""
    rows_out = []
    for batch_size in batch_sizes:
        last = rows % batch_size
        counts = {size: counted_training_flops(features, hidden, size) for size in {batch_size, last} if size}
        counted = {size: c["total"] for size, c in counts.items()}
        rule = {size: c["formula_3x"] for size, c in counts.items()}
        seconds = _measured_seconds(epoch_seconds, batch_size)
        epoch_counted, epoch_3x = _epoch_flops(counted, rows, batch_size), _epoch_flops(rule, rows, batch_size)
        rows_out.append(
            FlopRow(
                batch_size=batch_size,
                rows=rows,
                steps=theory.steps_per_epoch(rows, batch_size),
                last_batch_rows=last or batch_size,
                counted_forward_per_batch=counts[batch_size]["forward"],
                counted_backward_per_batch=counts[batch_size]["backward"],
                counted_per_batch=counted[batch_size],
                formula_3x_per_batch=rule[batch_size],
                counted_over_3x=counted[batch_size] / rule[batch_size],
                epoch_flop_counted=epoch_counted,
                epoch_flop_3x=epoch_3x,
                epoch_s=seconds,
                gflop_per_s_3x=_gflop_per_s(epoch_3x, seconds),
                gflop_per_s_counted=_gflop_per_s(epoch_counted, seconds),
            )
        )
    return rows_out


def _measured_seconds(epoch_seconds: Mapping[int, float] | None, batch_size: int) -> float | None:
    if epoch_seconds is None or batch_size not in epoch_seconds:
        return None
    seconds = float(epoch_seconds[batch_size])
    if not seconds > 0:
        raise ValueError(f"epoch time for batch size {batch_size} must be > 0 s, got {seconds}")
    return seconds
