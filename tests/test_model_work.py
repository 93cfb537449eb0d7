"""A counted model in the planner (analyze.model_work): its epoch's steps, FLOP and bytes from the profile,
fitted together with the grid's textbook MLPs, grown along rows and batch size, and reported."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import builders_planner as builders
import numpy as np
import pytest
from builders_training import training_cell

from accel_choice.analyze import breakeven_interval, costmodel, counted_fit, fit_residuals, model_work, planner, theory
from accel_choice.analyze.model_work import CountedWorkload, PerSample
from accel_choice.measure import profile
from accel_choice.records.grid import Workload
from accel_choice.records.model import TEXTBOOK, ModelProfile, ModelSpec
from accel_choice.render import planner as render_planner
from accel_choice.render.break_even_figure import break_even_figure

WIDTHS = (8, 6, 1)


def spec(**fields) -> ModelSpec:
    return ModelSpec(hidden=6, lr=1e-2, **fields)


@pytest.fixture(scope="module")
def textbook_adam() -> PerSample:
    return PerSample.of(profile.profile(spec(), (8,), 100, [16, 32], seed=0))


def test_the_textbook_mlp_counted_is_the_formulas_work_but_for_what_the_formulas_leave_out(textbook_adam) -> None:
    m = textbook_adam
    assert m.model == f"{TEXTBOOK} (adam, bce)" and m.linear_error == 0 and m.flop_per_step == 0
    assert m.row_bytes == (8 + 1) * 4
    for rows, batch_size in ((100, 16), (1000, 32), (7, 512), (12345, 100)):
        counted = CountedWorkload(rows=rows, batch_size=batch_size, per_sample=m).work()
        formula = costmodel.work(Workload(rows=rows, features=8, hidden=6, batch_size=batch_size))
        steps = theory.steps_per_epoch(rows, batch_size)
        assert counted["steps"] == formula["steps"] == steps
        assert counted["flop"] == pytest.approx(formula["flop"], rel=1e-12)
        # The hooks also see the ReLU's output (written and read back), and Adam keeps one fp32 step
        # count per parameter tensor (4 tensors), read and written each step.
        relu = 2 * rows * 6 * 4
        step_counts = steps * 2 * 4 * 4
        assert counted["bytes"] - formula["bytes"] == pytest.approx(relu, rel=1e-12)
        assert counted["state_bytes"] - formula["state_bytes"] == pytest.approx(step_counts, rel=1e-12)
        assert counted["rows"] == formula["rows"] == rows


@pytest.fixture(scope="module")
def conv_profile(tmp_path_factory) -> ModelProfile:
    """test_own_model's Conv (counted by hand there) at B = 10 and 16 (once: the package `mw` is imported once per process)."""
    root = tmp_path_factory.mktemp("conv")
    package = root / "mw"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "net.py").write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom test_own_model import Conv\ndef build(shape):\n    return Conv()\n"
        % str(Path(__file__).parent)
    )
    return profile.profile(spec(factory="mw.net:build", path=str(root), optimizer="sgd"), (2, 8), 40, [10, 16], seed=0)


def test_a_user_models_epoch_is_counted_per_sample_as_by_hand(conv_profile) -> None:
    m = PerSample.of(conv_profile)
    conv, head = 2 * 3 * 6 * 2 * 3, 2 * 18  # forward FLOP per sample
    assert m.model == "mw.net:build" and m.linear_error == 0
    assert m.flop_per_sample == pytest.approx(conv + head + conv + 2 * head) and m.flop_per_step == 0
    assert m.activation_bytes_per_sample == pytest.approx((16 + 18 + 1) * 4)
    assert m.row_bytes == 2 * 8 * 4 + 4 and m.state_bytes == 2 * 40 * 4  # SGD: parameters and gradients
    work = CountedWorkload(rows=1000, batch_size=64, per_sample=m).work()
    steps = 16
    assert work == {
        "steps": steps,
        "flop": pytest.approx(1000 * m.flop_per_sample),
        "bytes": pytest.approx(1000 * 68 + 2 * 1000 * 35 * 4),
        "state_bytes": steps * 2 * 320,
        "rows": 1000,
    }


