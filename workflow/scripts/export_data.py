"""Rule export_data: Parquet (explicit schema) and CSV, with bytes, sha256 and schema recorded."""

from accel_choice import records
from accel_choice.io import atomic, dataio, envinfo
from accel_choice.io.runtime import job
from accel_choice.records.data import DatasetMeta

out = snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    meta = records.read(DatasetMeta, snakemake.input.meta)
    dataset = dataio.load_dataset(snakemake.input.npy, meta)
    export = dataio.export_dataset(
        dataset, out.parquet, out.csv, snakemake.params.compression, envinfo.quick_environment(meta.generator.seed)
    )
    atomic.write_record(out.record, export)
    log.info("exported %s: %s", dataset.name, {fmt: exported.bytes for fmt, exported in export.files.items()})
