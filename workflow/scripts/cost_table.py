"""Rule cost_table: the measured times at the user's prices (cost.per_hour, cost.currency)."""

from accel_choice import records
from accel_choice.analyze import cost
from accel_choice.io import atomic, tables
from accel_choice.io.runtime import job
from accel_choice.records.decision import Decision
from accel_choice.records.estimate import columns
from accel_choice.records.time_to_target import TimeToTarget

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    decided = records.read(Decision, inp.decision)
    table = cost.cost_table(
        decided.full_path,
        decided.verdict.comparison,
        p.cost["per_hour"],
        p.cost["currency"],
        records.read(TimeToTarget, inp.selection),
        confidence=decided.verdict.confidence,
    )
    atomic.write_record(out.json, table)
    tables.write_csv(
        out.csv,
        [
            {
                "device": line.device,
                "per_hour": line.per_hour,
                "currency": table.currency,
                "epoch_s": line.path.total_with_startup_s,
                "epoch_cost": line.epoch_cost,
                "target_run": line.target_run,
                "target_s": line.target_s and line.target_s.point,
                **columns("target_cost", line.target_cost),
            }
            for line in table.lines
        ],
    )
    for line in table.lines:
        to_target = line.target_cost and line.target_cost.point
        log.info("%s: %s %s per epoch, %s to target", line.device, line.epoch_cost, table.currency, to_target)
    log.info("per epoch: %s (cost ratio %s)", table.epoch_outcome, table.cost_ratio and table.cost_ratio.point)
