"""Rule time_load_convert: one repeat of read + convert for one dataset and format."""

from accel_choice import records
from accel_choice.io import atomic, dataio, envinfo
from accel_choice.measure import loadconv
from accel_choice.io.runtime import job
from accel_choice.records.data import DatasetExport, DatasetMeta

inp, wc = snakemake.input, snakemake.wildcards
with job(snakemake.log[0], snakemake.threads) as log:
    meta = records.read(DatasetMeta, inp.meta)
    export = records.read(DatasetExport, inp.export)
    dataio.verify_file(inp.data, export.files[wc.fmt].sha256, regenerate_hint="the export_data rule")
    # The record's wall-clock interval lets a test prove no two timing jobs overlapped.
    record = loadconv.measure_load_convert(
        inp.data,
        wc.fmt,
        meta.feature_columns,
        meta.target_column,
        meta.matrix_sha256,
        passes=snakemake.params.passes,
        dataset=wc.dataset,
        repeat=int(wc.repeat),
        environment=envinfo.quick_environment(meta.generator.seed),
    )
    atomic.write_record(snakemake.output[0], record)
    log.info("%s %s: total %.3f ms", wc.dataset, wc.fmt, record.total_s * 1e3)
