"""Rule time_transfer: one repeat of the host<->device copies and the context start-up."""

from accel_choice.io import atomic, dataio, envinfo
from accel_choice.measure import devices, transfer
from accel_choice.io.runtime import job

inp, p = snakemake.input, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    device = devices.require(p.device)
    x, y, meta = dataio.load_benchmark_tensors(inp.data, inp.meta, inp.export)
    # The record's wall-clock interval lets a test prove no two timing jobs overlapped.
    record = transfer.measure_transfers(
        x,
        p.batch_sizes,
        device,
        passes=p.passes,
        y=y,
        repeat=int(snakemake.wildcards.repeat),
        # Described after the copies: asking torch about the GPU first would start CUDA before the
        # context start-up is timed.
        environment=lambda: envinfo.quick_environment(meta.generator.seed),
    )
    atomic.write_record(snakemake.output[0], record)
    log.info("context start-up %.1f ms", record.context_startup_s * 1e3)
