"""Rule northstar_selection: time-to-target per device and batch size, and the learning-curve figure (with the
seed runs' spread)."""

from accel_choice import records
from accel_choice.io import atomic, tables
from accel_choice.render import northstar
from accel_choice.analyze import selection
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io.runtime import job
from accel_choice.records.northstar import NorthstarHistory, SeedLimits

out = snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    runs = [records.read(NorthstarHistory, path) for path in snakemake.input.histories]
    result = selection.time_to_target(runs, snakemake.params.within, NoiseRules(**snakemake.params.noise))
    atomic.write_record(out.json, result)
    tables.write_csv(out.csv, result.rows)  # seconds as its columns (TargetRow.table_row)
    seeds = records.read(SeedLimits, snakemake.input.seeds)
    northstar.learning_curves(runs, result.target_val_loss, out.png, out.svg, seeds=seeds)
    log.info("fastest to target: %s (not told apart: %s)", result.fastest, ", ".join(result.fastest_set))
