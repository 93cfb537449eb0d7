"""Rule time_scale_step: the training step's own rate at the scale study's width, on one device."""

import torch

from accel_choice.io import atomic, envinfo
from accel_choice.io.runtime import job
from accel_choice.measure import scale_step
from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.measure.sentinel import Sentinel
from accel_choice.records.scale import StepRate

wc, p = snakemake.wildcards, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    device = torch.device(wc.device)
    meter, sentinel = ForeignCpuMeter().start(), Sentinel(device)
    sentinel.tick()
    train = scale_step.step_rate(
        device, p.features, p.hidden, p.batch_size, steps=p.steps, blocks=p.blocks, seed=p.seed
    )
    copy = None
    if device.type == "cuda":
        copy = scale_step.copy_rate(device, p.features, p.batch_size, copies=p.steps, blocks=p.blocks, seed=p.seed)
    sentinel.tick()
    foreign = meter.stop()
    atomic.write_record(
        snakemake.output[0],
        StepRate(
            device=wc.device,
            features=p.features,
            hidden=p.hidden,
            batch_size=p.batch_size,
            threads=snakemake.threads,
            train=train,
            copy=copy,
            environment=envinfo.quick_environment(p.seed),
            foreign_cpu_share=foreign.share,
            sentinel=sentinel.readings(),
        ),
    )
    log.info("%s: %.0f samples/s (%.0f–%.0f)", wc.device, train.per_s, train.low, train.high)
