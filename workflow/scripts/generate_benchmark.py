"""Rule generate_benchmark: the seeded n × d benchmark matrix of section 28.3.4."""

from accel_choice.io import dataio, envinfo
from accel_choice.measure import datagen
from accel_choice.io.runtime import job
from accel_choice.records.data import BenchmarkGenerator

p = snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    dataset = datagen.make_benchmark(p.rows, p.features, p.noise, p.seed)
    meta = dataio.save_dataset(
        dataset,
        snakemake.output.npy,
        snakemake.output.meta,
        BenchmarkGenerator(rows=p.rows, features=p.features, noise=p.noise, seed=p.seed),
        envinfo.quick_environment(p.seed),
    )
    log.info("benchmark %s rows, positive rate %.3f, sha256 %s", meta.rows, meta.positive_rate, meta.matrix_sha256)
