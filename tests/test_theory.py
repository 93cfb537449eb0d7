"""Closed-form estimates against the worked numbers of section 28.3 (exercises 1 and 4, 28.3.3)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from accel_choice.measure import model
from accel_choice.analyze import theory

SPEC = (32, 48, 1)  # the textbook model: 32 -> 48 -> 1
EX4 = (256, 128, 1)  # exercise 4: 256 -> 128 -> 1


# --- exercise 1 ------------------------------------------------------------------------


def test_param_count_of_textbook_model_is_1633():
    assert theory.param_count(SPEC) == 32 * 48 + 48 + 48 * 1 + 1 == 1633


def test_param_count_matches_torch_model():
    net = model.build_model(32, 48, seed=0)
    assert sum(p.numel() for p in net.parameters()) == theory.param_count(SPEC)
    assert model.layer_widths(net) == SPEC


def test_forward_flops_b128_is_405504():
    assert theory.forward_flops(128, SPEC) == 2 * 128 * 1584 == 405_504


def test_forward_backward_flops_b128_is_1216512():
    assert theory.forward_backward_flops(128, SPEC) == 1_216_512


def test_forward_flops_is_3168_per_sample():
    for b in (1, 32, 64, 512):
        assert theory.forward_flops(b, SPEC) == 3168 * b


def test_gradient_variance_ratio_512_over_128_is_quarter():
    ratio = theory.gradient_variance_ratio(128, 512)  # Var(g_512) / Var(g_128)
    assert ratio == pytest.approx(0.25)
    assert math.sqrt(ratio) == pytest.approx(0.5)  # standard deviation halves


def test_gradient_variance_ratio_direction():
    # a larger second batch means a smaller variance: the ratio is below 1
    assert theory.gradient_variance_ratio(32, 64) == pytest.approx(0.5)
    assert theory.gradient_variance_ratio(512, 128) == pytest.approx(4.0)


# --- section 28.3.3 --------------------------------------------------------------------


def test_batch_512_is_about_4_9_million_flop():
    flop = theory.forward_backward_flops(512, SPEC)
    assert flop == 3 * 3168 * 512 == 4_866_048
    assert round(flop / 1e6, 1) == 4.9


def test_epoch_of_8192_rows_is_16_batches_and_about_78_mflop():
    steps = theory.steps_per_epoch(8192, 512)
    assert steps == 16
    epoch = steps * theory.forward_backward_flops(512, SPEC)
    assert epoch == 77_856_768
    assert round(epoch / 1e6) == 78
    # the per-sample count gives the same epoch total
    assert theory.forward_backward_flops(8192, SPEC) == epoch


def test_adam_fp32_bytes_textbook_model_is_about_26_kib():
    assert theory.adam_fp32_bytes(SPEC) == 4 * 1633 * 4 == 26_128
    assert round(theory.adam_fp32_bytes(SPEC) / 1024) == 26
    # the parameters alone are 6,532 bytes (about 6.5 kB); Adam's bound is four times that
    assert theory.param_count(SPEC) * theory.FP32_BYTES == 6_532
    assert theory.adam_fp32_bytes(SPEC) == 4 * 6_532


def test_activation_bytes_b512_textbook_model():
    assert theory.activation_bytes(512, SPEC) == 65_536 + 98_304 + 2_048 == 165_888
    assert theory.activation_bytes(512, SPEC) < 512 * 1024  # below half a megabyte


def test_activation_bytes_dtype_scales():
    assert theory.activation_bytes(512, SPEC, dtype_bytes=2) == 165_888 // 2


# --- exercise 4 ------------------------------------------------------------------------


def test_exercise4_input_tensor_is_51_2_gb():
    assert theory.input_bytes(50_000_000, 256) == 51_200_000_000


def test_exercise4_param_count_is_33025():
    assert theory.param_count(EX4) == 256 * 128 + 128 + 128 * 1 + 1 == 33_025


def test_exercise4_adam_bound_is_528400_bytes():
    assert theory.adam_fp32_bytes(EX4) == 528_400
    assert round(528_400 / 1024) == 516


def test_exercise4_activations_b512_below_2_mb():
    act = theory.activation_bytes(512, EX4)
    assert act == 524_288 + 262_144 + 2_048 == 788_480
    assert act < 2_000_000


def test_exercise4_transfer_is_6_4_s_at_8_gb_per_s():
    seconds = theory.transfer_seconds(theory.input_bytes(50_000_000, 256), 8)
    assert seconds == pytest.approx(6.4, rel=1e-12)


def test_transfer_seconds_uses_decimal_gigabytes():
    assert theory.transfer_seconds(1_000_000_000, 1) == pytest.approx(1.0)
    assert theory.transfer_seconds(0, 8) == 0.0


@pytest.mark.parametrize("bandwidth", [0, 0.0, -1, -8.0])
def test_transfer_seconds_rejects_non_positive_bandwidth(bandwidth):
    with pytest.raises(ValueError, match="bandwidth"):
        theory.transfer_seconds(1000, bandwidth)


# --- Northstar -------------------------------------------------------------------------


def test_northstar_matrix_2400_by_8_fp32_is_76800_bytes():
    assert theory.input_bytes(2400, 8) == 2400 * 8 * 4 == 76_800


# --- steps per epoch ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "batch", "steps"),
    [
        (8192, 32, 256),
        (8192, 512, 16),
        (100, 32, 4),
        (200, 64, 4),
        (2400, 512, 5),
        (1, 1, 1),
        (512, 512, 1),
        (513, 512, 2),
    ],
)
def test_steps_per_epoch_counts_partial_batch(rows, batch, steps):
    assert theory.steps_per_epoch(rows, batch) == steps


# --- invalid widths -------------------------------------------------------------------


@pytest.mark.parametrize("widths", [(), (32,), (32, 0, 1), (32, -48, 1), (0, 1)])
@pytest.mark.parametrize(
    "func",
    [
        theory.param_count,
        theory.adam_fp32_bytes,
        lambda w: theory.forward_flops(8, w),
        lambda w: theory.forward_backward_flops(8, w),
        lambda w: theory.forward_backward_flops_counted(8, w),
    ],
)
def test_bad_widths_raise(widths, func):
    with pytest.raises(ValueError, match="layer widths"):
        func(widths)


# --- the counted FLOP against torch's own counter -------------------------------------


def _count(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


def test_counted_numbers_of_textbook_model_at_b512():
    assert theory.forward_backward_flops_counted(512, SPEC) == 3_293_184
    # below the 3x rule of thumb: the first layer computes no input gradient
    assert theory.forward_backward_flops_counted(512, SPEC) < theory.forward_backward_flops(512, SPEC)


@pytest.mark.parametrize(
    ("widths", "batch"), [(SPEC, 512), (SPEC, 128), (EX4, 512), ((8, 8, 1), 64), ((16, 1), 32), ((16, 12, 6, 1), 20)]
)
def test_flop_formulas_match_torch_flop_counter(widths, batch):
    net = model.build_model(widths[0], widths[1], seed=20261020) if len(widths) == 3 else _mlp(widths)
    x = torch.randn(batch, widths[0])  # no requires_grad: the first layer's input gradient is never computed
    y = (torch.rand(batch, 1) > 0.5).float()
    loss_fn = torch.nn.BCEWithLogitsLoss()

    forward = _count(lambda: net(x))
    assert forward == theory.forward_flops(batch, widths)

    both = _count(lambda: loss_fn(net(x), y).backward())
    assert both == theory.forward_backward_flops_counted(batch, widths)


def test_flop_counter_values_quoted_in_spec_brief():
    net = model.build_model(32, 48, seed=20261020)
    x = torch.randn(512, 32)
    assert _count(lambda: net(x)) == 1_622_016
    assert _count(lambda: net(x).sum().backward()) == 3_293_184


def _mlp(widths):
    layers = []
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
        if i:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.Linear(d_in, d_out))
    return torch.nn.Sequential(*layers)
