"""Rule aggregate_gpu: GPU training medians per variant, and the transfer table."""

from accel_choice.analyze import aggregate, loads
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job
from accel_choice.records import read, to_json  # records.read: `records` names the training records below
from accel_choice.records.loads import TransferJob

p, out = snakemake.params, snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    records = aggregate.read_training_records(snakemake.input.records)  # noqa: F821
    summary = aggregate.training_summary(records, p.rows, p.noise_iqr_ratio, p.outlier_factor, p.foreign_cpu_share,
                                         p.loadavg_rise)
    table = summary["table"]
    atomic.write_json(out.json, {**summary, "environment": envinfo.quick_environment()})
    tables.write_csv(out.csv, table)
    transfers = loads.aggregate_transfers([read(TransferJob, path) for path in snakemake.input.transfers])  # noqa: F821
    atomic.write_record(out.transfers, transfers)
    tables.write_csv(out.transfers_csv, [to_json(cell) for cell in transfers.copies])
    log.info("GPU: %d records into %d cells, %d non-finite", len(records), len(table), sum(not r["finite"] for r in records))
