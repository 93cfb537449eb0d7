"""Rule report: REPORT.md and the decision figure, rendered from the records.

One figure is derived here, from the records, for the first screen: what narrowing the widest interval would take
(analyze.timing_plan.narrowing), where no timing plan ran."""

from pathlib import Path

from accel_choice import records
from accel_choice.analyze.stats import NoiseRules
from accel_choice.analyze.timing_plan import narrowing
from accel_choice.io import atomic, envinfo, paths, provenance
from accel_choice.io.runtime import job
from accel_choice.records.cost import CostTable
from accel_choice.records.decision import DataTable, Decision, TheoryTable
from accel_choice.records.environment import EnvironmentReport
from accel_choice.records.loads import DeviceProbe, LoadTable, TransferTable
from accel_choice.records.northstar import GradientVariance, SeedLimits
from accel_choice.records.time_to_target import TimeToTarget
from accel_choice.records.breakeven import BreakEvenTable
from accel_choice.records.planner import CostModelTable, FlopCheck, Scenario
from accel_choice.records.resources import ResourceTable
from accel_choice.records.scale import ScaleJob, ScaleTable, StepRate
from accel_choice.records.timing_plan import TimingPlan
from accel_choice.records.training import TrainingTable
from accel_choice.render.decision_figure import decision_figure
from accel_choice.render import html, report

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    environment = records.read(EnvironmentReport, inp.environment)
    decided = records.read(Decision, inp.decision)
    cpu = records.read(TrainingTable, inp.cpu_training)
    train_table, non_finite = list(cpu.table), list(cpu.non_finite)
    transfers = None
    sentinels = [("CPU", cpu.sentinel)]
    if inp.get("gpu_training"):  # planned only where a GPU is measured
        gpu = records.read(TrainingTable, inp.gpu_training)
        train_table, non_finite = train_table + list(gpu.table), non_finite + list(gpu.non_finite)
        sentinels.append(("GPU", gpu.sentinel))
        transfers = records.read(TransferTable, inp.transfers[0])
    theory = records.read(TheoryTable, inp.theory)
    rows = theory.rows
    decision_figure(
        train_table,
        decided.full_path,
        out.png,
        out.svg,
        title=f"{environment.quick.cpu_model}, "
        f"{'/'.join(map(str, sorted({c.threads for c in train_table if c.device == 'cpu'})))} torch thread(s)"
        f"{'; GPU: ' + ', '.join(decided.verdict.gpu.names) if transfers else '; no GPU measured'}; "
        f"n={rows:,}, model {theory.model_label}, repeats {train_table[0].repeats}",
    )
    # The records so far: everything but this report and the archive job's own files.
    results = Path(out.md).parent
    report_provenance = provenance.provenance(
        results, envinfo.workflow_commit(), [Path(path).relative_to(results).as_posix() for path in p.made]
    )
    plans = [records.read(TimingPlan, path) for path in inp.plan]
    resources = records.read(ResourceTable, inp.resources)
    text = report.render(
        report.ReportInputs(
            decision=decided,
            environment=environment,
            data=records.read(DataTable, inp.data),
            theory=theory,
            train_table=train_table,
            non_finite=non_finite,
            load_table=records.read(LoadTable, inp.load_convert).table,
            seed=p.seed,
            noise=NoiseRules(**p.noise),
            accelerator=p.accelerator,
            probe=records.read(DeviceProbe, inp.probe),
            transfers=transfers,
            selection=records.read(TimeToTarget, inp.selection),
            seed_limits=records.read(SeedLimits, inp.seed_limits),
            gradient_variance=records.read(GradientVariance, inp.gradient_variance[0])
            if inp.get("gradient_variance")
            else None,
            resources=resources,
            cost_model=records.read(CostModelTable, inp.cost_model),
            break_even=records.read(BreakEvenTable, inp.break_even),
            flop_check=records.read(FlopCheck, inp.flop_check),
            scenario=records.read(Scenario, inp.scenario),
            cost=records.read(CostTable, inp.cost[0]) if inp.get("cost") else None,
            scale=records.read(ScaleTable, inp.scale[0]) if inp.get("scale") else None,
            scale_jobs=[records.read(ScaleJob, path) for path in inp.scale_jobs],
            scale_steps=[records.read(StepRate, path) for path in inp.scale_steps],
            provenance=report_provenance,
            sentinels=tuple(sentinels),
            plans=plans,
            narrowing=None if plans else narrowing(decided.verdict, p.target, train_table, resources),
        )
    )
    atomic.write_text(out.md, text)
    atomic.write_text(out.html, html.report_page(text, title=f"accel-choice: {paths.REPORT}"))
    atomic.write_text(out.landing, html.landing_rst(text, Path(inp.description).read_text(encoding="utf-8")))
    log.info("verdict: %s (%s)", decided.verdict.device, decided.verdict.outcome)
