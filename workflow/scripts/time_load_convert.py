"""Rule time_load_convert: one repeat of read + convert for one dataset and format."""

import time

from accel_choice.io import atomic, dataio, envinfo
from accel_choice.measure import loadconv
from accel_choice.io.runtime import job

inp, wc = snakemake.input, snakemake.wildcards  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    meta = atomic.read_json(inp.meta)
    export = atomic.read_json(inp.export)
    dataio.verify_file(inp.data, export["files"][wc.fmt]["sha256"], regenerate_hint="the export_data rule")
    started = time.time()
    record = loadconv.measure_load_convert(
        inp.data, wc.fmt, meta["feature_columns"], meta["target_column"], meta["matrix_sha256"],
        passes=snakemake.params.passes,  # noqa: F821
    )
    # Wall-clock interval of the measurement: lets a test prove no two timing jobs overlapped.
    record.update(dataset=wc.dataset, repeat=int(wc.repeat), wall_interval=[started, time.time()], environment=envinfo.quick_environment(meta["generator"]["seed"]))
    atomic.write_json(snakemake.output[0], record)  # noqa: F821
    log.info("%s %s: total %.3f ms", wc.dataset, wc.fmt, record["total_s"] * 1e3)
