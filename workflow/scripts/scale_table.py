"""Rule scale_table: the streaming study summarised - bottlenecks, the page cache's bend, the scale
scenario with the measured reader - and its figure."""

from accel_choice import records
from accel_choice.analyze import scale
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, tables
from accel_choice.io.runtime import job
from accel_choice.records.planner import Scenario
from accel_choice.records.scale import ScaleJob, StepRate
from accel_choice.render.scale import scale_figure

inp, out, p = snakemake.input, snakemake.output, snakemake.params
with job(snakemake.log[0], snakemake.threads) as log:
    jobs = [records.read(ScaleJob, path) for path in inp.jobs]
    steps = [records.read(StepRate, path) for path in inp.steps]
    summary = scale.scale_table(jobs, steps, records.read(Scenario, inp.scenario), NoiseRules(**p.noise))
    atomic.write_record(out.json, summary)
    tables.write_csv(out.csv, summary.bottlenecks)  # each estimate as its columns (Bottleneck.table_row)
    scale_figure(jobs, steps, out.png, out.svg)
    log.info(
        "best reader %s with %d workers: %.3f GB/s; scenario: %s",
        summary.best_format,
        summary.best_workers,
        summary.sustained_gb_per_s.point,
        ", ".join(f"{s.device} {s.bound} ({s.epoch_s:.1f} s)" for s in summary.scenario),
    )
    for part in summary.busy:
        log.warning("shared the machine: %s %s: %s", part.job, part.target_gb or "", "; ".join(part.reasons))
