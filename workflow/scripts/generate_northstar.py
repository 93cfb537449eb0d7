"""Rule generate_northstar: the Northstar-like orders table with its late-delivery label."""

from accel_choice.io import dataio, envinfo
from accel_choice.measure import datagen
from accel_choice.io.runtime import job
from accel_choice.records.data import NorthstarGenerator

p = snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    dataset = datagen.make_northstar(p.rows, p.late_rate, p.seed)
    meta = dataio.save_dataset(
        dataset,
        snakemake.output.npy,
        snakemake.output.meta,
        NorthstarGenerator(rows=p.rows, late_rate=p.late_rate, seed=p.seed),
        envinfo.quick_environment(p.seed),
    )
    log.info("northstar %s rows, late rate %.3f, sha256 %s", meta.rows, meta.positive_rate, meta.matrix_sha256)
