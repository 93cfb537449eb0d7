"""Rule resource_table: Snakemake's benchmark files beside each job's own body timing."""

from accel_choice import records
from accel_choice.io import atomic, envinfo, tables
from accel_choice.analyze import resources
from accel_choice.io.runtime import job
from accel_choice.records.resources import ResourceTable

inp, out = snakemake.input, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    rows = [
        resources.job_row(name.split("/")[0], name, benchmark, log_path)
        for name, benchmark, log_path in zip(snakemake.params.jobs, inp.benchmarks, inp.logs)
    ]
    summary = resources.rule_summary(rows)
    tables.write_csv(out.jobs_csv, [records.to_json(row) for row in rows])
    atomic.write_json(out.jobs_json, rows)
    tables.write_csv(out.csv, [records.to_json(rule) for rule in summary])
    atomic.write_record(
        out.json, ResourceTable(rules=tuple(summary), jobs=tuple(rows), environment=envinfo.quick_environment())
    )
    log.info("%d benchmarked jobs in %d rules", len(rows), len(summary))
