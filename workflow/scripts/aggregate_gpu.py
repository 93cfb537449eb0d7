"""Rule aggregate_gpu: GPU training medians per variant, the CPU's timed beside them, every timed epoch of the GPU
jobs as one row, and the transfer table."""

from accel_choice import records
from accel_choice.analyze import aggregate, loads
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo, tables, tidy
from accel_choice.io.runtime import job
from accel_choice.records.loads import TransferJob

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    jobs = aggregate.read_training_jobs(snakemake.input.records)
    training = aggregate.training_table(jobs, p.rows, NoiseRules(**p.noise), envinfo.quick_environment(), "gpu")
    measured = [r for j in jobs for r in (*j.records, *j.beside)]
    atomic.write_record(out.json, training)
    tables.write_csv(out.csv, training.table + training.beside)
    tidy.write_epochs(out.epochs, out.epochs_csv, jobs, "gpu")
    tidy.write_estimates(out.estimates, out.estimates_csv, training.table + training.beside)
    transfers = loads.aggregate_transfers(
        [records.read(TransferJob, path) for path in snakemake.input.transfers], NoiseRules(**p.noise)
    )
    atomic.write_record(out.transfers, transfers)
    tables.write_csv(out.transfers_csv, transfers.copies)
    log.info(
        "GPU jobs: %d records into %d GPU cells and %d CPU cells beside them, %d non-finite",
        len(measured),
        len(training.table),
        len(training.beside),
        sum(not r.finite for r in measured),
    )
