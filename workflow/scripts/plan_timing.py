"""Rule plan_timing (a checkpoint): after the CPU training jobs so far, one more or stop."""

from accel_choice.analyze import aggregate, resources, timing_plan
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, envinfo
from accel_choice.io.runtime import job

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    rules = NoiseRules(**p.noise)
    training = aggregate.training_table(
        aggregate.read_training_jobs(inp.records), p.rows, rules, envinfo.quick_environment(), "cpu"
    )
    walls = [resources.read_benchmark(path)["process_wall_s"] for path in inp.benchmarks]
    if None in walls:
        raise ValueError(f"a CPU training job's benchmark file holds no wall time: {list(inp.benchmarks)}")
    plan = timing_plan.plan_round(
        int(snakemake.wildcards.round),
        training.table,
        walls,
        p.budget_s,
        p.target,
        training.sentinel.noise_floor,
        rules,
    )
    atomic.write_record(out[0], plan)
    log.info(
        "round %d: %d CPU training jobs, %.1f s of %.1f s spent, widest stated ±%s (target ±%.1f%%): %s",
        plan.round,
        plan.jobs,
        plan.spent_s,
        plan.budget_s,
        "n/a" if plan.widest is None else f"{plan.widest:.1%}",
        100 * plan.target,
        plan.decision,
    )
