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
    cells = np.exp(rng.normal(0, 0.5, (5, 1)))  # each cell's own size
    noise = np.exp(rng.normal(0, 0.05, (5, 4)))
    a = cells * np.exp(rng.normal(0, 0.3, (1, 4))) * noise  # each job's speed, shared by its cells
    b = 1.5 * cells * np.exp(rng.normal(0, 0.3, (1, 4))) * noise  # B: other jobs, the whole run 1.5× slower
    qa, qb = rr.leave_one_out(a, b)
    assert np.allclose(qa, qb)  # the same cell noise, other jobs and another run speed: the quotients agree


def test_a_slower_cell_moves_its_own_quotient_and_no_other():
    a, b = np.ones((4, 3)), np.ones((4, 3))
    b[2] *= 1.2
    qa, qb = rr.leave_one_out(a, b)
    assert np.exp(qb[2] - qa[2]) == pytest.approx([1.2] * 3)
    assert np.exp(qb[[0, 1, 3]] - qa[[0, 1, 3]]) == pytest.approx(np.ones((3, 3)))  # the others' median holds


def test_cells_that_got_faster_leave_the_unchanged_ones_where_they_were():
    """A minority of the job's cells faster in B, cells of unlike sizes: the unchanged cells' rows do not move."""
    sizes = np.array([[100.0], [80.0], [45.0], [30.0], [12.0], [9.0], [5.0], [2.0], [1.5], [1.0]])
    a, b = sizes * np.ones((1, 3)), sizes * np.ones((1, 3))
    b[[1, 4, 7, 8]] *= 0.7
    qa, qb = rr.leave_one_out(a, b)
    unchanged = [0, 2, 3, 5, 6, 9]
    assert np.exp(qb[unchanged] - qa[unchanged]) == pytest.approx(np.ones((6, 3)))
    assert np.exp(qb[1] - qa[1]) == pytest.approx([0.7] * 3)


def test_with_rounds_a_shift_every_cell_of_a_round_shares_cancels_where_job_medians_keep_some_of_it():
    """cells × jobs × rounds: each round's quotient is against the other cells' epochs of that round."""
    rng = np.random.default_rng(1)
    cells = np.exp(rng.normal(0, 0.5, (6, 1, 1)))
    noise = np.exp(rng.normal(0, 0.05, (6, 3, 10)))
    rounds_a, rounds_b = (np.exp(rng.normal(0, 0.3, (1, 3, 10))) for _ in range(2))  # shared by a round's cells
    a, b = cells * rounds_a * noise, cells * rounds_b * noise  # the same cell noise, other rounds' shifts
    qa, qb = rr.leave_one_out(a, b)
    assert qa.shape == qb.shape == (6, 3) and np.allclose(qa, qb)  # the rounds' shifts cancel exactly
    ma, mb = rr.leave_one_out(np.median(a, axis=2), np.median(b, axis=2))
    assert not np.allclose(ma, mb, atol=1e-3)  # over job medians some of them stay
    slower = b.copy()
    slower[2] *= 1.2
    qa, qs = rr.leave_one_out(a, slower)
    assert np.exp(qs[2] - qa[2]) == pytest.approx([1.2] * 3)  # a slower cell moves its own quotient
    moved = np.abs(np.delete(qs, 2, 0) - np.delete(qb, 2, 0))
    assert moved.max() < 0.25 * math.log(1.2)  # the others barely: the slowed cell sits in their medians now and then


@pytest.mark.parametrize("shape", [(2, 3), (3,), (0, 3)])
def test_leave_one_out_refuses_too_few_cells(shape):
    with pytest.raises(ValueError, match="at least 3 cells"):
        rr.leave_one_out(np.ones(shape), np.ones(shape))


