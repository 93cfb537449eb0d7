"""Rule aggregate_load_convert: per dataset and format, each stage's median over repeats."""

from accel_choice.analyze import aggregate, loads
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job

p, out = snakemake.params, snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    records = [aggregate.require_keys(atomic.read_json(path), loads.LOAD_KEYS, path)
               for path in snakemake.input.records]  # noqa: F821
    table = loads.aggregate_load_convert(records, p.noise_iqr_ratio, p.outlier_factor, p.foreign_cpu_share, p.loadavg_rise)
    atomic.write_json(out.json, {"table": table, "environment": envinfo.quick_environment()})
    tables.write_csv(out.csv, table)
    log.info("aggregated %d load/convert records into %d cells", len(records), len(table))
