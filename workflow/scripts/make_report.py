"""Rule report: full-path table, decision sheet, verdict, figure and REPORT.md."""

from pathlib import Path

import yaml

from accel_choice import records
from accel_choice.analyze import decision, fullpath
from accel_choice.io import atomic, envinfo, provenance, tables
from accel_choice.records.planner import BreakEvenTable, CostModelTable, FlopCheck, Scenario
from accel_choice.render import data, northstar, plots, report
from accel_choice.io.runtime import job

inp, p, out = snakemake.input, snakemake.params, snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    environment = atomic.read_json(inp.environment)
    datasets = []
    for meta_path, export_path in zip(inp.metas, inp.exports):
        meta = atomic.read_json(meta_path)
        meta["export"] = atomic.read_json(export_path)
        datasets.append(meta)
    training = atomic.read_json(inp.training)
    train_table, non_finite = training["table"], training["non_finite"]
    load_table = atomic.read_json(inp.load_convert)["table"]
    probe = atomic.read_json(inp.probe)
    transfers = None
    if inp.gpu:  # [gpu_training.json, transfers.json] when GPU jobs were planned
        gpu_training = atomic.read_json(inp.gpu[0])
        train_table, non_finite = train_table + gpu_training["table"], non_finite + gpu_training["non_finite"]
        transfers = atomic.read_json(inp.gpu[1])
    widths = (p.features, p.hidden, 1)

    full_path = fullpath.full_path(train_table, load_table, transfers)
    sheet = decision.decision_sheet(train_table, load_table, environment["quick"], widths, p.batch_sizes,
                                    probe=probe, transfers=transfers, accelerator=p.accelerator)
    verdict = decision.verdict(train_table, full_path, environment["quick"], widths, probe=probe,
                               threshold=p.speedup_threshold)
    tables.write_csv(out.full_path_csv, full_path)
    atomic.write_json(out.full_path_json, full_path)
    data_rows = data.data_table(datasets)
    tables.write_csv(out.data_csv, data_rows)
    atomic.write_json(out.data_json, data_rows)
    theory_rows = report.theory_table(train_table, widths, p.rows, p.batch_sizes, p.bandwidth_gb_s)
    tables.write_csv(out.theory_csv, theory_rows)
    atomic.write_json(out.theory_json, theory_rows)
    tables.write_csv(out.sheet_csv, sheet)
    atomic.write_json(out.sheet_json, sheet)
    seed_rows = northstar.seed_table(atomic.read_json(inp.seed_limits))
    tables.write_csv(out.seed_csv, seed_rows)
    atomic.write_json(out.seed_json, seed_rows)
    atomic.write_json(out.decision, {"verdict": verdict, "sheet": sheet, "full_path": full_path,
                                    "environment": envinfo.quick_environment(p.seed)})
    plots.decision_figure(
        train_table, full_path, out.png, out.svg,
        title=f"{environment['quick']['cpu_model']}, {train_table[0]['threads'][0]} torch thread(s)"
              f"{'; GPU: ' + ', '.join(d['name'] for d in probe['cuda_devices']) if transfers else '; no GPU measured'}; "
              f"n={p.rows:,}, model {p.features}→{p.hidden}→1, repeats {train_table[0]['repeats']}",
    )
    # The records so far: everything but this report and the archive job's own files.
    results = Path(out.md).parent
    report_provenance = provenance.provenance(
        results, envinfo.workflow_commit(), [Path(path).relative_to(results).as_posix() for path in p.made])
    text = report.render(report.ReportInputs(
        environment=environment, datasets=datasets, train_table=train_table, load_table=load_table,
        full_path_rows=full_path, non_finite=non_finite, sheet=sheet, verdict=verdict, widths=widths,
        rows=p.rows, batch_sizes=p.batch_sizes, bandwidth_gb_s=p.bandwidth_gb_s, seed=p.seed,
        noise_iqr_ratio=p.noise_iqr_ratio, outlier_factor=p.outlier_factor, probe=probe, transfers=transfers,
        accelerator=p.accelerator, selection=atomic.read_json(inp.selection), seed_limits=atomic.read_json(inp.seed_limits),
        gradient_variance=atomic.read_json(inp.gradient_variance), resources=atomic.read_json(inp.resources),
        cost_model=records.read(CostModelTable, inp.cost_model),
        break_even=records.read(BreakEvenTable, inp.break_even),
        flop_check=records.read(FlopCheck, inp.flop_check), scenario=records.read(Scenario, inp.scenario),
        provenance=report_provenance,
    ))
    atomic.write_text(out.config, yaml.safe_dump(p.config, sort_keys=False))
    atomic.write_text(out.md, text)
    log.info("verdict: %s — %s", verdict["device"], verdict["claim"])
