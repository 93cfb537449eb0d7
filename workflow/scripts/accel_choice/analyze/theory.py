"""Closed-form estimates of section 28.3.3: parameters, FLOP, memory, transfer time.

A multilayer perceptron is described by its layer widths, e.g. (32, 48, 1).
Every function is exact arithmetic on integers where the quantity is a count.
"""

from __future__ import annotations

from collections.abc import Sequence

FP32_BYTES = 4


def _layer_pairs(widths: Sequence[int]) -> list[tuple[int, int]]:
    if len(widths) < 2 or any(w <= 0 for w in widths):
        raise ValueError(f"layer widths must be >= 2 positive integers, got {list(widths)}")
    return list(zip(widths[:-1], widths[1:]))


def param_count(widths: Sequence[int]) -> int:
    """Weights plus biases: P = 32·48 + 48 + 48·1 + 1 = 1633 for (32, 48, 1)."""
    return sum(d_in * d_out + d_out for d_in, d_out in _layer_pairs(widths))


def forward_flops(batch_size: int, widths: Sequence[int]) -> int:
    """Linear-layer forward FLOP: 2·B·Σ d_in·d_out (a multiply-add is two FLOP)."""
    return 2 * batch_size * sum(d_in * d_out for d_in, d_out in _layer_pairs(widths))


def forward_backward_flops(batch_size: int, widths: Sequence[int]) -> int:
    """Return the FLOP by the specification's rule of thumb: backward ≈ 2× forward, so the total ≈ 3× forward."""
    return 3 * forward_flops(batch_size, widths)


def forward_backward_flops_counted(batch_size: int, widths: Sequence[int]) -> int:
    """Return what a FLOP counter sees when the input needs no gradient.

    Backward computes the weight gradient of every layer (2·B·d_in·d_out each) but the
    input gradient only of layers after the first, so the total is below 3× forward.
    """
    pairs = _layer_pairs(widths)
    weight_grads = 2 * batch_size * sum(d_in * d_out for d_in, d_out in pairs)
    input_grads = 2 * batch_size * sum(d_in * d_out for d_in, d_out in pairs[1:])
    return forward_flops(batch_size, widths) + weight_grads + input_grads


def adam_fp32_bytes(widths: Sequence[int]) -> int:
    """Parameters, gradients and Adam's two moments, all fp32: 4·P·4 bytes."""
    return 4 * param_count(widths) * FP32_BYTES


def activation_bytes(batch_size: int, widths: Sequence[int], dtype_bytes: int = FP32_BYTES) -> int:
    """Forward activations of one batch: input, each hidden output and the logits.

    For (32, 48, 1) at B = 512: 65,536 + 98,304 + 2,048 bytes. Backward needs
    buffers of a similar size; the report states that as a factor, not a measurement.
    """
    return batch_size * sum(widths) * dtype_bytes


def input_bytes(rows: int, features: int, dtype_bytes: int = FP32_BYTES) -> int:
    return rows * features * dtype_bytes


def transfer_seconds(n_bytes: int, bandwidth_gb_per_s: float) -> float:
    """Time to move `n_bytes` at an effective bandwidth in decimal GB/s (1 GB = 1e9 bytes)."""
    if bandwidth_gb_per_s <= 0:
        raise ValueError(f"bandwidth must be > 0 GB/s, got {bandwidth_gb_per_s}")
    return n_bytes / (bandwidth_gb_per_s * 1e9)


def steps_per_epoch(rows: int, batch_size: int) -> int:
    """Optimizer steps in one epoch, the partial last batch included."""
    return -(-rows // batch_size)


def gradient_variance_ratio(batch_a: int, batch_b: int) -> float:
    """Var(g_b) / Var(g_a) under the 1/B rule for i.i.d. per-sample gradients."""
    return batch_a / batch_b


def memory_bound_bytes(widths: Sequence[int], batch_size: int, rows: int, resident: bool) -> int:
    """Return what one timed epoch must hold on the device, from the formulas.

    What one timed epoch must hold on the device, from the formulas: Adam fp32 (4·P·4), the
    forward and backward activations (2× forward, the batch's input included) and the third
    hidden-size buffer backward holds at once (the ReLU's output, its gradient and the
    pre-activation's), the batch in use and the next one (copied or gathered while the last is
    alive: two batches beside the one counted in the activations), the per-step loss buffer (one
    fp32 per step); with the data resident, the matrix and target and the shuffled index (int64
    per row)."""
    features = widths[0] + 1  # the features and the target column
    on_device = input_bytes(rows, features) + rows * 8 if resident else 0
    return (
        adam_fp32_bytes(widths)
        + 2 * activation_bytes(batch_size, widths)
        + batch_size * max(widths[1:-1], default=0) * FP32_BYTES
        + 2 * input_bytes(batch_size, features)
        + steps_per_epoch(rows, batch_size) * FP32_BYTES
        + on_device
    )
