# Environment record and the decision report.


rule collect_environment:
    input:
        code=code("collect_environment.py"),
    output:
        json="results/env/collect_env.json",
        txt="results/env/collect_env.txt",
    log:
        "results/logs/collect_environment.log",
    benchmark:
        "results/benchmarks/collect_environment.tsv"
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/collect_environment.py"


rule decide:
    input:
        environment="results/env/collect_env.json",
        metas=expand("results/data/{dataset}.meta.json", dataset=DATASETS),
        exports=expand("results/data/{dataset}.export.json", dataset=DATASETS),
        cpu_training="results/tables/cpu_training.json",
        gpu_training=GPU_TRAINING_TABLE,
        transfers=TRANSFER_TABLE,
        load_convert="results/tables/load_convert.json",
        probe="results/env/devices.json",
        code=code("decide.py"),
    output:
        decision="results/tables/decision.json",
        full_path_csv=report(
            "results/tables/full_path.csv", caption="../report/full_path.rst", category="Decision"
        ),
        full_path_json="results/tables/full_path.json",
        data_csv=report("results/tables/data.csv", caption="../report/data.rst", category="Data"),
        data_json="results/tables/data.json",
        theory_csv=report("results/tables/theory.csv", caption="../report/theory.rst", category="Decision"),
        theory_json="results/tables/theory.json",
        sheet_csv=report(
            "results/tables/decision_sheet.csv", caption="../report/decision_sheet.rst", category="Decision"
        ),
        sheet_json="results/tables/decision_sheet.json",
    params:
        rows=config["data"]["benchmark"]["rows"],
        features=config["data"]["benchmark"]["features"],
        hidden=config["model"]["hidden"],
        batch_sizes=config["timing"]["batch_sizes"],
        bandwidth_gb_s=config["report"]["bandwidth_gb_s"],
        accelerator=config["accelerator"],
        speedup_threshold=config["gpu"]["speedup_threshold"],
    log:
        "results/logs/decide.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/decide.py"


rule report:
    input:
        environment="results/env/collect_env.json",
        decision="results/tables/decision.json",
        data="results/tables/data.json",
        theory="results/tables/theory.json",
        cpu_training="results/tables/cpu_training.json",
        gpu_training=GPU_TRAINING_TABLE,
        transfers=TRANSFER_TABLE,
        load_convert="results/tables/load_convert.json",
        probe="results/env/devices.json",
        selection="results/tables/time_to_target.json",
        seed_limits="results/northstar/seed_limits.json",
        gradient_variance="results/tables/gradient_variance.json",
        resources="results/tables/resources.json",
        cost_model="results/tables/cost_model.json",
        break_even="results/tables/break_even.json",
        flop_check="results/tables/flop_check.json",
        scenario="results/tables/scenario.json",
        code=code("make_report.py"),
    output:
        md=report("results/REPORT.md", caption="../report/report_md.rst", category="Decision"),
        png=report("results/figures/decision.png", caption="../report/decision_figure.rst", category="Decision"),
        svg="results/figures/decision.svg",
    params:
        seed=config["seed"],
        accelerator=config["accelerator"],
        noise_iqr_ratio=config["aggregate"]["noise_iqr_ratio"],
        outlier_factor=config["aggregate"]["outlier_factor"],
        # The files this configuration makes (archive.smk): the provenance section counts the
        # commits of their records only, not of records an earlier configuration left behind.
        made=lambda wildcards: MADE_FILES,
    log:
        "results/logs/report.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/make_report.py"


# The effective configuration (defaults filled in) beside the results: it changes whenever the
# configuration does, so it is its own job and the report does not re-run with it.
rule config_snapshot:
    input:
        code=code("config_snapshot.py"),
    output:
        "results/config.yaml",
    params:
        config=sorted_keys(config),
    log:
        "results/logs/config_snapshot.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/config_snapshot.py"