def test_a_count_not_proportional_to_the_batch_keeps_its_per_step_part(conv_profile) -> None:
    counted = conv_profile
    rows = tuple(dataclasses.replace(r, step_flop=100 * r.batch_size + 50) for r in counted.table)
    m = PerSample.of(dataclasses.replace(counted, table=rows))
    assert m.flop_per_sample == pytest.approx(100) and m.flop_per_step == pytest.approx(50)
    assert m.linear_error < 1e-9
    work = CountedWorkload(rows=100, batch_size=16, per_sample=m).work()
    assert work["flop"] == pytest.approx(100 * 100 + 50 * 7)
    # One counted batch size: a line through the origin; a decreasing count: no negative per-sample FLOP.
    one = PerSample.of(dataclasses.replace(counted, table=rows[:1]))
    assert one.flop_per_step == 0 and one.flop_per_sample == pytest.approx((100 * 10 + 50) / 10)
    falling = tuple(dataclasses.replace(r, step_flop=1000 - r.batch_size) for r in counted.table)
    m = PerSample.of(dataclasses.replace(counted, table=falling))
    assert m.flop_per_sample > 0 and m.flop_per_step == 0 and m.linear_error > 0.1


ASSUMED_GPU = {"seconds_per_step": 1.5e-4, "tflop_per_s": 10, "memory_gb_s": 1000}
GRID = [
    Workload(rows=n, features=d, hidden=h, batch_size=b)
    for n in (2048, 8192)
    for d in (32, 256)
    for h in (48, 256)
    for b in (32, 512)
]


def test_a_counted_model_gets_its_own_rates_and_leaves_the_grids_fit_as_it_was(textbook_adam) -> None:
    m = dataclasses.replace(textbook_adam, model="mw.net:build", flop_per_sample=5e4, activation_bytes_per_sample=900)
    machine = costmodel.assumed("cpu", 2e-5, 3e10, 5e9, seconds_per_row=2e-7, state_bytes_per_s=4e10)
    # The model: 3 ms per step (many modules) and a third of the MLPs' FLOP rate, at the machine's bandwidth
    # and per-row seconds.
    own = dataclasses.replace(machine, counted=(3e-3, 1 / 1e10))
    counted = [CountedWorkload(rows=8192, batch_size=b, per_sample=m) for b in (32, 128, 512)]
    grid_points = [(w, costmodel.predict(machine, w)) for w in GRID]
    counted_points = [(w, costmodel.predict(own, w)) for w in counted]
    assert counted_points[0][1] > 1.3 * costmodel.predict(machine, counted[0])  # the MLPs' rates miss it
    grid = costmodel.fit("cpu", grid_points)
    models = planner.device_models(
        [
            builders.fit_point(
                **model_work.identity(w),
                source="grid" if isinstance(w, Workload) else "benchmark",
                epoch_s=s,
                epoch_s_min=s,
                epoch_s_max=s,
            )
            for w, s in grid_points + counted_points
        ],
        ASSUMED_GPU,
        m,
    )
    fitted = models["cpu"]
    # The grid's rates are exactly those of a fit to the grid alone; the counted model's are its own.
    assert costmodel.coefficients(fitted) == pytest.approx(costmodel.coefficients(grid), rel=1e-12)
    assert fitted.counted == pytest.approx((3e-3, 1e-10), rel=1e-6)
    assert costmodel.coefficients(fitted, counted=True) == pytest.approx(
        [3e-3, 1e-10, 1 / 5e9, 1 / 4e10, 2e-7], rel=1e-6
    )
    quality = fitted.counted_quality
    assert (
        quality.points == 3
        and quality.loo_median_abs_rel_error < 1e-6
        and quality.terms_used == ("overhead", "compute")
    )
    assert all(r.model == "mw.net:build" and r.features is None for r in quality.residuals)
    assert costmodel.predict(fitted, counted[1]) == pytest.approx(counted_points[1][1], rel=1e-9)
    row = planner.model_row(fitted)
    assert row.counted_points == 3 and row.counted_seconds_per_step == pytest.approx(3e-3, rel=1e-6)
    assert row.counted_gflop_per_s == pytest.approx(10.0, rel=1e-6) and row.points == len(GRID)
    # An assumed model, or a fit without counted cells, gives a counted model its own rates.
    assert np.array_equal(costmodel.coefficients(machine, counted=True), costmodel.coefficients(machine))
    assert planner.model_row(grid).counted_points is None
    assert row.counted_warning is None and quality.identifiable
    # Cells of one batch size cannot tell per step from per FLOP: said, not hidden.
    one = counted_fit.fit_counted(grid, [(w, s) for w, s in counted_points if w.batch_size == 128])
    assert not one.counted_quality.identifiable
    assert "its cells hold 1 batch size" in planner.model_row(one).counted_warning