def test_leave_one_out_refuses_a_non_positive_time_and_unlike_sides():
    medians = np.ones((3, 2))
    medians[1, 1] = 0.0
    with pytest.raises(ValueError, match="positive finite"):
        rr.leave_one_out(np.ones((3, 2)), medians)
    with pytest.raises(ValueError, match="the same cells"):
        rr.leave_one_out(np.ones((3, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="the same cells"):
        rr.leave_one_out(np.ones((3, 2)), np.ones((3, 2, 5)))  # medians on one side, rounds on the other


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


def test_a_row_rests_on_at_most_the_degrees_of_freedom_all_rows_have():
    alike = rr.Prior(variance=0.01, df=rr.DF_CAP, rows=3, pooled_df=12.0)
    assert rr.moderated(0.01, 4, alike)[1] == 12.0


def test_rounding_is_no_spread():
    assert rr.moderated(1e-32, 4, None) == (0.0, 4.0)
    assert rr.fit_prior([1e-32, 1e-31, 1e-30, 0.01], [4, 4, 4, 4]) is None


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


def test_each_job_group_has_its_own_prior():
    """Two threads on two cores spread more than one: under one prior the noisy group's rows would be too
    narrow (false alarms) and the quiet group's too wide (no power)."""
    rng = np.random.default_rng(5)

    def group(name: str, noise: float):
        keys = [f"{name}{c}" for c in range(10)]
        return keys, np.exp(rng.normal(0, noise, (10, 3))), np.exp(rng.normal(0, noise, (10, 3)))

    fitted = rr.fit([group("quiet", 0.01), group("noisy", 0.08)])
    quiet, noisy = fitted.priors["quiet0"], fitted.priors["noisy0"]
    assert quiet is fitted.priors["quiet9"] and noisy is fitted.priors["noisy9"] and quiet is not noisy
    assert noisy.variance > 10 * quiet.variance
    assert fitted.ratio("noisy0", 0.95).half_width_ratio > 3 * fitted.ratio("quiet0", 0.95).half_width_ratio


def test_a_row_with_no_spread_has_no_interval():
    same = np.zeros(3)
    estimate = rr.ratio(same, same, None, 0.95)
    assert estimate.low == estimate.high == estimate.point == 1.0 and estimate.flags


def test_harness_rows_hold_their_level_and_beat_the_raw_rows():
    """The promise docs/statistics.md quotes, at a few draws: coverage near 95 %, a quiet A/A gate, and more
    power than the raw rows, whose job effect stays in."""
    design = c.Design(jobs=3, sigma_job=0.07, epochs=5, sigma_epoch=0.10, sigma_drift=0.05, sigma_round=0.05)
    rates = cr.row_rates(design, draws=60, cells=cr.Cells(unlike=2.0))
    assert 0.9 <= rates.coverage <= 0.98
    assert rates.table_false_alarm_both <= 0.1
    assert rates.others_faster_false_alarm <= 0.1  # cells of B faster, none slower: the gate stays quiet
    assert rates.power > rates.power_raw
    assert rates.power_cell >= rates.power  # the whole cell slower has a row in each metric to fail
    assert math.isfinite(rates.prior_df) and rates.prior_df > 0


def test_a_smaller_gate_family_is_less_strict_with_the_same_draws():
    """`family`: the harness's gate over fewer rows than compare's (docs/statistics.md, the gate's family):
    the same draws, a less strict level, so never fewer failed rows, A/A or planted."""
    design = c.Design(jobs=3, sigma_job=0.07, epochs=5, sigma_epoch=0.10, sigma_round=0.05)
    strict, loose = (cr.row_rates(design, draws=30, family=family) for family in (None, 2))
    assert loose.row_false_alarm >= strict.row_false_alarm and loose.power >= strict.power
    assert loose.power_cell > strict.power_cell


def _group(b_factors: dict[int, float], cells: int = 10, jobs: int = 3, seed: int = 4):
    """One job group of `cells` cells of unlike sizes, A and B, a little noise; B's cells scaled by `b_factors`."""
    rng = np.random.default_rng(seed)
    sizes = np.geomspace(100, 1, cells)[:, None]
    a = sizes * np.exp(rng.normal(0, 0.01, (cells, jobs)))
    b = sizes * np.exp(rng.normal(0, 0.01, (cells, jobs)))
    for cell, factor in b_factors.items():
        b[cell] *= factor
    return rr.fit([(list(range(cells)), a, b)])


def test_half_the_job_faster_in_b_suspends_the_rows_over_the_rest_of_it():
    """Half a job's cells faster in B (a faster loader, say): the others' median moves, so the unchanged rows
    would read slower. They are flagged, and the gate decides nothing on them."""
    fitted = _group(dict.fromkeys(range(0, 10, 2), 0.75))
    unchanged = fitted.ratio(1, 0.998)
    assert unchanged.low > 1.05 and rr.REFERENCE_MOVED in unchanged.flags
    assert not rr.gate_fails_in_job(unchanged, raw_point=1.06, percent=5)


def test_one_slower_cell_is_caught_and_not_flagged():
    fitted = _group({3: 1.2})
    slow = fitted.ratio(3, 0.998)
    assert rr.REFERENCE_MOVED not in slow.flags and slow.low > 1.1
    assert rr.gate_fails_in_job(slow, raw_point=1.2, percent=5)
    assert not rr.gate_fails_in_job(slow, raw_point=1.01, percent=5)  # its own time did not grow: not slower


def test_plant_slowdowns_catches_a_planted_cell_and_names_no_other(tmp_path, capsys):
    """benchmarks/plant_slowdowns.py, whose real-run figures docs/statistics.md quotes, on two small folders."""
    import importlib.util
    from pathlib import Path

    from test_compare import Draws, make_results

    repo = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("plant_slowdowns", repo / "benchmarks" / "plant_slowdowns.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folders = [
        str(make_results(tmp_path, name, batch_sizes=(32, 64, 512), draws=Draws(epochs=5, seed=seed)))
        for name, seed in (("a", 1), ("b", 2))
    ]
    assert module.main([*folders, "--slowdown", "0.5", "--faster-cells", "2"]) == 0
    shown = capsys.readouterr().out
    rows = [line for line in shown.splitlines() if line.startswith("| 1 → 2 |") or line.startswith("| 2 → 1 |")]
    assert len(rows) == 2 and all(line.endswith("| 0 |") for line in rows)  # no row named beside the plant
    assert all(int(line.split("|")[3].split(" of ")[0]) >= 1 for line in rows)  # a 50 % plant is caught
    assert "that failed the gate: 0 of 2" in shown
