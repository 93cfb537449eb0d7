"""Rule seed_limits: numeric, statistical and environmental reproducibility, measured; and its table."""

import tempfile

from accel_choice import records
from accel_choice.analyze import selection
from accel_choice.io import atomic, envinfo, tables
from accel_choice.measure import northstar
from accel_choice.io.runtime import job
from accel_choice.records.northstar import NorthstarHistory, NorthstarPrepare

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    meta = records.read(NorthstarPrepare, inp.meta)
    selection.check_batch_size_fits(meta.splits.train.rows, p.batch_size, str(inp.meta), "selection.seed_batch_size")
    # The environment records of every Northstar training job and of this job.
    environments = [records.read(NorthstarHistory, path).environment for path in inp.histories]
    environments.append(envinfo.quick_environment(p.seed))
    splits = northstar.load_splits(inp.table, meta)
    with tempfile.TemporaryDirectory() as workdir:
        result = northstar.seed_limits(
            splits,
            [p.seed + i for i in range(p.seeds)],
            workdir,
            batch_size=p.batch_size,
            settings=northstar.RunSettings(**p.run),
            environments=environments,
        )
    atomic.write_record(out.json, result)
    rows = selection.seed_table(result)
    tables.write_csv(out.table_csv, [records.to_json(row) for row in rows])
    atomic.write_json(out.table_json, rows)
    log.info("numeric: %s; statistical: %s", result.numeric, result.statistical)
