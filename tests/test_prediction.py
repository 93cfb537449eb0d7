"""The cost model's misfit and each fit point's prediction interval (issue 42): analyze.prediction,
analyze.fit_residuals, their records and the report's residual table."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import builders_planner as builders
from builders_planner import grid_record, mlp
from builders_training import training_cell

from accel_choice import records
from accel_choice.analyze import breakeven_interval, costmodel, fit_residuals, planner, prediction
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.grid import grid_workloads
from accel_choice.records.planner import CostModelTable
from accel_choice.render.planner_residuals import residual_section, workload_text

TRUTH = costmodel.assumed("cpu", 3.1e-4, 8.8e10, 6.6e9, seconds_per_row=2.8e-7, state_bytes_per_s=3.2e10)
GRID = grid_workloads([2048, 8192], [32, 256], [48, 256], [32, 512])  # the default planner.grid
BENCHMARK = mlp(8192, 32, 48)
GPU_ASSUMED = {"seconds_per_step": 1.5e-4, "tflop_per_s": 10, "memory_gb_s": 1000, "memory_gb": 80, "startup_s": 0.3}


def _epochs(truth, workloads, noise=0.0, seed=0, extra_s=0.0):
    rng = np.random.default_rng(seed)
    return [costmodel.predict(truth, w) * float(np.exp(rng.normal(0.0, noise))) + extra_s for w in workloads]


def _loo_by_hand(workloads, seconds):
    rows, seconds = costmodel.design(workloads), np.asarray(seconds)
    out = []
    for i in range(len(seconds)):
        keep = np.arange(len(seconds)) != i
        out.append(np.log(seconds[i] / (rows[i] @ costmodel.fit_coefficients(rows[keep], seconds[keep]))))
    return np.array(out)


# ---------------------------------------------------------------- the misfit


def test_the_misfit_is_each_points_log_ratio_to_a_fit_without_its_workload():
    seconds = _epochs(TRUTH, GRID, noise=0.03, seed=1)
    model = costmodel.fit("cpu", list(zip(GRID, seconds)))
    misfit = prediction.misfit_log_residuals(model)
    assert misfit.shape == (len(GRID),)
    assert misfit == pytest.approx(_loo_by_hand(GRID, seconds), rel=1e-9)
    # measured ≈ predicted by the others · exp(residual): positive where the model predicts too little
    held_out = np.array([r.loo_predicted_s for r in model.quality.residuals])
    assert held_out * np.exp(misfit) == pytest.approx(seconds, rel=1e-12)
    assert np.median(np.abs(np.expm1(misfit))) == pytest.approx(model.quality.loo_median_abs_rel_error, rel=0.05)
    # No counted fit: the counted misfit is the grid's; an assumed model has none (unknown, not zero).
    assert np.array_equal(prediction.misfit_log_residuals(model, counted=True), misfit)
    assumed = costmodel.assumed("gpu", 1e-4, 1e13, 1e12)
    assert prediction.misfit_log_residuals(assumed).size == 0
    assert np.array_equal(prediction.misfit_factors(assumed, 7, seed=1), np.ones(7))


def test_misfit_factors_are_seeded_draws_of_the_residuals_one_per_resample():
    model = costmodel.fit("cpu", list(zip(GRID, _epochs(TRUTH, GRID, noise=0.05, seed=2))))
    factors = prediction.misfit_factors(model, 500, seed=9)
    assert factors.shape == (500,) and np.array_equal(factors, prediction.misfit_factors(model, 500, seed=9))
    assert not np.array_equal(factors, prediction.misfit_factors(model, 500, seed=10))
    residuals = prediction.misfit_log_residuals(model)
    allowed = np.exp(np.concatenate([residuals, -residuals]))  # each residual's size, either way
    assert all(np.isclose(allowed, f, rtol=1e-12).any() for f in factors)
    assert 0.4 < np.mean(factors > 1) < 0.6
    assert len(set(factors.round(12))) > len(GRID) // 2  # every residual can be drawn
    with pytest.raises(ValueError, match="resamples"):
        prediction.misfit_factors(model, 0, seed=1)


def test_a_cost_the_terms_cannot_express_shows_in_the_misfit():
    """A fixed 2 ms per epoch (no term has it): the five terms absorb part of it, and the rest is the
    misfit, which a noise-free grid of the right form does not have."""
    right = costmodel.fit("cpu", list(zip(GRID, _epochs(TRUTH, GRID))))
    wrong = costmodel.fit("cpu", list(zip(GRID, _epochs(TRUTH, GRID, extra_s=2e-3))))
    assert np.abs(prediction.misfit_log_residuals(right)).max() < 1e-9
    assert np.abs(prediction.misfit_log_residuals(wrong)).max() > 0.05


# ---------------------------------------------------------------- one point's interval


def test_a_prediction_interval_carries_the_refits_spread_and_the_misfit():
    refits = np.full(4000, 0.010)
    assert prediction.prediction_interval(refits, np.zeros(0), 0.010, 0.95, seed=1) == (0.010, 0.010)
    # Another workload's miss says how far, not to which side: each size is drawn either way.
    low, high = prediction.prediction_interval(refits, np.array([-0.2, 0.0, 0.1]), 0.010, 0.95, seed=1)
    assert low == pytest.approx(0.010 * math.exp(-0.2)) and high == pytest.approx(0.010 * math.exp(0.2))
    one_sided = prediction.prediction_interval(refits, np.array([0.18, 0.14]), 0.010, 0.95, seed=1)
    assert one_sided[0] == pytest.approx(0.010 * math.exp(-0.18)) and one_sided[1] == pytest.approx(
        0.010 * math.exp(0.18)
    )
    spread = 0.010 * np.exp(np.random.default_rng(0).normal(0.0, 0.05, 4000))
    low, high = prediction.prediction_interval(spread, np.zeros(0), 0.010, 0.95, seed=1)
    assert low == pytest.approx(0.010 * math.exp(-1.96 * 0.05), rel=0.02)
    both = prediction.prediction_interval(spread, np.array([-0.2, 0.1]), 0.010, 0.95, seed=1)
    assert both[0] < low and both[1] > high  # the misfit widens what the refits alone give
    # The point fit's prediction is always inside (refits that all miss it are widened to it).
    assert prediction.prediction_interval(np.full(10, 0.02), np.zeros(0), 0.010, 0.95, seed=1) == (0.010, 0.02)
    with pytest.raises(ValueError, match="confidence"):
        prediction.prediction_interval(refits, np.zeros(0), 0.010, 1.0, seed=1)
    with pytest.raises(ValueError, match="finite"):
        prediction.prediction_interval(np.array([math.nan]), np.zeros(0), 0.010, 0.95, seed=1)


# ---------------------------------------------------------------- every point's residual


def _run(epoch_s, benchmark_s, jobs=3, scatter=0.02, seed=0):
    """A CPU run: `epoch_s(workload)` per grid workload, timed in `jobs` grid jobs, and the benchmark's
    fast-path cells (batch size -> seconds); the models, points and residuals the planner makes of them."""
    rng = np.random.default_rng(seed)
    grid = [
        grid_record(**dataclasses.asdict(w), epoch_s=epoch_s(w) * float(np.exp(rng.normal(0.0, scatter))), repeat=r)
        for r in range(jobs)
        for w in GRID
    ]
    cells = [_cell(b, s * float(np.exp(rng.normal(0.0, scatter)))) for b, s in benchmark_s.items()]
    points = planner.grid_points(grid, NoiseRules()) + planner.benchmark_points(cells, BENCHMARK)
    models = planner.device_models(points, GPU_ASSUMED)
    measured = breakeven_interval.measurements(grid, cells, BENCHMARK)
    refits = breakeven_interval.resampled_fits(measured, models, 400, seed=5)
    workloads = [p.workload for p in points]
    residuals = fit_residuals.table_residuals(points, workloads, models, refits, confidence=0.95, seed=5)
    return points, models, residuals


def _cell(batch_size, epoch_s):
    """A benchmark fast-path cell: three jobs 2 % apart."""
    return training_cell(batch_size=batch_size, epoch_s=epoch_s, spread=0.02, rows=8192)


def test_every_point_gets_its_residual_and_interval_in_the_points_order():
    truth = lambda w: costmodel.predict(TRUTH, w)  # noqa: E731
    points, models, residuals = _run(truth, {b: truth(BENCHMARK(b)) for b in (32, 128, 512)})
    assert len(residuals) == len(points) == len(GRID) + 3
    assert [(r.source, r.rows, r.features, r.hidden, r.batch_size) for r in residuals] == [
        (p.source, p.rows, p.features, p.hidden, p.batch_size) for p in points
    ]
    for r, p in zip(residuals, points):
        assert r.measured_s == p.epoch_s and r.inside == (r.interval_low_s <= r.measured_s <= r.interval_high_s)
        assert r.interval_low_s <= r.predicted_s <= r.interval_high_s and r.loo_predicted_s > 0
    assert all(r.inside for r in residuals)  # the model's own form, 2 % scatter: every point inside
    # The same records and seed: the same intervals.
    again = _run(truth, {b: truth(BENCHMARK(b)) for b in (32, 128, 512)})[2]
    assert again == residuals
    table = builders.cost_model_table(
        points=tuple(points),
        residuals=residuals,
        models=(planner.model_row(models["cpu"]), planner.model_row(models["gpu"])),
    )
    assert (
        records.from_json(CostModelTable, json.loads(json.dumps(records.to_json(table), allow_nan=False)), "here")
        == table
    )


def test_a_point_the_model_misses_lies_outside_its_interval_and_is_not_graded_on_its_own_miss():
    """The benchmark cell at B = 128 runs 60 % slower than any model of the rest says (a busy minute): its
    interval comes from the other workloads' misfit, so it lies outside; the others stay inside."""
    truth = lambda w: costmodel.predict(TRUTH, w)  # noqa: E731
    benchmark = {b: truth(BENCHMARK(b)) * (1.6 if b == 128 else 1.0) for b in (32, 64, 128, 256, 512)}
    points, _, residuals = _run(truth, benchmark, seed=3)
    outside = [r for r in residuals if not r.inside]
    assert [(r.source, r.batch_size) for r in outside] == [("benchmark", 128)]
    slow = outside[0]
    assert slow.measured_s > slow.interval_high_s and slow.loo_rel_error < -0.3
    # Its miss is in the misfit the others' intervals draw from: theirs are wider than without it.
    calm = _run(truth, {b: truth(BENCHMARK(b)) for b in (32, 64, 128, 256, 512)}, seed=3)[2]
    widths = [r.interval_high_s / r.interval_low_s for r in residuals if r.inside]
    assert np.median(widths) > np.median([r.interval_high_s / r.interval_low_s for r in calm])


