"""Rule planner_cost_model: the cost model of each device, fitted to the timed grid and the benchmark's cells."""

from accel_choice import records
from accel_choice.analyze import gpu_profile, planner, planner_fit
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
    cost_model = CostModelTable(
        models=model_rows,
        points=tuple(fitted.points),
        residuals=tuple(
            r for m in models for q in (m.quality, m.counted_quality) if q is not None for r in q.residuals
        ),
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
            "%s (%s): %s s/step, %s GFLOP/s, %s GB/s, LOO median error %s",
            row.device,
            row.source,
            row.seconds_per_step,
            row.gflop_per_s,
            row.gb_per_s,
            row.loo_median_abs_rel_error,
        )
