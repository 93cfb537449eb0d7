"""Rule aggregate_training: medians with spread per batch size, threads and loader, the exercise-2 JSON and
every timed epoch and every cell's estimates as one row each."""

from accel_choice.analyze import aggregate
from accel_choice.io import atomic, envinfo, tables, tidy
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io.runtime import job

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    jobs = aggregate.read_training_jobs(snakemake.input.records)
    training = aggregate.training_table(jobs, p.rows, NoiseRules(**p.noise), envinfo.quick_environment(), "cpu")
    atomic.write_record(out.json, training)
    tables.write_csv(out.csv, training.table)
    tables.write_html(out.html, training.table, "CPU training cells")
    atomic.write_json(out.exercise2, aggregate.exercise2_json(training.table))
    rows = tidy.write_epochs(out.epochs, out.epochs_csv, jobs, "cpu")
    tidy.write_estimates(out.estimates, out.estimates_csv, training.table)
    cells = training.table
    log.info("aggregated %d jobs into %d cells, %d noisy", len(jobs), len(cells), sum(c.noisy for c in cells))
    log.info("every timed epoch: %d rows in %s", rows, out.epochs)
    floor = training.sentinel.noise_floor
    log.info(
        "sentinel: run median %.1f ms, %d job(s) flagged, noise floor %s",
        training.sentinel.run_median_s * 1e3,
        training.sentinel.flagged,
        "n/a" if floor is None else f"±{floor:.1%}",
    )
