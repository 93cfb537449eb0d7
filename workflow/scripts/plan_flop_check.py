"""Rule planner_flop_check: torch's FLOP counter on the model against the formula, per batch size."""

from accel_choice import records
from accel_choice.analyze import planner
from accel_choice.io import atomic, tables
from accel_choice.io.runtime import job
from accel_choice.measure import flopcheck
from accel_choice.records.planner import FlopCheck
from accel_choice.records.training import TrainingTable

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    # The benchmark's CPU cells at the grid's thread count (the first of timing.threads).
    cells = [c for c in records.read(TrainingTable, snakemake.input.training).table if c.threads == p.threads]
    # The measured epochs are the textbook MLP's only when it was timed.
    measured = planner.fastpath_cpu_seconds(cells) if p.textbook else None
    flop_check = FlopCheck(table=tuple(flopcheck.flop_table(p.features, p.hidden, p.batch_sizes, p.rows, measured)))
    atomic.write_record(out.flop_check, flop_check)
    tables.write_csv(out.flop_check_csv, [records.to_json(row) for row in flop_check.table])
    log.info("FLOP check: %d batch sizes", len(flop_check.table))
