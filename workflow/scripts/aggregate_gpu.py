"""Rule aggregate_gpu: GPU training medians per variant, and the transfer table."""

from accel_choice import records
from accel_choice.analyze import aggregate, loads
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job
from accel_choice.records.loads import TransferJob
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
    transfers = loads.aggregate_transfers([records.read(TransferJob, path) for path in snakemake.input.transfers])
    atomic.write_record(out.transfers, transfers)
    tables.write_csv(out.transfers_csv, transfers.copies)
    log.info(
        "GPU: %d records into %d cells, %d non-finite", len(measured), len(table), sum(not r.finite for r in measured)
    )
