# Seeded data generation and export to Parquet and CSV.


rule generate_benchmark:
    output:
        npy="results/data/benchmark.npy",
        meta="results/data/benchmark.meta.json",
    input:
        code=code("generate_benchmark.py"),
    params:
        rows=config["data"]["benchmark"]["rows"],
        features=config["data"]["benchmark"]["features"],
        noise=config["data"]["benchmark"]["noise"],
        seed=config["seed"],
    log:
        "results/logs/generate_benchmark.log",
    benchmark:
        "results/benchmarks/generate_benchmark.tsv"
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/generate_benchmark.py"


rule generate_northstar:
    output:
        npy="results/data/northstar.npy",
        meta="results/data/northstar.meta.json",
    input:
        code=code("generate_northstar.py"),
    params:
        rows=config["data"]["northstar"]["rows"],
        late_rate=config["data"]["northstar"]["late_rate"],
        seed=config["seed"],
    log:
        "results/logs/generate_northstar.log",
    benchmark:
        "results/benchmarks/generate_northstar.tsv"
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/generate_northstar.py"


rule export_data:
    input:
        npy="results/data/{dataset}.npy",
        meta="results/data/{dataset}.meta.json",
        code=code("export_data.py"),
    output:
        parquet="results/data/{dataset}.parquet",
        csv="results/data/{dataset}.csv",
        record="results/data/{dataset}.export.json",
    params:
        compression=config["data"]["parquet_compression"],
    wildcard_constraints:
        dataset="|".join(DATASETS),
    log:
        "results/logs/export_data/{dataset}.log",
    benchmark:
        "results/benchmarks/export_data/{dataset}.tsv"
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/export_data.py"
