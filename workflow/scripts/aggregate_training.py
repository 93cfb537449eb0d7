"""Rule aggregate_training: medians with spread per batch size and loader, and the exercise-2 JSON."""

from accel_choice.analyze import aggregate
from accel_choice.io import atomic, envinfo, tables
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io.runtime import job
from accel_choice.records.training import TrainingTable

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    measured = aggregate.read_training_records(snakemake.input.records)
    table = aggregate.aggregate_training(measured, p.rows, NoiseRules(**p.noise))
    atomic.write_record(
        out.json,
        TrainingTable(
            table=tuple(table), non_finite=aggregate.non_finite_runs(measured), environment=envinfo.quick_environment()
        ),
    )
    tables.write_csv(out.csv, table)
    atomic.write_json(out.exercise2, aggregate.exercise2_json(table))
    log.info("aggregated %d records into %d cells, %d noisy", len(measured), len(table), sum(c.noisy for c in table))
