"""Rule export_data: Parquet (explicit schema) and CSV, with bytes, sha256 and schema recorded."""

from accel_choice.io import atomic, dataio, envinfo
from accel_choice.io.runtime import job

out = snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    meta = atomic.read_json(snakemake.input.meta)  # noqa: F821
    dataset = dataio.load_dataset(snakemake.input.npy, meta)  # noqa: F821
    record = dataio.export_dataset(dataset, out.parquet, out.csv, snakemake.params.compression)  # noqa: F821
    record["environment"] = envinfo.quick_environment(meta["generator"]["seed"])
    atomic.write_json(out.record, record)
    log.info("exported %s: %s", dataset.name, {k: v["bytes"] for k, v in record["files"].items()})
