# Timing rules. Each takes the whole global `timing_slot` (see profiles/default), so it
# runs alone, and pins its torch/pyarrow threads to the rule's `threads`.


rule time_load_convert:
    input:
        data="results/data/{dataset}.{fmt}",
        meta="results/data/{dataset}.meta.json",
        export="results/data/{dataset}.export.json",
        code=code("time_load_convert.py"),
    output:
        "results/timing/load_convert/{dataset}.{fmt}.rep{repeat}.json",
    params:
        passes=config["timing"]["load_passes"],
    wildcard_constraints:
        dataset="|".join(DATASETS),
        fmt="csv|parquet",
        repeat=r"\d+",
    log:
        "results/logs/time_load_convert/{dataset}.{fmt}.rep{repeat}.log",
    benchmark:
        "results/benchmarks/time_load_convert/{dataset}.{fmt}.rep{repeat}.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=TIMING_JOB,
    conda:
        ENV
    script:
        "../scripts/time_load_convert.py"


rule time_cpu_training:
    input:
        data="results/data/benchmark.parquet",
        meta="results/data/benchmark.meta.json",
        export="results/data/benchmark.export.json",
        code=code("time_cpu_training.py"),
    output:
        "results/timing/cpu/bs{batch_size}.rep{repeat}.json",
    params:
        seed=config["seed"],
        hidden=config["model"]["hidden"],
        lr=config["model"]["lr"],
        loaders=config["timing"]["loaders"],
        warmup_steps=config["timing"]["warmup_steps"],
    wildcard_constraints:
        batch_size=r"\d+",
        repeat=r"\d+",
    log:
        "results/logs/time_cpu_training/bs{batch_size}.rep{repeat}.log",
    benchmark:
        "results/benchmarks/time_cpu_training/bs{batch_size}.rep{repeat}.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=TIMING_JOB,
    conda:
        ENV
    script:
        "../scripts/time_cpu_training.py"
