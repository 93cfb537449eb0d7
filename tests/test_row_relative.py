"""compare's rows over the rest of their job (analyze.row_relative) and the harness that draws them
(analyze.calibration_rows): the job effect cancels, the prior is fitted as Smyth's, the promise holds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from accel_choice.analyze import calibration as c
from accel_choice.analyze import calibration_rows as cr
from accel_choice.analyze import row_relative as rr


def test_leave_one_out_cancels_what_every_cell_of_a_job_shares():
    rng = np.random.default_rng(0)
    cells = np.exp(rng.normal(0, 0.1, (5, 1)))  # each cell's own speed
    job = np.exp(rng.normal(0, 0.3, (1, 4)))  # each job's speed, shared by its cells
    q = rr.leave_one_out(cells * job)
    assert np.allclose(q, q[:, :1])  # the same in every job: the job effect is gone
    logs = np.log(cells[:, 0])
    assert q[0, 0] == pytest.approx(logs[0] - logs[1:].mean())


def test_a_slower_cell_moves_its_own_quotient_by_its_slowdown():
    medians = np.ones((4, 3))
    medians[2] *= 1.2
    q = rr.leave_one_out(medians)
    assert np.exp(q[2]) == pytest.approx([1.2] * 3)
    assert np.exp(q[0]) == pytest.approx([1.2 ** (-1 / 3)] * 3)


@pytest.mark.parametrize("shape", [(2, 3), (3,), (0, 3)])
def test_leave_one_out_refuses_too_few_cells(shape):
    with pytest.raises(ValueError, match="at least 3 cells"):
        rr.leave_one_out(np.ones(shape))


def test_leave_one_out_refuses_a_non_positive_time():
    medians = np.ones((3, 2))
    medians[1, 1] = 0.0
    with pytest.raises(ValueError, match="positive finite"):
        rr.leave_one_out(medians)


@pytest.mark.parametrize("x", [1e-7, 0.05, 0.7, 3.0, 50.0, 1e8])
def test_trigamma_inverse_inverts_trigamma(x):
    y = rr._trigamma_inverse(x)
    assert float(special.polygamma(1, y)) == pytest.approx(x, rel=1e-3)


@pytest.mark.parametrize("d0", [4.0, 12.0])
def test_the_prior_is_recovered_from_rows_drawn_from_it(d0):
    """Rows' true variances drawn from s0² d0 / χ²(d0), each seen on 4 degrees of freedom (Smyth 2004's model)."""
    rng = np.random.default_rng(1)
    rows, d, s0 = 4000, 4, 0.05**2
    true = s0 * d0 / rng.chisquare(d0, rows)
    seen = true * rng.chisquare(d, rows) / d
    prior = rr.fit_prior(list(seen), [d] * rows)
    assert prior is not None and prior.rows == rows
    assert prior.df == pytest.approx(d0, rel=0.25)
    assert prior.variance == pytest.approx(s0, rel=0.1)


def test_rows_alike_get_an_unbounded_prior_and_too_few_rows_none():
    rng = np.random.default_rng(2)
    seen = 0.01 * rng.chisquare(4, 3000) / 4
    prior = rr.fit_prior(list(seen), [4] * 3000)
    assert prior is not None and prior.df == rr.DF_CAP
    assert prior.variance == pytest.approx(0.01, rel=0.05)
    assert rr.fit_prior([0.01, 0.02], [4, 4]) is None
    assert rr.fit_prior([0.0, 0.0, 0.0, 0.01], [4, 4, 4, 4]) is None  # rows that never varied say nothing


def test_moderation_pulls_a_row_towards_the_prior_and_adds_its_degrees_of_freedom():
    prior = rr.Prior(variance=0.01, df=6.0, rows=20)
    assert rr.moderated(0.04, 4, prior) == pytest.approx(((6 * 0.01 + 4 * 0.04) / 10, 10.0))
    assert rr.moderated(0.04, 4, None) == (0.04, 4.0)


def test_fit_keys_rows_and_leaves_out_small_groups():
    rng = np.random.default_rng(3)
    big = (["a", "b", "c", "d"], np.exp(rng.normal(0, 0.05, (4, 3))), np.exp(rng.normal(0, 0.05, (4, 3))))
    small = (["e", "f"], np.ones((2, 3)), np.ones((2, 3)))
    one_job = (["g", "h", "i"], np.ones((3, 1)), np.ones((3, 1)))
    fitted = rr.fit([big, small, one_job])
    assert set(fitted.rows) == {"a", "b", "c", "d"}
    assert fitted.ratio("e", 0.95) is None and fitted.detectable("g", 1.05, 0.95) is None
    estimate = fitted.ratio("a", 0.95)
    assert estimate.low < estimate.point < estimate.high and estimate.method == rr.METHOD
    assert fitted.detectable("a", 1.05, 0.95) > 1.05


def test_a_row_with_no_spread_has_no_interval():
    same = np.zeros(3)
    estimate = rr.ratio(same, same, None, 0.95)
    assert estimate.low == estimate.high == estimate.point == 1.0 and estimate.flags


def test_harness_rows_hold_their_level_and_beat_the_raw_rows():
    """The promise docs/statistics.md quotes, at a few draws: coverage near 95 %, a quiet A/A gate, and more
    power than the raw rows, whose job effect stays in."""
    design = c.Design(jobs=3, sigma_job=0.07, epochs=5, sigma_epoch=0.10, sigma_drift=0.05, sigma_round=0.05)
    rates = cr.row_rates(design, draws=60, unlike=2.0)
    assert 0.9 <= rates.coverage <= 0.98
    assert rates.table_false_alarm_both <= 0.1
    assert rates.power > rates.power_raw
    assert math.isfinite(rates.prior_df) and rates.prior_df > 0
