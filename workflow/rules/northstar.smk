# Northstar model selection: split, early stopping per batch size (and device), time-to-target,
# seed limits, and the measured 1/B gradient-variance rule on the benchmark matrix.
# The split does not depend on the batch sizes: train_northstar and seed_limits each check that
# their own batch size fits the training split, so changing one batch size re-splits nothing.


rule prepare_northstar:
    input:
        source=NORTHSTAR_SOURCE,
        code=code("prepare_northstar.py"),
    output:
        table="results/northstar/splits.parquet",
        meta="results/northstar/prepare.json",
    params:
        ratios=sorted_keys(config["selection"]["split"]),
        seed=config["seed"],
        user_table=USER_TABLE,
    log:
        "results/logs/prepare_northstar.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/prepare_northstar.py"


rule train_northstar:
    input:
        table="results/northstar/splits.parquet",
        meta="results/northstar/prepare.json",
        code=code("train_northstar.py"),
    output:
        history="results/northstar/{device}/bs{batch_size}/history.json",
        model="results/northstar/{device}/bs{batch_size}/best_model.pt",
        events=directory("results/northstar/tensorboard/{device}_bs{batch_size}"),
    params:
        seed=config["seed"],
        hidden=config["model"]["hidden"],
        lr=config["model"]["lr"],
        patience=config["selection"]["patience"],
        min_delta=config["selection"]["min_delta"],
        max_epochs=config["selection"]["max_epochs"],
    wildcard_constraints:
        device="cpu|cuda|mps",
        batch_size=r"\d+",
    log:
        "results/logs/train_northstar/{device}_bs{batch_size}.log",
    benchmark:
        "results/benchmarks/train_northstar/{device}_bs{batch_size}.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=TIMING_JOB,
        gpu=gpus_for_device,
    conda:
        ENV
    script:
        "../scripts/train_northstar.py"


rule northstar_selection:
    input:
        histories=expand(
            "results/northstar/{device}/bs{batch_size}/history.json",
            device=NORTHSTAR_DEVICES,
            batch_size=config["selection"]["batch_sizes"],
        ),
        code=code("northstar_selection.py"),
    output:
        json="results/tables/time_to_target.json",
        csv=report(
            "results/tables/time_to_target.csv", caption="../report/time_to_target.rst", category="Training"
        ),
        png=report(
            "results/figures/northstar_curves.png", caption="../report/northstar_curves.rst", category="Training"
        ),
        svg="results/figures/northstar_curves.svg",
    params:
        within=config["selection"]["target_within"],
    log:
        "results/logs/northstar_selection.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/northstar_selection.py"


rule seed_limits:
    input:
        table="results/northstar/splits.parquet",
        meta="results/northstar/prepare.json",
        histories=expand(
            "results/northstar/{device}/bs{batch_size}/history.json",
            device=NORTHSTAR_DEVICES,
            batch_size=config["selection"]["batch_sizes"],
        ),
        code=code("seed_limits.py"),
    output:
        json="results/northstar/seed_limits.json",
        table_csv=report("results/tables/seed_limits.csv", caption="../report/seed_limits.rst", category="Training"),
        table_json="results/tables/seed_limits.json",
    params:
        seed=config["seed"],
        seeds=config["selection"]["seeds"],
        batch_size=config["selection"]["seed_batch_size"],
        hidden=config["model"]["hidden"],
        lr=config["model"]["lr"],
        patience=config["selection"]["patience"],
        min_delta=config["selection"]["min_delta"],
        max_epochs=config["selection"]["max_epochs"],
    log:
        "results/logs/seed_limits.log",
    benchmark:
        "results/benchmarks/seed_limits.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/seed_limits.py"


rule gradient_variance:
    input:
        data="results/data/benchmark.parquet",
        meta="results/data/benchmark.meta.json",
        export="results/data/benchmark.export.json",
        code=code("gradient_variance.py"),
    output:
        json="results/tables/gradient_variance.json",
        csv=report(
            "results/tables/gradient_variance.csv", caption="../report/gradient_variance.rst", category="Training"
        ),
        png=report(
            "results/figures/gradient_variance.png", caption="../report/gradient_variance.rst", category="Training"
        ),
        svg="results/figures/gradient_variance.svg",
    params:
        seed=config["seed"],
        hidden=config["model"]["hidden"],
        batch_sizes=config["gradient_variance"]["batch_sizes"],
        draws=config["gradient_variance"]["draws"],
    log:
        "results/logs/gradient_variance.log",
    benchmark:
        "results/benchmarks/gradient_variance.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/gradient_variance.py"
