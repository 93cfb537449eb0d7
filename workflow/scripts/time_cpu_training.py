"""Rule time_cpu_training: one repeat, every thread count, batch size and loader interleaved, on the CPU."""

from accel_choice.analyze.stats import NoiseRules, log_training_job
from accel_choice.io import dataio
from accel_choice.io.runtime import check_thread_counts, job, training_options
from accel_choice.measure import steps, training
from accel_choice.measure.reference import ReferenceStep
from accel_choice.measure.job import timing_job
from accel_choice.records.training_job import TrainingJob

inp, wc, p = snakemake.input, snakemake.wildcards, snakemake.params
check_thread_counts(snakemake.threads, p.thread_counts)
with job(snakemake.log[0], snakemake.threads) as log:
    x, y, _ = dataio.load_benchmark_tensors(inp.data, inp.meta, inp.export)
    with timing_job(snakemake.output[0], seed=p.seed) as envelope:
        fixed = ReferenceStep()  # the same training step on one thread in every CPU job, timed once per round
        records, sentinel = training.measure_training_job(
            x,
            y,
            [
                v
                for threads in p.thread_counts  # one count after the other: one switch a round (epoch_order)
                for size in p.batch_sizes
                for v in steps.cpu_variants(p.loaders, p.compile, batch_size=size, threads=threads)
            ],
            repeat=int(wc.repeat),
            reference_step=fixed,
            **training_options(p),
        )
        envelope.finish(TrainingJob, records=tuple(records), sentinel=sentinel, reference_step=fixed.readings())
    log_training_job(log, records, sentinel, NoiseRules(**snakemake.config["aggregate"]))
