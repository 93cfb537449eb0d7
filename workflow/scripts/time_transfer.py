"""Rule time_transfer: one repeat of the host<->device copies and the context start-up."""

from accel_choice.io import dataio
from accel_choice.io.runtime import job
from accel_choice.measure import devices, transfer
from accel_choice.measure.job import timing_job

inp, p = snakemake.input, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    device = devices.require(p.device)
    x, y, meta = dataio.load_benchmark_tensors(inp.data, inp.meta, inp.export)
    with timing_job(snakemake.output[0], seed=meta.generator.seed) as envelope:
        record = transfer.measure_transfers(
            x, p.batch_sizes, device, passes=p.passes, y=y, repeat=int(snakemake.wildcards.repeat), envelope=envelope
        )
        envelope.write(record)
    log.info("context start-up %.1f ms", record.context_startup_s * 1e3)
