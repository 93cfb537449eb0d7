# Timing rules. Each takes the whole global `timing_slot` (see profiles/default), so it
# runs alone, and pins its torch/pyarrow threads to the rule's `threads`.


rule time_load_convert:
    input:
        data=expand(results(paths.DATASET_FILE), dataset=DATASETS, fmt=config["timing"]["formats"]),
        meta=expand(results(paths.DATASET_META), dataset=DATASETS),
        export=expand(results(paths.DATASET_EXPORT), dataset=DATASETS),
        code=code("time_load_convert.py"),
    output:
        results(paths.LOAD_CONVERT_JOB),
    log:
        results(paths.log("time_load_convert/rep{repeat}")),
    benchmark:
        results(paths.benchmark("time_load_convert/rep{repeat}"))
    wildcard_constraints:
        repeat=r"\d+",
    priority: repeat_priority
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        timing_slot=TIMING_JOB,
    params:
        passes=config["timing"]["load_passes"],
    script:
        "../scripts/time_load_convert.py"


rule time_cpu_training:
    input:
        data=results(paths.DATASET_FILE, dataset="benchmark", fmt="parquet"),
        meta=results(paths.DATASET_META, dataset="benchmark"),
        export=results(paths.DATASET_EXPORT, dataset="benchmark"),
        code=code("time_cpu_training.py"),
        model_code=MODEL_CODE,
    output:
        results(paths.CPU_RECORD),
    log:
        results(paths.log(f"time_cpu_training/{paths.CPU_JOB}")),
    benchmark:
        results(paths.benchmark(f"time_cpu_training/{paths.CPU_JOB}"))
    wildcard_constraints:
        repeat=r"\d+",
    priority: repeat_priority
    conda:
        ENV
    # Its largest thread count (timing.threads): the job refuses to run with fewer (--cores below it).
    threads: CPU_JOB_THREADS
    resources:
        timing_slot=TIMING_JOB,
    params:
        seed=config["seed"],
        thread_counts=CPU_THREADS,
        batch_sizes=BATCH_SIZES,
        model=MODEL,
        loaders=config["timing"]["loaders"],
        warmup_steps=config["timing"]["warmup_steps"],
        epochs_per_job=config["timing"]["epochs_per_job"],
        compile=config["timing"]["compile"],
        compile_mode=COMPILE_MODE,
        matmul_precision=config["timing"]["matmul_precision"],
    script:
        "../scripts/time_cpu_training.py"


# timing.budget_s: after the CPU training jobs so far, one more or stop (analyze.timing_plan).
checkpoint plan_timing:
    input:
        unpack(plan_inputs),
        code=code("plan_timing.py"),
    output:
        results(paths.TIMING_PLAN),
    log:
        results(paths.log("plan_timing/round{round}")),
    wildcard_constraints:
        round=r"\d+",
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        budget_s=TIMING_BUDGET,
        target=config["timing"]["target"],
        rows=config["data"]["benchmark"]["rows"],
        noise=NOISE_RULES,
    script:
        "../scripts/plan_timing.py"
