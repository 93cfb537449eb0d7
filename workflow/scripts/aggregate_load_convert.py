"""Rule aggregate_load_convert: per dataset and format, each stage's median over repeats."""

from accel_choice import records
from accel_choice.analyze import loads
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job
from accel_choice.records.loads import LoadConvertJob, LoadTable

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    timed = [records.read(LoadConvertJob, path) for path in snakemake.input.records]
    cells = loads.aggregate_load_convert(timed, NoiseRules(**p.noise))
    atomic.write_record(out.json, LoadTable(table=cells, environment=envinfo.quick_environment()))
    tables.write_csv(out.csv, [records.to_json(cell) for cell in cells])
    log.info("aggregated %d load/convert jobs into %d cells", len(timed), len(cells))
