"""Rule time_gpu_training: one repeat of one batch size, every precision and placement on the GPU, the CPU's fast
path at each thread count beside them (the same rounds: their ratio pairs job by job)."""

from accel_choice import records as record_files
from accel_choice.analyze.stats import NoiseRules, log_training_job
from accel_choice.io import dataio
from accel_choice.io.runtime import check_thread_counts, job, training_options
from accel_choice.measure import devices, steps, training
from accel_choice.measure.job import timing_job
from accel_choice.records.training_job import TrainingJob

inp, wc, p = snakemake.input, snakemake.wildcards, snakemake.params
check_thread_counts(snakemake.threads, p.thread_counts)
with job(snakemake.log[0], snakemake.threads) as log:
    device = devices.require(p.device)
    x, y, _ = dataio.load_benchmark_tensors(inp.data, inp.meta, inp.export)
    size = int(wc.batch_size)
    cpu = [
        v
        for threads in p.thread_counts
        for v in steps.cpu_variants(["fastpath"], p.compile, batch_size=size, threads=threads)
    ]
    with timing_job(snakemake.output[0], seed=p.seed) as envelope:
        measured, sentinel = training.measure_training_job(
            x,
            y,
            steps.gpu_variants(
                p.precisions, p.placements, p.compile, batch_size=size, device=device.type, threads=p.gpu_threads
            ),
            repeat=int(wc.repeat),
            grad_scaler=p.grad_scaler,
            beside=cpu,
            **training_options(p),
        )
        split = len(measured) - len(cpu)  # the CPU's records follow the GPU's (measure_training_job)
        records, beside = measured[:split], measured[split:]
        probe = devices.probe()
        envelope.finish(
            TrainingJob,
            records=tuple(records),
            beside=tuple(beside),
            sentinel=sentinel,
            probe=probe if isinstance(probe, dict) else record_files.to_json(probe),
        )
    log_training_job(log, [*records, *beside], sentinel, NoiseRules(**snakemake.config["aggregate"]))
