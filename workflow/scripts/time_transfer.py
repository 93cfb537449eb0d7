"""Rule time_transfer: one repeat of the host<->device copies and the context start-up."""

import time

import torch

from accel_choice import atomic, dataio, devices, envinfo, transfer
from accel_choice.runtime import job

inp, p = snakemake.input, snakemake.params  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    device = devices.require(p.device)
    meta, export = atomic.read_json(inp.meta), atomic.read_json(inp.export)
    dataset = dataio.load_exported_parquet(inp.data, meta, export)
    x, y = torch.from_numpy(dataset.features.copy()), torch.from_numpy(dataset.target.copy())
    started = time.time()
    record = transfer.measure_transfers(x, p.batch_sizes, device, passes=p.passes, y=y)
    record.update(repeat=int(snakemake.wildcards.repeat), wall_interval=[started, time.time()],  # noqa: F821
                  environment=envinfo.quick_environment(meta["generator"]["seed"]))
    atomic.write_json(snakemake.output[0], record)  # noqa: F821
    log.info("context start-up %.1f ms", record["context_startup_s"] * 1e3)