def test_a_counted_models_rates_are_refitted_in_every_resample(textbook_adam) -> None:
    m = dataclasses.replace(textbook_adam, model="mw.net:build", flop_per_sample=5e4)
    own = dataclasses.replace(costmodel.assumed("cpu", 2e-5, 3e10, 5e9, 1e-7), counted=(3e-3, 1e-10))
    rows = costmodel.design([CountedWorkload(rows=8192, batch_size=b, per_sample=m) for b in (32, 128, 512)])
    exact = rows @ costmodel.coefficients(own, counted=True)
    noise = np.random.default_rng(0).normal(1, 0.02, (40, 3))
    stack = counted_fit.counted_coefficients(rows, exact * noise, np.tile(costmodel.coefficients(own), (40, 1)))
    assert stack.shape == (40, 5) and np.all(stack >= 0) and len({tuple(r) for r in stack}) > 10
    assert np.median(stack[:, 0]) == pytest.approx(3e-3, rel=0.1)
    alone = counted_fit.counted_coefficients(rows, exact, costmodel.coefficients(own))
    assert alone == pytest.approx(costmodel.coefficients(own, counted=True), rel=1e-6)


def test_a_counted_model_grows_along_rows_and_batch_size_only(textbook_adam) -> None:
    cpu, gpu = costmodel.assumed("cpu", 1e-5, 5e10, 2e10), costmodel.assumed("gpu", 1.5e-4, 1e13, 1e12)
    heavy = dataclasses.replace(textbook_adam, flop_per_sample=1e6)  # a model worth a GPU at some size
    base = CountedWorkload(rows=8192, batch_size=512, per_sample=heavy)
    sweep = {"rows": (1000, 10**8), "features": (8, 8192), "hidden": (8, 8192), "batch_size": (32, 4096)}
    curves = planner.break_even_curves(cpu, gpu, base, sweep, 8e9, 0.3, 10)
    assert {(c.axis, c.placement) for c in curves} == {
        (axis, placement) for axis in ("rows", "batch_size") for placement in ("resident", "streamed")
    }
    rows = next(c for c in curves if (c.axis, c.placement) == ("rows", "resident"))
    assert all(b > a for a, b in zip(rows.cpu_s, rows.cpu_s[1:]))  # more rows, more time
    assert rows.break_even is not None  # the GPU's per-step overhead loses at small sizes, wins at large
    # The GPU receives every row's features and target: the copy seconds are the counted row bytes.
    last = rows.values[-1]
    copy = last * heavy.row_bytes / 8e9
    assert rows.gpu_extra_s[-1] == pytest.approx((0.3 + copy) / 10)
    with pytest.raises(ValueError, match="axis must be one of rows, batch_size"):
        costmodel.break_even(cpu, gpu, base, "features", [8, 16])


def test_benchmark_cells_of_a_counted_model_are_fit_points_named_by_it(textbook_adam) -> None:
    m = dataclasses.replace(textbook_adam, model="mw.net:build")
    cells = [training_cell(batch_size=b) for b in (32, 512)]
    points = planner.benchmark_points(cells, lambda b: CountedWorkload(rows=8192, batch_size=b, per_sample=m))
    assert [(p.model, p.features, p.hidden, p.rows, p.batch_size) for p in points] == [
        ("mw.net:build", None, None, 8192, 32),
        ("mw.net:build", None, None, 8192, 512),
    ]
    assert planner.point_workload(points[0], m) == CountedWorkload(rows=8192, batch_size=32, per_sample=m)
    with pytest.raises(ValueError, match="needs that model's counted profile"):
        planner.point_workload(points[0], None)
    with pytest.raises(ValueError, match="counted model's workload comes from its profile"):
        points[0].workload  # noqa: B018