def test_residuals_refuse_points_that_are_not_the_fits():
    truth = lambda w: costmodel.predict(TRUTH, w)  # noqa: E731
    points, models, _ = _run(truth, {32: truth(BENCHMARK(32))})
    refits = {
        key: np.tile(costmodel.coefficients(models["cpu"], key[1]), (5, 1)) for key in (("cpu", False), ("cpu", True))
    }
    with pytest.raises(ValueError, match="workloads"):
        fit_residuals.table_residuals(points, [], models, refits, confidence=0.95, seed=1)
    swapped = [points[1], points[0], *points[2:]]
    with pytest.raises(ValueError, match="next point"):
        fit_residuals.table_residuals(swapped, [p.workload for p in swapped], models, refits, confidence=0.95, seed=1)
    with pytest.raises(ValueError, match="not given"):
        fit_residuals.table_residuals(
            points[:-1], [p.workload for p in points[:-1]], models, refits, confidence=0.95, seed=1
        )


# ---------------------------------------------------------------- the records


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: builders.residual(inside=None), "all set or all null"),
        (lambda: builders.residual(interval_low_s=None), "all set or all null"),
        (
            lambda: builders.residual(interval_high_s=0.0205),
            "interval_low_s 0.018 <= predicted_s 0.021 <= interval_high_s",
        ),
        (lambda: builders.residual(inside=False), "inside False but measured_s 0.02 lies inside"),
        (lambda: builders.residual(interval_low_s=0.0201, inside=True), "inside True but measured_s 0.02 lies outside"),
        (
            lambda: builders.cost_model_table(
                residuals=(builders.residual(source="benchmark", batch_size=32), builders.residual())
            ),
            "is not the point .* in its place",
        ),
        (
            lambda: builders.cost_model_table(
                residuals=(builders.residual(measured_s=0.019), builders.residual(source="benchmark", batch_size=32))
            ),
            "is not the point",
        ),
        (
            lambda: builders.cost_model_table(
                residuals=(
                    builders.residual(interval_low_s=None, interval_high_s=None),
                    builders.residual(source="benchmark", batch_size=32),
                )
            ),
            "has no leave-one-out prediction or interval",
        ),
        (lambda: builders.cost_model_table(interval_confidence=1.0), "interval_confidence 1.0 is not in"),
    ],
)
def test_a_residual_or_table_that_breaks_an_invariant_is_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_fits_own_residual_has_no_interval_yet():
    r = builders.residual(source=None, interval_low_s=None, interval_high_s=None)
    assert r.inside is None and r.source is None and r.loo_rel_error == pytest.approx(0.075)


