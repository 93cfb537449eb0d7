# Repeats -> medians with spread and noise flags.


rule aggregate_training:
    input:
        records=expand("results/timing/cpu/bs{batch_size}.rep{repeat}.json", batch_size=BATCH_SIZES, repeat=REPEATS),
        code=code("aggregate_training.py"),
    output:
        json="results/tables/cpu_training.json",
        csv=report(
            "results/tables/cpu_training.csv",
            caption="../report/cpu_training.rst",
            category="CPU training",
        ),
        exercise2="results/s111_cpu_results.json",
    params:
        rows=config["data"]["benchmark"]["rows"],
        noise_iqr_ratio=config["aggregate"]["noise_iqr_ratio"],
        outlier_factor=config["aggregate"]["outlier_factor"],
        foreign_cpu_share=config["aggregate"]["foreign_cpu_share"],
        loadavg_rise=config["aggregate"]["loadavg_rise"],
    log:
        "results/logs/aggregate_training.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/aggregate_training.py"


rule aggregate_load_convert:
    input:
        records=expand(
            "results/timing/load_convert/{dataset}.{fmt}.rep{repeat}.json",
            dataset=DATASETS,
            fmt=config["timing"]["formats"],
            repeat=REPEATS,
        ),
        code=code("aggregate_load_convert.py"),
    output:
        json="results/tables/load_convert.json",
        csv=report(
            "results/tables/load_convert.csv",
            caption="../report/load_convert.rst",
            category="Load and convert",
        ),
    params:
        noise_iqr_ratio=config["aggregate"]["noise_iqr_ratio"],
        outlier_factor=config["aggregate"]["outlier_factor"],
        foreign_cpu_share=config["aggregate"]["foreign_cpu_share"],
        loadavg_rise=config["aggregate"]["loadavg_rise"],
    log:
        "results/logs/aggregate_load_convert.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/aggregate_load_convert.py"
