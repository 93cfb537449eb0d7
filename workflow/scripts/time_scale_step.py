"""Rule time_scale_step: the training step's own rate at the scale study's width, on one device."""

import torch

from accel_choice.io.runtime import job
from accel_choice.measure import scale_step
from accel_choice.measure.job import timing_job
from accel_choice.records.scale import StepRate

wc, p = snakemake.wildcards, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    device = torch.device(wc.device)
    # The foreign-CPU meter and the drift sentinel bracket both rates: the sentinel timed before and after.
    with timing_job(snakemake.output[0], seed=p.seed, sentinel=device, meter=True) as envelope:
        train = scale_step.step_rate(
            device, p.features, p.hidden, p.batch_size, steps=p.steps, blocks=p.blocks, seed=p.seed
        )
        copy = None
        if device.type == "cuda":
            copy = scale_step.copy_rate(device, p.features, p.batch_size, copies=p.steps, blocks=p.blocks, seed=p.seed)
        envelope.sentinel.tick()
        envelope.finish(
            StepRate,
            device=wc.device,
            features=p.features,
            hidden=p.hidden,
            batch_size=p.batch_size,
            threads=snakemake.threads,
            train=train,
            copy=copy,
        )
    log.info("%s: %.0f samples/s (%.0f–%.0f)", wc.device, train.per_s.point, train.per_s.low, train.per_s.high)
