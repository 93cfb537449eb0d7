"""Rule planner_break_even: the break-even curves, their bootstrap intervals and the figure."""

from accel_choice import records
from accel_choice.analyze import breakeven_interval, gpu_profile, planner, planner_calibration, planner_fit, scale
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, tables
from accel_choice.io.runtime import job
from accel_choice.records.breakeven import BreakEvenTable
from accel_choice.records.scale import ScaleJob
from accel_choice.render.break_even_figure import break_even_figure, storage_line
from accel_choice.render.planner import interval_text

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    f = planner_fit.fit(inp, p)
    cpu, gpu = f.models["cpu"], f.gpu
    base = f.workload(p.curve_batch_size)
    curves = planner.break_even_curves(cpu, gpu, base, p.sweep, f.bandwidth, f.startup, p.epochs)
    rules = NoiseRules(**p.noise)
    # Every break-even's interval: the cost model refitted to bootstrap resamples of the timed repeats.
    measured = breakeven_interval.measurements(f.grid, f.benchmark_cells, f.workload)
    # A profile's GPU (planner.gpu_profile) is drawn in each resample too: a new machine of the kind.
    intervals = breakeven_interval.break_even_intervals(
        curves,
        measured,
        f.models,
        f.profile or next(name for name in f.models if name != "cpu"),
        confidence=rules.confidence,
        resamples=rules.bootstrap_resamples,
        seed=p.seed,
        epochs=p.epochs,
        fallback_bytes_per_s=f.bandwidth,
    )
    summary = tuple(planner.break_even_summary(c, i, gpu) for c, i in zip(curves, intervals))
    profile_use = None if f.profile is None else gpu_profile.use(f.profile, p.curve_batch_size)
    # The intervals' simulated coverage for this design: the grid's jobs and the machines behind the GPU's step;
    # none for a GPU measured in this run, whose resampled grid and misfit the harness does not simulate.
    machines = profile_use.host_step_machines if profile_use else 0
    coverage = (
        None
        if f.gpu_source == "fitted"
        else planner_calibration.lookup(inp.coverage, grid_jobs=p.grid_jobs, machines=machines, level=rules.confidence)
    )
    # The streaming study's best sustained reader (scale.enabled): reading each epoch's input from disk.
    scale_jobs = [records.read(ScaleJob, path) for path in inp.scale_jobs]
    break_even_figure(
        [c for c in curves if c.placement == "resident"],
        f.points,
        out.png,
        out.svg,
        gpu_label=f"GPU {f.gpu_source}, data resident, start-up and one copy spread over {p.epochs} epochs",
        intervals=summary,
        storage=storage_line(scale.best_reader(scale_jobs)) if scale_jobs else None,
    )
    break_even = BreakEvenTable(
        summary=summary,
        curves=tuple(planner.curve_rows(curves)),
        gpu_model_source=f.gpu_source,
        label="modelled",
        resampled_devices=breakeven_interval.resampled_devices(f.models),
        seed=p.seed,
        gpu_profile=profile_use,
        coverage=coverage,
    )
    atomic.write_record(out.break_even, break_even)
    tables.write_csv(out.break_even_csv, [records.to_json(row) for row in break_even.curves])
    tables.write_csv(out.break_even_summary_csv, [records.to_json(row) for row in summary])
    # A list of summary rows, as break_even.json's "summary" (read by no rule; kept as a list).
    atomic.write_json(out.break_even_summary_json, list(summary))
    for s in summary:
        share = f"{100 * s.break_even_share:.0f}% of {s.resamples} resamples"
        log.info("break-even %s (%s): %s, %s, %s with one", s.axis, s.placement, s.break_even, interval_text(s), share)
