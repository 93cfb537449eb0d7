"""Rule time_load_convert: one repeat of read + convert for every dataset and format, interleaved."""

from pathlib import Path

from accel_choice import records
from accel_choice.analyze.stats import NoiseRules, log_job_warnings
from accel_choice.io import dataio
from accel_choice.io.runtime import job
from accel_choice.measure import loadconv
from accel_choice.measure.job import timing_job
from accel_choice.records.data import DatasetExport, DatasetMeta

inp = snakemake.input
with job(snakemake.log[0], snakemake.threads) as log:
    datasets = [(records.read(DatasetMeta, m), records.read(DatasetExport, e)) for m, e in zip(inp.meta, inp.export)]
    by_name = {
        exported.file: (meta, export, fmt)  # the file's name, as export_data wrote it
        for meta, export in datasets
        for fmt, exported in export.files.items()
    }
    files = []
    for path in map(Path, inp.data):
        meta, export, fmt = by_name[path.name]
        dataio.verify_file(path, export.files[fmt].sha256, regenerate_hint="the export_data rule")
        files.append(
            loadconv.FileToLoad(path, meta.name, fmt, meta.feature_columns, meta.target_column, meta.matrix_sha256)
        )
    with timing_job(snakemake.output[0], seed=datasets[0][0].generator.seed) as envelope:
        record = loadconv.measure_load_convert(
            files, passes=snakemake.params.passes, repeat=int(snakemake.wildcards.repeat), envelope=envelope
        )
        envelope.write(record)
    log_job_warnings(log, [record], None, NoiseRules(**snakemake.config["aggregate"]))
    for load in record.loads:
        log.info("%s %s: total %.3f ms", load.dataset, load.format, load.total_s * 1e3)