# ---------------------------------------------------------------- the report


def test_the_residual_table_names_the_points_outside_first():
    outside = builders.residual(source="benchmark", batch_size=32, measured_s=0.03, interval_high_s=0.025)
    slow = builders.fit_point(source="benchmark", batch_size=32, epoch_s=0.03, epoch_s_max=0.035)
    table = builders.cost_model_table(points=(builders.fit_point(), slow), residuals=(builders.residual(), outside))
    text = residual_section(table)
    assert text.startswith("### The cost model against its points")
    assert "**1 of 2 measured points lie outside** the model's 95 % prediction interval: cpu benchmark 128 rows" in text
    lines = [line for line in text.splitlines() if line.startswith("| cpu")]
    assert len(lines) == 2 and lines[0].startswith("| cpu | benchmark |") and lines[0].endswith("| **no** |")
    assert "| 30.0 | 21.0 | -30.0% | -28.3% | 18.0–25.0 | **no** |" in lines[0]
    assert lines[1].endswith("| 18.0–24.0 | yes |")
    assert "400 bootstrap refits" in text and "at most" in text


def test_the_residual_table_says_when_every_point_is_inside_and_flags_noisy_points():
    points = (builders.fit_point(noisy=True), builders.fit_point(source="benchmark", batch_size=32, busy_repeats=1))
    text = residual_section(builders.cost_model_table(points=points))
    assert "All 2 measured points lie inside the model's 95 % prediction intervals." in text
    assert "20.0 (noisy)" in text and "20.0 (busy)" in text
    assert residual_section(None) == ""
    assert (
        residual_section(builders.cost_model_table(models=(builders.assumed_model_row(),), points=(), residuals=()))
        == ""
    )


def test_a_workload_is_named_by_its_widths_or_its_model():
    assert workload_text(builders.residual()) == "128 rows, 4 → 8 → 1, B = 16"
    counted = builders.residual(model="mine:build", features=None, hidden=None, rows=8192, batch_size=512)
    assert workload_text(counted) == "`mine:build`, 8,192 rows, B = 512"
