"""Rule time_scale: one format's dataset grown size by size to scale.sizes_gb, every stage timed at each."""

import signal
import sys
import time
from pathlib import Path

import torch

from accel_choice.io import streaming_data
from accel_choice.io.runtime import job
from accel_choice.measure import scale
from accel_choice.measure.job import timing_job
from accel_choice.records.scale import ScaleJob

wc, p = snakemake.wildcards, snakemake.params
# Snakemake stops a job with SIGTERM: exit through the `finally` below, so the dataset is deleted.
signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
with job(snakemake.log[0], snakemake.threads) as log:
    folder = Path(p.scratch) / wc.format
    streaming_data.remove(folder)  # a dataset left by a killed job is not reused
    # Refused before a byte is written when the largest dataset cannot fit (the disk may have filled
    # since the workflow was parsed).
    problem = streaming_data.free_space_problem(p.scratch, max(p.sizes_gb), p.features, p.row_group_rows)
    if problem:
        raise streaming_data.ScaleDataError(problem)
    method = scale.cache_drop_method()
    log.info("cold reads: %s", method)
    part_rows = streaming_data.rows_for(p.part_gb, p.features, p.row_group_rows)
    sizes = []
    # The drift sentinel: timed when the envelope opens and after each size.
    with timing_job(snakemake.output[0], seed=p.seed, sentinel=torch.device("cpu")) as envelope:
        try:
            for target in p.sizes_gb:
                rows = streaming_data.rows_for(target, p.features, p.row_group_rows)
                available = scale.available_memory_bytes()  # before this size's files enter the page cache
                started = time.perf_counter()
                streaming_data.grow(
                    folder,
                    wc.format,
                    rows,
                    features=p.features,
                    row_group_rows=p.row_group_rows,
                    part_rows=part_rows,
                    seed=p.seed,
                    compression=p.compression,
                )
                generate_s = time.perf_counter() - started
                log.info("%s: %g GB, %d rows written in %.1f s", wc.format, target, rows, generate_s)
                sizes.append(
                    scale.measure_size(
                        folder,
                        target_gb=target,
                        rows=rows,
                        generate_s=generate_s,
                        batch_size=p.batch_size,
                        workers=p.workers,
                        method=method,
                        available_bytes=available,
                        seed=p.seed,
                        log=log,
                    )
                )
                log.info("sentinel after %g GB: %.4f s", target, envelope.sentinel.tick())
        finally:
            streaming_data.remove(folder)
        envelope.finish(
            ScaleJob,
            format=wc.format,
            features=p.features,
            batch_size=p.batch_size,
            row_group_rows=p.row_group_rows,
            compression=p.compression if wc.format == "parquet" else "none",
            cache_drop=method,
            sizes=tuple(sizes),
        )
