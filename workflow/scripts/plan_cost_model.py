"""Rule planner_cost_model: the cost model of each device, fitted to the timed grid and the benchmark's
cells, with every point's residual and prediction interval (analyze.fit_residuals)."""

from accel_choice import records
from accel_choice.analyze import breakeven_interval, fit_residuals, gpu_profile, planner, planner_fit
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job
from accel_choice.records.planner import CostModelTable

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    fitted = planner_fit.fit(snakemake.input, p)
    models = fitted.models.values()
    model_rows = tuple(planner.model_row(m) for m in models)
    gpu = fitted.profile  # the GPU of a device profile (planner.gpu_profile), where no GPU is measured or assumed
    if gpu is not None:
        model_rows += (planner.profile_row(gpu, fitted.workload(p.curve_batch_size)),)
    rules = NoiseRules(**p.noise)
    # The parameters' uncertainty: the models refitted to the same resamples as the break-even intervals.
    measured = breakeven_interval.measurements(fitted.grid, fitted.benchmark_cells, fitted.workload)
    refits = breakeven_interval.resampled_fits(measured, fitted.models, rules.bootstrap_resamples, p.seed)
    residuals = fit_residuals.table_residuals(
        fitted.points,
        [pt.workload if pt.source == "grid" else fitted.workload(pt.batch_size) for pt in fitted.points],
        fitted.models,
        refits,
        confidence=rules.confidence,
        seed=p.seed,
    )
    cost_model = CostModelTable(
        models=model_rows,
        points=tuple(fitted.points),
        residuals=residuals,
        interval_confidence=rules.confidence,
        interval_resamples=rules.bootstrap_resamples,
        host_to_device_gb_s=fitted.bandwidth / 1e9,
        host_to_device_source=fitted.bandwidth_source,
        host_to_device_memory=fitted.bandwidth_memory,
        gpu_startup_s=fitted.startup,
        gpu_startup_source=fitted.startup_source,
        epochs=p.epochs,
        threads=p.threads,
        environment=envinfo.quick_environment(),
        gpu_profile=None if gpu is None else gpu_profile.use(gpu, p.curve_batch_size),
    )
    atomic.write_record(out.cost_model, cost_model)
    tables.write_csv(out.cost_model_csv, [records.to_json(row) for row in model_rows])
    for row in model_rows:
        log.info(
            "%s (%s): %s s/step, %s GFLOP/s, %s GB/s, %s s/row, LOO median error %s",
            row.device,
            row.source,
            row.seconds_per_step,
            row.gflop_per_s,
            row.gb_per_s,
            row.seconds_per_row,
            row.loo_median_abs_rel_error,
        )
    outside = [r for r in residuals if not r.inside]
    log.info("%d of %d points inside their prediction intervals", len(residuals) - len(outside), len(residuals))
