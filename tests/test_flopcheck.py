"""torch's FlopCounterMode on the real model against theory's FLOP formulas."""

from __future__ import annotations

import pytest

from accel_choice.measure import flopcheck
from accel_choice.analyze import theory


@pytest.mark.parametrize(
    ("features", "hidden", "batch"), [(32, 48, 128), (32, 48, 512), (8, 8, 64), (256, 128, 512), (5, 3, 7)]
)
def test_counter_matches_formulas_exactly(features, hidden, batch):
    counts = flopcheck.counted_training_flops(features, hidden, batch)
    widths = (features, hidden, 1)
    assert counts["forward"] == counts["formula_forward"] == theory.forward_flops(batch, widths)
    assert counts["total"] == counts["formula_counted"] == theory.forward_backward_flops_counted(batch, widths)
    assert counts["formula_3x"] == theory.forward_backward_flops(batch, widths)
    assert counts["backward"] == counts["total"] - counts["forward"]
    # the first layer's input gradient is the only thing the 3x rule counts and the counter does not
    assert counts["formula_3x"] - counts["total"] == 2 * batch * features * hidden


def test_textbook_batch_128():
    counts = flopcheck.counted_training_flops(32, 48, 128)
    assert counts["forward"] == 2 * 128 * (32 * 48 + 48 * 1) == 405_504  # as in test_theory
    assert counts["total"] == 3 * 405_504 - 2 * 128 * 32 * 48 == 823_296
    assert counts["formula_3x"] == 1_216_512


def test_count_does_not_depend_on_seed():
    assert flopcheck.counted_training_flops(8, 8, 16, seed=1) == flopcheck.counted_training_flops(8, 8, 16, seed=2)


def test_flop_table_epoch_totals_and_achieved_rate():
    rows, widths = 1000, (32, 48, 1)
    table = flopcheck.flop_table(32, 48, [128, 1000, 2048], rows, {128: 0.5, 2048: 0.25})
    assert [r.batch_size for r in table] == [128, 1000, 2048]
    b128 = table[0]
    # 7 full batches of 128 and a last batch of 104 rows
    assert (b128.steps, b128.last_batch_rows) == (8, 104)
    counted_128 = theory.forward_backward_flops_counted(128, widths)
    assert b128.counted_per_batch == counted_128
    assert b128.counted_forward_per_batch + b128.counted_backward_per_batch == counted_128
    assert b128.epoch_flop_counted == 7 * counted_128 + theory.forward_backward_flops_counted(104, widths)
    assert b128.epoch_flop_3x == 7 * theory.forward_backward_flops(128, widths) + theory.forward_backward_flops(
        104, widths
    )
    assert b128.epoch_flop_3x == theory.forward_backward_flops(rows, widths)  # linear in rows
    assert b128.counted_over_3x == pytest.approx(counted_128 / theory.forward_backward_flops(128, widths))
    assert b128.gflop_per_s_3x == pytest.approx(b128.epoch_flop_3x / 0.5 / 1e9)
    assert b128.gflop_per_s_counted == pytest.approx(b128.epoch_flop_counted / 0.5 / 1e9)
    # one exact batch; no measured time
    assert table[1].steps == 1 and table[1].last_batch_rows == 1000
    assert table[1].epoch_flop_counted == theory.forward_backward_flops_counted(rows, widths)
    assert table[1].epoch_s is None and table[1].gflop_per_s_3x is None and table[1].gflop_per_s_counted is None
    # a batch larger than the data is one partial batch
    assert table[2].steps == 1 and table[2].epoch_flop_3x == theory.forward_backward_flops(rows, widths)
    assert table[2].gflop_per_s_3x == pytest.approx(theory.forward_backward_flops(rows, widths) / 0.25 / 1e9)


def test_flop_table_without_times():
    table = flopcheck.flop_table(8, 8, [16], 40, None)
    assert table[0].epoch_s is None and table[0].gflop_per_s_counted is None


@pytest.mark.parametrize("seconds", [0.0, -1.0])
def test_flop_table_rejects_non_positive_time(seconds):
    with pytest.raises(ValueError, match="must be > 0"):
        flopcheck.flop_table(8, 8, [16], 40, {16: seconds})
