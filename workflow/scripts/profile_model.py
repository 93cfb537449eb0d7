"""Rule profile_model: the timed model counted - parameters, FLOP per step, activations, optimizer state."""

from accel_choice import records
from accel_choice.io import atomic, tables
from accel_choice.io.runtime import job
from accel_choice.measure import profile
from accel_choice.records.model import ModelSpec

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    counted = profile.profile(ModelSpec(**p.model), tuple(p.sample_shape), p.rows, p.batch_sizes, p.seed)
    atomic.write_record(out.json, counted)
    tables.write_csv(out.csv, [records.to_json(row) for row in counted.table])
    log.info(
        "%s: P = %d (%d trainable), optimizer state %d bytes; FLOP per step %s",
        counted.model,
        counted.params,
        counted.trainable_params,
        counted.optimizer_state_bytes,
        {r.batch_size: r.step_flop for r in counted.table},
    )