def test_records_hold_a_counted_model_without_features_and_the_textbook_with_them() -> None:
    with pytest.raises(ValueError, match="the textbook MLP has both"):
        builders.fit_point(features=None, hidden=None)
    with pytest.raises(ValueError, match="the textbook MLP has both"):
        builders.fit_point(model="mine:build")
    with pytest.raises(ValueError, match="a grid point is the textbook MLP's"):
        builders.fit_point(model="mine:build", features=None, hidden=None, source="grid")
    with pytest.raises(ValueError, match="the textbook MLP has both"):
        builders.residual(features=None)
    with pytest.raises(ValueError, match="base_model"):
        builders.break_even_summary(base_features=None, base_hidden=None)
    point = builders.fit_point(model="mine:build", features=None, hidden=None, source="benchmark")
    assert point.model == "mine:build"
    assert builders.break_even_summary(base_model="mine:build", base_features=None, base_hidden=None)


def test_the_report_says_the_planner_models_the_counted_model_at_its_own_rates(textbook_adam, tmp_path) -> None:
    m = dataclasses.replace(textbook_adam, model="mw.net:build")
    grid = [w for w in GRID if w.hidden == 48]
    counted = [CountedWorkload(rows=8192, batch_size=b, per_sample=m) for b in (32, 128, 512)]
    truth = costmodel.assumed("cpu", 2e-5, 3e10, 5e9)
    # The counted model runs 30 % slower than the MLPs' rates say: its own rates take that in.
    measured = [(w, costmodel.predict(truth, w) * (1.3 if w in counted else 1.0)) for w in grid + counted]
    points = tuple(
        builders.fit_point(
            **model_work.identity(w),
            source="grid" if isinstance(w, Workload) else "benchmark",
            epoch_s=t,
            epoch_s_min=t,
            epoch_s_max=t,
        )
        for w, t in measured
    )
    models = planner.device_models(points, ASSUMED_GPU, m)
    cpu, gpu = models["cpu"], models["gpu"]
    assert gpu.source == "assumed" and cpu.counted is not None and cpu.counted_quality.max_abs_rel_error < 0.05
    sweep = {"rows": (1000, 10**8), "hidden": (8, 8192)}
    curves = planner.break_even_curves(cpu, gpu, counted[2], sweep, 8e9, 0.3, 10)
    summary = tuple(
        planner.break_even_summary(c, breakeven_interval.interval(p, np.full(10, p), 0.95))
        for c in curves
        for p in [breakeven_interval.position(c)]
    )
    assert {s.base_model for s in summary} == {"mw.net:build"} and {s.base_features for s in summary} == {None}
    # Every point's residual with its prediction interval (refits all equal: the misfit alone widens it).
    refits = {(d, c): np.tile(costmodel.coefficients(x, c), (20, 1)) for d, x in models.items() for c in (False, True)}
    workloads = [planner.point_workload(p, m) for p in points]
    residuals = fit_residuals.table_residuals(points, workloads, models, refits, confidence=0.95, seed=1)
    assert len(residuals) == len(points) and all(r.inside is not None for r in residuals)
    table = builders.cost_model_table(
        points=points, residuals=residuals, models=(planner.model_row(cpu), planner.model_row(gpu))
    )
    break_even = builders.break_even_table(summary=summary, curves=tuple(planner.curve_rows(curves)))
    text = render_planner.counted_paragraph(table, break_even)
    row = planner.model_row(cpu)
    assert "**The planner models `mw.net:build` from its counted profile**" in text
    assert "`planner.sweep.hidden`: the textbook MLP's widths, not drawn for it" in text
    assert (
        f"cpu: {row.counted_seconds_per_step * 1e6:,.1f} µs per step and {row.counted_gflop_per_s:.2f} GFLOP/s "
        f"against the MLPs' {row.seconds_per_step * 1e6:,.1f} µs and {row.gflop_per_s:.2f} GFLOP/s; 3 cells, "
        f"leave-one-out median |error| {row.counted_loo_median_abs_rel_error:.1%}"
    ) in text
    assert text in render_planner.planner_section(table, break_even)
    break_even_figure(
        [c for c in curves if c.placement == "resident"],
        points,
        tmp_path / "f.png",
        tmp_path / "f.svg",
        gpu_label="GPU",
        intervals=summary,
    )
    assert (tmp_path / "f.png").stat().st_size > 0
    assert render_planner.counted_paragraph(builders.cost_model_table(), builders.break_even_table()) == ""
