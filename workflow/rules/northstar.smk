# Northstar model selection: split, early stopping per batch size (and device), time-to-target,
# seed limits, and the measured 1/B gradient-variance rule on the benchmark matrix.
# The split does not depend on the batch sizes: train_northstar checks that each of its batch sizes, and
# seed_limits that its own, fits the training split, so changing one batch size re-splits nothing.

# How every Northstar run trains (measure.northstar.RunSettings): one param of train_northstar and seed_limits.
NORTHSTAR_RUN = {
    "hidden": config["model"]["hidden"],
    "lr": config["model"]["lr"],
    "patience": config["selection"]["patience"],
    "min_delta": config["selection"]["min_delta"],
    "max_epochs": config["selection"]["max_epochs"],
}
# Sorted: reordering selection.batch_sizes changes no param of the Northstar job, so it re-trains nothing.
SELECTION_SIZES = sorted(config["selection"]["batch_sizes"])


rule prepare_northstar:
    input:
        source=NORTHSTAR_SOURCE,
        code=code("prepare_northstar.py"),
    output:
        table=results(paths.NORTHSTAR_SPLITS),
        meta=results(paths.NORTHSTAR_PREPARE),
    log:
        results(paths.log("prepare_northstar")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        ratios=sorted_keys(config["selection"]["split"]),
        seed=config["seed"],
        user_table=USER_TABLE,
    script:
        "../scripts/prepare_northstar.py"


rule train_northstar:
    input:
        table=results(paths.NORTHSTAR_SPLITS),
        meta=results(paths.NORTHSTAR_PREPARE),
        code=code("train_northstar.py"),
    # One job a device trains every selection batch size in turn (one process: torch's and torch.optim's
    # imports, about 4.3 s a process on the 2-vCPU VM, paid once, not once per batch size).
    output:
        history=[results(paths.NORTHSTAR_HISTORY, batch_size=size) for size in SELECTION_SIZES],
        model=[results(paths.NORTHSTAR_MODEL, batch_size=size) for size in SELECTION_SIZES],
        events=directory([results(paths.TENSORBOARD_RUN, batch_size=size) for size in SELECTION_SIZES]),
    log:
        results(paths.log("train_northstar/{device}")),
    benchmark:
        results(paths.benchmark("train_northstar/{device}"))
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
        seed=config["seed"],
        run=NORTHSTAR_RUN,
        batch_sizes=SELECTION_SIZES,
    script:
        "../scripts/train_northstar.py"


rule northstar_selection:
    input:
        histories=expand(
            results(paths.NORTHSTAR_HISTORY),
            device=NORTHSTAR_DEVICES,
            batch_size=config["selection"]["batch_sizes"],
        ),
        seeds=results(paths.SEED_LIMITS),
        code=code("northstar_selection.py"),
    output:
        json=results(paths.TIME_TO_TARGET),
        csv=report(results(paths.TIME_TO_TARGET_CSV), caption="../report/time_to_target.rst", category="Training"),
        png=report(results(paths.NORTHSTAR_CURVES_PNG), caption="../report/northstar_curves.rst", category="Training"),
        svg=results(paths.NORTHSTAR_CURVES_SVG),
    log:
        results(paths.log("northstar_selection")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        within=config["selection"]["target_within"],
        noise=NOISE_RULES,
    script:
        "../scripts/northstar_selection.py"


rule seed_limits:
    input:
        table=results(paths.NORTHSTAR_SPLITS),
        meta=results(paths.NORTHSTAR_PREPARE),
        histories=expand(
            results(paths.NORTHSTAR_HISTORY),
            device=NORTHSTAR_DEVICES,
            batch_size=config["selection"]["batch_sizes"],
        ),
        code=code("seed_limits.py"),
    output:
        json=results(paths.SEED_LIMITS),
        table_csv=report(results(paths.SEED_LIMITS_CSV), caption="../report/seed_limits.rst", category="Training"),
        table_json=results(paths.SEED_LIMITS_TABLE),
    log:
        results(paths.log("seed_limits")),
    benchmark:
        results(paths.benchmark("seed_limits"))
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        timing_slot=OTHER_JOB,
    params:
        seed=config["seed"],
        seeds=config["selection"]["seeds"],
        batch_size=config["selection"]["seed_batch_size"],
        run=NORTHSTAR_RUN,
    script:
        "../scripts/seed_limits.py"


rule gradient_variance:
    input:
        data=results(paths.DATASET_FILE, dataset="benchmark", fmt="parquet"),
        meta=results(paths.DATASET_META, dataset="benchmark"),
        export=results(paths.DATASET_EXPORT, dataset="benchmark"),
        code=code("gradient_variance.py"),
    output:
        json=results(paths.GRADIENT_VARIANCE),
        csv=report(results(paths.GRADIENT_VARIANCE_CSV), caption="../report/gradient_variance.rst", category="Training"),
        png=report(results(paths.GRADIENT_VARIANCE_PNG), caption="../report/gradient_variance.rst", category="Training"),
        svg=results(paths.GRADIENT_VARIANCE_SVG),
    log:
        results(paths.log("gradient_variance")),
    benchmark:
        results(paths.benchmark("gradient_variance"))
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        timing_slot=OTHER_JOB,
    params:
        seed=config["seed"],
        hidden=config["model"]["hidden"],
        batch_sizes=config["gradient_variance"]["batch_sizes"],
        draws=config["gradient_variance"]["draws"],
    script:
        "../scripts/gradient_variance.py"
