# Repeats -> medians with spread and noise flags.


rule aggregate_training:
    input:
        # timing.repeats CPU training jobs, or as many as the timing plan settled on (timing.budget_s)
        records=lambda wildcards: cpu_records(planned_rounds()[1]),
        code=code("aggregate_training.py"),
    output:
        json=results(paths.CPU_TABLE),
        csv=results(paths.CPU_TABLE_CSV),
        html=report(
            results(paths.CPU_TABLE_HTML),
            caption="../report/cpu_training.rst",
            category="CPU training",
        ),
        exercise2=results(paths.EXERCISE2),
        epochs=results(paths.CPU_EPOCHS),
        epochs_csv=results(paths.CPU_EPOCHS_CSV),
        estimates=results(paths.CPU_ESTIMATES),
        estimates_csv=results(paths.CPU_ESTIMATES_CSV),
    log:
        results(paths.log("aggregate_training")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        rows=config["data"]["benchmark"]["rows"],
        noise=NOISE_RULES,
    script:
        "../scripts/aggregate_training.py"


rule aggregate_load_convert:
    input:
        records=expand(results(paths.LOAD_CONVERT_JOB), repeat=REPEATS),
        code=code("aggregate_load_convert.py"),
    output:
        json=results(paths.LOAD_CONVERT_TABLE),
        csv=report(
            results(paths.LOAD_CONVERT_CSV),
            caption="../report/load_convert.rst",
            category="Load and convert",
        ),
    log:
        results(paths.log("aggregate_load_convert")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        noise=NOISE_RULES,
    script:
        "../scripts/aggregate_load_convert.py"
