# The streaming study (docs/scale.md): exercise 4 measured, datasets of growing size streamed from
# disk. Off by default (scale.enabled); every job of it is a timing job, alone on the machine.


rule time_scale:
    input:
        code=code("time_scale.py"),
    output:
        results(paths.SCALE_JOB),
    log:
        results(paths.log("time_scale/{format}")),
    benchmark:
        results(paths.benchmark("time_scale/{format}"))
    wildcard_constraints:
        format="parquet|npy",
    priority: TIMING_PRIORITY
    conda:
        ENV
    # The reader's worker processes each take a core; the training process reads with none.
    threads: max(TIMING_THREADS, *config["scale"]["workers"])
    resources:
        timing_slot=TIMING_JOB,
    params:
        sizes_gb=config["scale"]["sizes_gb"],
        features=config["scale"]["features"],
        batch_size=config["scale"]["batch_size"],
        row_group_rows=config["scale"]["row_group_rows"],
        part_gb=config["scale"]["part_gb"],
        compression=config["scale"]["compression"],
        workers=config["scale"]["workers"],
        scratch=config["scale"]["scratch"],
        seed=config["seed"],
    script:
        "../scripts/time_scale.py"


rule time_scale_step:
    input:
        probe=probe_for_device,
        code=code("time_scale_step.py"),
    output:
        results(paths.SCALE_STEP),
    log:
        results(paths.log("time_scale_step/{device}")),
    wildcard_constraints:
        device="cpu|cuda|mps",
    priority: TIMING_PRIORITY
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        timing_slot=TIMING_JOB,
        gpu=gpus_for_device,
    params:
        features=config["scale"]["features"],
        hidden=config["scale"]["hidden"],
        batch_size=config["scale"]["batch_size"],
        blocks=config["scale"]["step_blocks"],
        steps=config["scale"]["step_steps"],
        seed=config["seed"],
    script:
        "../scripts/time_scale_step.py"


rule scale_table:
    input:
        jobs=expand(results(paths.SCALE_JOB), format=config["scale"]["formats"]),
        steps=expand(results(paths.SCALE_STEP), device=DEVICES),
        scenario=results(paths.SCENARIO),
        code=code("scale_table.py"),
    output:
        json=results(paths.SCALE),
        csv=report(results(paths.SCALE_CSV), caption="../report/scale.rst", category="Planner"),
        png=report(results(paths.SCALE_PNG), caption="../report/scale.rst", category="Planner"),
        svg=results(paths.SCALE_SVG),
    log:
        results(paths.log("scale_table")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        noise=NOISE_RULES,
    script:
        "../scripts/scale_table.py"
