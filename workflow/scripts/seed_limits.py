"""Rule seed_limits: numeric, statistical and environmental reproducibility, measured."""

import tempfile

from accel_choice import records
from accel_choice.io import atomic, envinfo
from accel_choice.measure import northstar
from accel_choice.io.runtime import job

inp, p = snakemake.input, snakemake.params  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    meta = atomic.read_json(inp.meta)
    splits = northstar.load_splits(inp.table, meta)
    with tempfile.TemporaryDirectory() as workdir:
        result = northstar.seed_limits(
            splits, [p.seed + i for i in range(p.seeds)], workdir, hidden=p.hidden, batch_size=p.batch_size, lr=p.lr,
            patience=p.patience, min_delta=p.min_delta, max_epochs=p.max_epochs,
        )
    environments = [atomic.read_json(path)["environment"] for path in inp.histories] + [
        records.to_json(envinfo.quick_environment(p.seed))]
    result["environmental"] = {
        "records_compared": len(environments),
        "differences": envinfo.differences(environments),
        "note": "environment records of every Northstar training job and of this job; only the same records "
                "(versions, hardware, threads) promise the same numbers",
    }
    result["batch_size"] = p.batch_size
    atomic.write_json(snakemake.output[0], result)  # noqa: F821
    log.info("numeric: %s; statistical: %s", result["numeric"], result["statistical"])
