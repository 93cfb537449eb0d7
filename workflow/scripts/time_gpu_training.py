"""Rule time_gpu_training: one repeat of one batch size, every precision and placement, on the GPU."""

from accel_choice import records as record_files
from accel_choice.analyze.stats import NoiseRules, log_training_job
from accel_choice.io import dataio
from accel_choice.io.runtime import job, training_options
from accel_choice.measure import devices, steps, training
from accel_choice.measure.job import timing_job
from accel_choice.records.training import TrainingJob

inp, wc, p = snakemake.input, snakemake.wildcards, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    device = devices.require(p.device)
    x, y, _ = dataio.load_benchmark_tensors(inp.data, inp.meta, inp.export)
    with timing_job(snakemake.output[0], seed=p.seed) as envelope:
        records, sentinel = training.measure_training_job(
            x,
            y,
            steps.gpu_variants(
                p.precisions, p.placements, p.compile, batch_size=int(wc.batch_size), device=device.type
            ),
            repeat=int(wc.repeat),
            grad_scaler=p.grad_scaler,
            **training_options(p),
        )
        probe = devices.probe()
        envelope.finish(
            TrainingJob,
            records=tuple(records),
            sentinel=sentinel,
            probe=probe if isinstance(probe, dict) else record_files.to_json(probe),
        )
    log_training_job(log, records, sentinel, NoiseRules(**snakemake.config["aggregate"]))
