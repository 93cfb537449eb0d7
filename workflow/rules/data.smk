# Seeded data generation and export to Parquet and CSV.


if USER_BENCHMARK:

    # Your own benchmark data (data.benchmark.table or .arrays) in place of the generated matrix:
    # checked value by value and written as the same canonical .npy and metadata, with its files' sha256.
    rule import_benchmark:
        input:
            data=benchmark_data.files(USER_BENCHMARK),
            code=code("import_benchmark.py"),
        output:
            npy=results(paths.DATASET_MATRIX, dataset="benchmark"),
            meta=results(paths.DATASET_META, dataset="benchmark"),
        log:
            results(paths.log("import_benchmark")),
        benchmark:
            results(paths.benchmark("import_benchmark"))
        priority: DATA_PRIORITY
        conda:
            ENV
        threads: 1
        resources:
            timing_slot=OTHER_JOB,
        params:
            source=sorted_keys(USER_BENCHMARK),
            seed=config["seed"],
        script:
            "../scripts/import_benchmark.py"

else:

    rule generate_benchmark:
        input:
            code=code("generate_benchmark.py"),
        output:
            npy=results(paths.DATASET_MATRIX, dataset="benchmark"),
            meta=results(paths.DATASET_META, dataset="benchmark"),
        log:
            results(paths.log("generate_benchmark")),
        benchmark:
            results(paths.benchmark("generate_benchmark"))
        priority: DATA_PRIORITY
        conda:
            ENV
        threads: 1
        resources:
            timing_slot=OTHER_JOB,
        params:
            rows=config["data"]["benchmark"]["rows"],
            features=config["data"]["benchmark"]["features"],
            noise=config["data"]["benchmark"]["noise"],
            seed=config["seed"],
        script:
            "../scripts/generate_benchmark.py"


if USER_TABLE:

    # Your own Northstar table (data.northstar.table) in place of the generated one: checked and written
    # as the same canonical .npy and metadata, so its export, load/convert timing and split are of it.
    rule import_northstar:
        input:
            table=USER_TABLE["path"],
            code=code("import_northstar.py"),
        output:
            npy=results(paths.DATASET_MATRIX, dataset="northstar"),
            meta=results(paths.DATASET_META, dataset="northstar"),
        log:
            results(paths.log("import_northstar")),
        benchmark:
            results(paths.benchmark("import_northstar"))
        priority: DATA_PRIORITY
        conda:
            ENV
        threads: 1
        resources:
            timing_slot=OTHER_JOB,
        params:
            table=sorted_keys(USER_TABLE),
            seed=config["seed"],
        script:
            "../scripts/import_northstar.py"

else:

    rule generate_northstar:
        input:
            code=code("generate_northstar.py"),
        output:
            npy=results(paths.DATASET_MATRIX, dataset="northstar"),
            meta=results(paths.DATASET_META, dataset="northstar"),
        log:
            results(paths.log("generate_northstar")),
        benchmark:
            results(paths.benchmark("generate_northstar"))
        priority: DATA_PRIORITY
        conda:
            ENV
        threads: 1
        resources:
            timing_slot=OTHER_JOB,
        params:
            rows=config["data"]["northstar"]["rows"],
            late_rate=config["data"]["northstar"]["late_rate"],
            seed=config["seed"],
        script:
            "../scripts/generate_northstar.py"


rule export_data:
    input:
        npy=results(paths.DATASET_MATRIX),
        meta=results(paths.DATASET_META),
        code=code("export_data.py"),
    output:
        parquet=results(paths.DATASET_FILE, fmt="parquet"),
        csv=results(paths.DATASET_FILE, fmt="csv"),
        record=results(paths.DATASET_EXPORT),
    log:
        results(paths.log("export_data/{dataset}")),
    benchmark:
        results(paths.benchmark("export_data/{dataset}"))
    wildcard_constraints:
        dataset="|".join(DATASETS),
    priority: DATA_PRIORITY
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        compression=config["data"]["parquet_compression"],
    script:
        "../scripts/export_data.py"
