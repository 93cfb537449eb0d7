"""Rule planner: cost model per device, break-even curves, FLOP-counter check, scale scenario."""

from accel_choice.records.planner import Workload
from accel_choice.io import atomic, envinfo, tables
from accel_choice.analyze import planner
from accel_choice.measure import flopcheck
from accel_choice.render.planner import break_even_figure
from accel_choice.io.runtime import job

inp, p, out = snakemake.input, snakemake.params, snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    cfg = p.planner
    records = [r for path in inp.grid for r in atomic.read_json(path)["records"]]
    train_table = atomic.read_json(inp.training)["table"]
    transfers = None
    if inp.gpu:  # [gpu_training.json, transfers.json] when GPU jobs were planned
        train_table = train_table + atomic.read_json(inp.gpu[0])["table"]
        transfers = atomic.read_json(inp.gpu[1])
    points = planner.grid_points(records, p.noise_iqr_ratio, p.outlier_factor, p.foreign_cpu_share,
                                 p.loadavg_rise) + planner.benchmark_points(
        train_table, p.rows, p.features, p.hidden)
    models = planner.device_models(points, cfg["gpu_assumed"])
    gpu_name = next(name for name in models if name != "cpu")
    bandwidth, bandwidth_source = planner.host_to_device_bytes_per_s(transfers, p.bandwidth_gb_s)
    startup, startup_source = planner.gpu_startup_seconds(transfers, cfg["gpu_assumed"]["startup_s"])

    base = Workload(rows=p.rows, features=p.features, hidden=p.hidden, batch_size=cfg["batch_size"])
    curves = planner.break_even_curves(models["cpu"], models[gpu_name], base, cfg["sweep"], bandwidth, startup,
                                       cfg["epochs"])
    break_even_figure(
        [c for c in curves if c["placement"] == "resident"], points, out.png, out.svg,
        gpu_label=f"GPU {models[gpu_name].source}, data resident, start-up and one copy spread over {cfg['epochs']} epochs",
    )

    cpu_seconds = {r["batch_size"]: r["epoch_s_median"] for r in train_table
                   if r["device"] == "cpu" and r["loader"] == "fastpath"}
    flop_rows = flopcheck.flop_table(p.features, p.hidden, p.batch_sizes, p.rows, cpu_seconds)

    probe = atomic.read_json(inp.probe)
    gpu_memory = (probe["cuda_devices"][0]["total_memory_bytes"] if probe.get("cuda_devices")
                  else int(cfg["gpu_assumed"]["memory_gb"] * 1e9))
    scenario = planner.scenario_plan(**cfg["scenario"], host_memory_bytes=planner.host_memory_bytes(),
                                     gpu_memory_bytes=gpu_memory)
    scenario["gpu_memory_source"] = "measured" if probe.get("cuda_devices") else "assumed (planner.gpu_assumed.memory_gb)"
    scenario["modelled"] = planner.scenario_predictions(scenario, models, bandwidth)

    model_rows = [planner.model_row(m) for m in models.values()]
    residuals = [dict(r, device=device) for device, m in models.items() if m.quality for r in m.quality["residuals"]]
    atomic.write_json(out.cost_model, {"models": model_rows, "points": points, "residuals": residuals,
                                       "host_to_device_gb_s": bandwidth / 1e9,
                                       "host_to_device_source": bandwidth_source,
                                       "gpu_startup_s": startup, "gpu_startup_source": startup_source,
                                       "epochs": cfg["epochs"], "threads": p.threads,
                                       "environment": envinfo.quick_environment()})
    tables.write_csv(out.cost_model_csv, model_rows)
    curve_rows = [{"axis": c["axis"], "placement": c["placement"], "value": v, "cpu_s": cs, "gpu_s": gs, "cpu_over_gpu": ratio}
                  for c in curves for v, cs, gs, ratio in zip(c["values"], c["cpu_s"], c["gpu_s"], c["ratio"])]
    summary = [planner.break_even_summary(c) for c in curves]
    atomic.write_json(out.break_even, {"summary": summary, "curves": curve_rows, "gpu_model_source": models[gpu_name].source,
                                       "label": "modelled"})
    tables.write_csv(out.break_even_csv, curve_rows)
    tables.write_csv(out.break_even_summary_csv, summary)
    atomic.write_json(out.break_even_summary_json, summary)
    atomic.write_json(out.flop_check, {"table": flop_rows})
    tables.write_csv(out.flop_check_csv, flop_rows)
    atomic.write_json(out.scenario, scenario)
    tables.write_csv(out.scenario_csv, planner.scenario_rows(scenario))
    for row in model_rows:
        log.info("%s (%s): %s s/step, %s GFLOP/s, %s GB/s, LOO median error %s", row["device"], row["source"],
                 row["seconds_per_step"], row["gflop_per_s"], row["gb_per_s"], row["loo_median_abs_rel_error"])
