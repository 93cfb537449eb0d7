"""Rule import_benchmark: your own benchmark data (data.benchmark.table or .arrays), checked and
written as the canonical .npy matrix and its metadata, like the generated one."""

from accel_choice.io import benchmark_data, dataio, envinfo
from accel_choice.io.runtime import job

p = snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    dataset, sample_shape, source = benchmark_data.load(p.source, p.seed)
    meta = dataio.save_dataset(
        dataset,
        snakemake.output.npy,
        snakemake.output.meta,
        source,
        envinfo.quick_environment(p.seed),
        sample_shape=sample_shape,
    )
    log.info("imported %s: %s rows of shape %s, sha256 %s", source.files, meta.rows, sample_shape, meta.matrix_sha256)
