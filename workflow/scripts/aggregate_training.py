"""Rule aggregate_training: medians with spread per batch size and loader, and the exercise-2 JSON."""

from accel_choice.analyze import aggregate
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job

p, out = snakemake.params, snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    records = aggregate.read_training_records(snakemake.input.records)  # noqa: F821
    summary = aggregate.training_summary(records, p.rows, p.noise_iqr_ratio, p.outlier_factor, p.foreign_cpu_share,
                                         p.loadavg_rise)
    table = summary["table"]
    atomic.write_json(out.json, {**summary, "environment": envinfo.quick_environment()})
    tables.write_csv(out.csv, table)
    atomic.write_json(out.exercise2, aggregate.exercise2_json(table))
    log.info("aggregated %d records into %d cells, %d noisy", len(records), len(table), sum(r["noisy"] for r in table))
