"""Rule time_cost_model: one repeat of the planner's grid of workloads on one device."""

from accel_choice.io.runtime import job
from accel_choice.measure import grid
from accel_choice.measure.job import timing_job
from accel_choice.records.grid import GridJob, grid_workloads

wc, p = snakemake.wildcards, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    workloads = grid_workloads(p.grid["rows"], p.grid["features"], p.grid["hidden"], p.grid["batch_sizes"])
    with timing_job(snakemake.output[0], seed=p.seed) as envelope:
        records, sentinel = grid.measure_grid(
            workloads,
            int(wc.repeat),
            device=wc.device,
            seed=p.seed,
            lr=p.lr,
            warmup_steps=p.warmup_steps,
            epochs=p.epochs_per_job,
        )
        envelope.finish(GridJob, records=tuple(records), sentinel=sentinel)
    for r in records:
        log.info("n=%d d=%d h=%d B=%d: epoch %.2f ms", r.rows, r.features, r.hidden, r.batch_size, r.epoch_s * 1e3)
