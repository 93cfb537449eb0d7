# The planner: a timed grid of workloads per device, the cost model fitted to it, the
# break-even curves, the FLOP-counter check and exercise 4's scale scenario.


rule time_cost_model:
    input:
        probe=probe_for_device,
        code=code("time_cost_model.py"),
    output:
        results(paths.COST_MODEL_RECORD),
    log:
        results(paths.log("time_cost_model/{device}.rep{repeat}")),
    benchmark:
        results(paths.benchmark("time_cost_model/{device}.rep{repeat}"))
    wildcard_constraints:
        device="cpu|cuda|mps",
        repeat=r"\d+",
    priority: repeat_priority
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        timing_slot=TIMING_JOB,
        gpu=gpus_for_device,
    params:
        seed=config["seed"],
        lr=config["model"]["lr"],
        grid=sorted_keys(config["planner"]["grid"]),
        warmup_steps=config["planner"]["warmup_steps"],
        epochs_per_job=config["planner"]["epochs_per_job"],
    script:
        "../scripts/time_cost_model.py"


# The planner's four jobs read the records and call the library (analyze/planner, planner_fit):
# each fits the same deterministic cost models from the same records where it needs them. Every
# config value a job's results depend on is a param of its own, each named; the grid's settings
# (planner.grid, .repeats, .warmup_steps) reach them through the grid files they read.
PLANNER_FIT_INPUT = dict(
    grid=expand(results(paths.COST_MODEL_RECORD), device=DEVICES, repeat=PLANNER_REPEATS),
    training=results(paths.CPU_TABLE),
    gpu_training=GPU_TRAINING_TABLE,
    transfers=TRANSFER_TABLE,
    # The model counted: any model but the grid's is planned from it, and every model's ops per step
    # are what a profile's GPU host pays (analyze.gpu_profile).
    profile=results(paths.MODEL_PROFILE),
    # The GPU's device profile where no GPU is measured or assumed (planner.gpu_profile; common.smk).
    gpu_profile=GPU_PROFILE,
)
PLANNER_FIT_PARAMS = dict(
    # The benchmark workload: the base of the break-even curves and the benchmark cells' fit points.
    rows=config["data"]["benchmark"]["rows"],
    features=config["data"]["benchmark"]["features"],
    hidden=config["model"]["hidden"],
    # The benchmark's cells are the grid's workload only for the textbook MLP trained as the grid
    # trains it (Adam on BCE); any other model enters the fit and the curves as its profile counts it.
    textbook=GRID_MODEL,
    threads=TIMING_THREADS,  # the threads the CPU rates hold for (the grid's; its benchmark cells')
    # Your own GPU numbers where none was measured (planner.gpu_assumed; null: the profile's GPU), and the
    # matmul precision that picks a profile's rate (fp32, or TF32 where timing.matmul_precision allows it).
    gpu_assumed=sorted_keys(config["planner"]["gpu_assumed"]),
    matmul_precision=config["timing"]["matmul_precision"] if GPU_PROFILE else None,
    gpu_profile_label=GPU_PROFILE_LABEL,  # the profile's name in the report (common.smk)
    # report.bandwidth_gb_s: the host→device bandwidth of the break-even curves and the
    # scenario's modelled epochs wherever no host→device copy was measured.
    assumed_host_to_device_gb_s=config["report"]["bandwidth_gb_s"],
    # aggregate: the noise flags of the fit points (and the break-even intervals' level and resamples).
    noise=NOISE_RULES,
)


rule planner_cost_model:
    input:
        **PLANNER_FIT_INPUT,
        code=code("plan_cost_model.py"),
    output:
        cost_model=results(paths.COST_MODEL),
        cost_model_csv=report(results(paths.COST_MODEL_CSV), caption="../report/cost_model.rst", category="Planner"),
    log:
        results(paths.log("planner_cost_model")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        **PLANNER_FIT_PARAMS,
        epochs=config["planner"]["epochs"],  # the training job the table's start-up is spread over
        curve_batch_size=config["planner"]["batch_size"],  # the step a profile's GPU row describes
        # The points' prediction intervals draw the break-even intervals' resamples, seeded by `seed`.
        seed=config["seed"],
    script:
        "../scripts/plan_cost_model.py"


rule planner_break_even:
    input:
        **PLANNER_FIT_INPUT,
        # The streaming study's reader (scale.enabled): the break-even figure's storage line.
        scale_jobs=SCALE_JOBS,
        # The simulated coverage of the break-even intervals, by design (benchmarks/calibration.py --planner).
        coverage=PLANNER_COVERAGE,
        code=code("plan_break_even.py"),
    output:
        break_even=results(paths.BREAK_EVEN),
        break_even_csv=report(results(paths.BREAK_EVEN_CSV), caption="../report/break_even.rst", category="Planner"),
        break_even_summary_csv=report(
            results(paths.BREAK_EVEN_SUMMARY_CSV), caption="../report/break_even.rst", category="Planner"
        ),
        break_even_summary_json=results(paths.BREAK_EVEN_SUMMARY),
        png=report(results(paths.BREAK_EVEN_PNG), caption="../report/break_even.rst", category="Planner"),
        svg=results(paths.BREAK_EVEN_SVG),
    log:
        results(paths.log("planner_break_even")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        **PLANNER_FIT_PARAMS,
        curve_batch_size=config["planner"]["batch_size"],
        epochs=config["planner"]["epochs"],
        sweep=sorted_keys(config["planner"]["sweep"]),
        grid_jobs=config["planner"]["repeats"],  # the design whose simulated coverage the report quotes
        # The break-even intervals' resamples are seeded by `seed`.
        seed=config["seed"],
    script:
        "../scripts/plan_break_even.py"


rule planner_flop_check:
    input:
        training=results(paths.CPU_TABLE),
        code=code("plan_flop_check.py"),
    output:
        flop_check=results(paths.FLOP_CHECK),
        flop_check_csv=report(results(paths.FLOP_CHECK_CSV), caption="../report/flop_check.rst", category="Planner"),
    log:
        results(paths.log("planner_flop_check")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        rows=config["data"]["benchmark"]["rows"],
        features=config["data"]["benchmark"]["features"],
        hidden=config["model"]["hidden"],
        batch_sizes=config["timing"]["batch_sizes"],
        # The measured epochs are the benchmark's CPU fast path, at the grid's threads, where it is the textbook MLP.
        textbook=GRID_MODEL,
        threads=TIMING_THREADS,
    script:
        "../scripts/plan_flop_check.py"


rule planner_scenario:
    input:
        **PLANNER_FIT_INPUT,
        probe=results(paths.DEVICE_PROBE),
        code=code("plan_scenario.py"),
    output:
        scenario=results(paths.SCENARIO),
        scenario_csv=report(results(paths.SCENARIO_CSV), caption="../report/scenario.rst", category="Planner"),
    log:
        results(paths.log("planner_scenario")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        **PLANNER_FIT_PARAMS,
        scenario=sorted_keys(config["planner"]["scenario"]),
    script:
        "../scripts/plan_scenario.py"
