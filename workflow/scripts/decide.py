"""Rule decide: the full path, the decision sheet, the verdict and the derived tables, as records."""

from accel_choice import records
from accel_choice.analyze import aggregate, decision, decision_tables, fullpath, trust
from accel_choice.analyze.figures import Figures
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo, tables
from accel_choice.io.runtime import job
from accel_choice.records.data import DatasetExport, DatasetMeta
from accel_choice.records.decision import Decision, DecisionSheet, FullPathTable
from accel_choice.records.environment import EnvironmentReport
from accel_choice.records.model import ModelProfile
from accel_choice.records.loads import DeviceProbe, LoadTable, TransferTable
from accel_choice.records.time_to_target import TimeToTarget
from accel_choice.records.training import TrainingTable

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    environment = records.read(EnvironmentReport, inp.environment).quick
    cpu_table = records.read(TrainingTable, inp.cpu_training)
    measured = [cpu_table]
    transfers = None
    if inp.get("gpu_training"):  # planned only where a GPU is measured
        measured.append(records.read(TrainingTable, inp.gpu_training))
        transfers = records.read(TransferTable, inp.transfers[0])
    train_table = [cell for table in measured for cell in table.table]
    beside = [cell for table in measured for cell in table.beside]  # the CPU, timed in the GPU's jobs
    load_table = records.read(LoadTable, inp.load_convert).table
    probe = records.read(DeviceProbe, inp.probe)
    # The textbook MLP's formulas, or what profile_model counted on a user's model.
    figures = Figures.of(records.read(ModelProfile, inp.profile))

    full_path = fullpath.full_path(train_table, load_table, transfers)
    sheet = decision.decision_sheet(
        train_table,
        load_table,
        environment,
        figures,
        p.batch_sizes,
        probe=probe,
        transfers=transfers,
        accelerator=p.accelerator,
    )
    verdict = decision.verdict(
        train_table,
        full_path,
        environment,
        figures,
        rows=p.rows,
        probe=probe,
        threshold=p.speedup_threshold,
        # The nodes that measured, not the one running this job.
        host_memory_bytes=aggregate.smallest_host_memory(table.host_memory_bytes for table in measured),
        rules=NoiseRules(**p.noise),
        noise_floor=cpu_table.sentinel.noise_floor,
        # Every timing job of the training tables, the flagged ones, and whether the run was contaminated.
        trust=trust.run_trust(list(zip(("cpu", "gpu"), measured)), NoiseRules(**p.noise).bad_run_share),
        # The epochs the real job trains: gpu.epochs, or what the Northstar selection's fastest run needed.
        epochs=p.epochs or decision.epochs_to_target(records.read(TimeToTarget, inp.time_to_target)),
        beside=beside,
    )
    atomic.write_record(
        out.decision,
        Decision(
            verdict=verdict,
            sheet=sheet,
            full_path=tuple(full_path),
            gpu_memory=decision.gpu_memory(train_table, figures, p.rows),
            environment=envinfo.quick_environment(),
        ),
    )
    atomic.write_record(out.full_path_json, FullPathTable(rows=tuple(full_path)))
    tables.write_csv(out.full_path_csv, full_path)
    tables.write_html(out.full_path_html, full_path, "Full path per epoch")
    atomic.write_record(out.sheet_json, DecisionSheet(steps=sheet))
    sheet_rows = [
        {
            "step": s.step,
            "status": s.status,
            "missing": s.missing,
            "evidence": "; ".join(f"{e.name}={e.value}" for e in s.evidence),
        }
        for s in sheet
    ]
    tables.write_csv(out.sheet_csv, sheet_rows)
    tables.write_html(out.sheet_html, sheet_rows, "GPU decision sheet")
    theory = decision_tables.theory_table(train_table, figures, p.rows, p.batch_sizes, p.bandwidth_gb_s)
    atomic.write_record(out.theory_json, theory)
    tables.write_csv(out.theory_csv, theory.table)
    data = decision_tables.data_table(
        [
            (records.read(DatasetMeta, meta), records.read(DatasetExport, export))
            for meta, export in zip(inp.metas, inp.exports)
        ],
        p.batch_sizes,
    )
    for row in data.table:
        for warning in row.warnings:
            log.warning("data warning: %s: %s", row.dataset, warning.line)
    atomic.write_record(out.data_json, data)
    tables.write_csv(out.data_csv, data.table)
    log.info("verdict: %s (%s, %s)", verdict.device, verdict.outcome, verdict.reason)
