"""Rule aggregate_training: medians with spread per batch size and loader, and the exercise-2 JSON."""

from accel_choice.analyze import aggregate
from accel_choice.io import atomic, envinfo, tables
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io.runtime import job

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    measured = aggregate.read_training_records(snakemake.input.records)
    training = aggregate.training_table(measured, p.rows, NoiseRules(**p.noise), envinfo.quick_environment())
    atomic.write_record(out.json, training)
    tables.write_csv(out.csv, training.table)
    atomic.write_json(out.exercise2, aggregate.exercise2_json(training.table))
    cells = training.table
    log.info("aggregated %d records into %d cells, %d noisy", len(measured), len(cells), sum(c.noisy for c in cells))
