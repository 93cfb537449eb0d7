"""Rule planner: cost model per device, break-even curves, FLOP-counter check, scale scenario."""

import dataclasses

from accel_choice import records
from accel_choice.analyze import aggregate, breakeven_interval, model_work, planner, scale
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job
from accel_choice.measure import flopcheck
from accel_choice.records.loads import DeviceProbe, TransferTable
from accel_choice.records.grid import GridJob, Workload
from accel_choice.records.breakeven import BreakEvenTable
from accel_choice.records.model import ModelProfile
from accel_choice.records.scale import ScaleJob
from accel_choice.records.planner import CostModelTable, FlopCheck
from accel_choice.records.training import TrainingTable
from accel_choice.render import scale as scale_words
from accel_choice.render.break_even_figure import break_even_figure

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    grid = [r for path in inp.grid for r in records.read(GridJob, path).records]
    tables = [records.read(TrainingTable, inp.training)]
    transfers = None
    if inp.get("gpu_training"):  # planned only where a GPU is measured
        tables.append(records.read(TrainingTable, inp.gpu_training[0]))
        transfers = records.read(TransferTable, inp.transfers[0])
    train_table = [cell for table in tables for cell in table.table]
    probe = records.read(DeviceProbe, inp.probe)

    rules = NoiseRules(**p.noise)
    # The benchmark's cells at the grid's thread count (the first of timing.threads): the CPU rates hold for it.
    benchmark_cells = [c for c in train_table if c.threads == p.threads]
    # The grid times the textbook MLP d → hidden → 1 on Adam and BCE. Any other model (your own, or the
    # textbook MLP trained otherwise) enters the fit, and the curves, as its counted profile describes it.
    per_sample = None if p.textbook else model_work.PerSample.of(records.read(ModelProfile, inp.profile))

    def workload(batch_size):
        if per_sample is None:
            return Workload(rows=p.rows, features=p.features, hidden=p.hidden, batch_size=batch_size)
        return model_work.CountedWorkload(rows=p.rows, batch_size=batch_size, per_sample=per_sample)

    points = planner.grid_points(grid, rules) + planner.benchmark_points(benchmark_cells, workload)
    models = planner.device_models(points, p.gpu_assumed, per_sample)
    gpu_name = next(name for name in models if name != "cpu")
    bandwidth, bandwidth_source, bandwidth_memory = planner.host_to_device_bytes_per_s(
        transfers, p.assumed_host_to_device_gb_s
    )
    startup, startup_source = planner.gpu_startup_seconds(train_table, p.gpu_assumed["startup_s"])

    base = workload(p.curve_batch_size)
    curves = planner.break_even_curves(models["cpu"], models[gpu_name], base, p.sweep, bandwidth, startup, p.epochs)
    # Every break-even's interval: the cost model refitted to bootstrap resamples of the timed repeats.
    intervals = breakeven_interval.break_even_intervals(
        curves,
        breakeven_interval.measurements(grid, benchmark_cells, workload),
        models,
        gpu_name,
        confidence=rules.confidence,
        resamples=rules.bootstrap_resamples,
        seed=p.seed,
    )
    summary = tuple(planner.break_even_summary(c, i) for c, i in zip(curves, intervals))
    # The streaming study's best sustained reader (scale.enabled): reading each epoch's input from disk.
    scale_jobs = [records.read(ScaleJob, path) for path in inp.scale_jobs]
    storage = scale.best_reader(scale_jobs) if scale_jobs else None
    break_even_figure(
        [c for c in curves if c.placement == "resident"],
        points,
        out.png,
        out.svg,
        gpu_label=f"GPU {models[gpu_name].source}, data resident, start-up and one copy spread over {p.epochs} epochs",
        intervals=summary,
        storage=None
        if storage is None
        else (
            storage[3].per_s,
            f"reading from disk ({storage[0].format}, {scale_words.reader_label(storage[2])}, measured)",
        ),
    )

    flop_check = FlopCheck(
        table=tuple(
            flopcheck.flop_table(
                p.features,
                p.hidden,
                p.batch_sizes,
                p.rows,
                # The measured epochs are the textbook MLP's only when it was timed.
                planner.fastpath_cpu_seconds(benchmark_cells) if p.textbook else None,
            )
        )
    )

    gpu_memory, gpu_memory_source = planner.gpu_memory_bytes(probe, p.gpu_assumed["memory_gb"])
    scenario = planner.scenario_plan(
        **p.scenario,
        # The nodes that measured, not the one running this job.
        host_memory_bytes=aggregate.smallest_host_memory(table.host_memory_bytes for table in tables),
        gpu_memory_bytes=gpu_memory,
        gpu_memory_source=gpu_memory_source,
    )
    scenario = dataclasses.replace(scenario, modelled=planner.scenario_predictions(scenario, models, bandwidth))

    model_rows = tuple(planner.model_row(m) for m in models.values())
    residuals = tuple(
        r for m in models.values() for q in (m.quality, m.counted_quality) if q is not None for r in q.residuals
    )
    cost_model = CostModelTable(
        models=model_rows,
        points=tuple(points),
        residuals=residuals,
        host_to_device_gb_s=bandwidth / 1e9,
        host_to_device_source=bandwidth_source,
        host_to_device_memory=bandwidth_memory,
        gpu_startup_s=startup,
        gpu_startup_source=startup_source,
        epochs=p.epochs,
        threads=p.threads,
        environment=envinfo.quick_environment(),
    )
    break_even = BreakEvenTable(
        summary=summary,
        curves=tuple(planner.curve_rows(curves)),
        gpu_model_source=models[gpu_name].source,
        label="modelled",
        resampled_devices=breakeven_interval.resampled_devices(models),
        seed=p.seed,
    )

    atomic.write_record(out.cost_model, cost_model)
    tables.write_csv(out.cost_model_csv, [records.to_json(row) for row in model_rows])
    atomic.write_record(out.break_even, break_even)
    tables.write_csv(out.break_even_csv, [records.to_json(row) for row in break_even.curves])
    tables.write_csv(out.break_even_summary_csv, [records.to_json(row) for row in summary])
    # A list of summary rows, as break_even.json's "summary" (read by no rule; kept as a list).
    atomic.write_json(out.break_even_summary_json, list(summary))
    atomic.write_record(out.flop_check, flop_check)
    tables.write_csv(out.flop_check_csv, [records.to_json(row) for row in flop_check.table])
    atomic.write_record(out.scenario, scenario)
    tables.write_csv(out.scenario_csv, planner.scenario_rows(scenario))
    for s in summary:
        log.info(
            "break-even %s (%s): %s, %.0f%% interval %s..%s, %.0f%% of %d resamples with a break-even",
            s.axis,
            s.placement,
            s.break_even,
            100 * s.confidence,
            s.break_even_low if s.break_even_low is not None else s.break_even_low_where,
            s.break_even_high if s.break_even_high is not None else s.break_even_high_where,
            100 * s.break_even_share,
            s.resamples,
        )
    for row in model_rows:
        log.info(
            "%s (%s): %s s/step, %s GFLOP/s, %s GB/s, LOO median error %s",
            row.device,
            row.source,
            row.seconds_per_step,
            row.gflop_per_s,
            row.gb_per_s,
            row.loo_median_abs_rel_error,
        )
