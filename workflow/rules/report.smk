# Environment record and the decision report.


rule collect_environment:
    input:
        code=code("collect_environment.py"),
    output:
        json=results(paths.ENVIRONMENT),
        txt=results(paths.ENVIRONMENT_TXT),
    log:
        results(paths.log("collect_environment")),
    benchmark:
        results(paths.benchmark("collect_environment"))
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    script:
        "../scripts/collect_environment.py"


rule decide:
    input:
        environment=results(paths.ENVIRONMENT),
        metas=expand(results(paths.DATASET_META), dataset=DATASETS),
        exports=expand(results(paths.DATASET_EXPORT), dataset=DATASETS),
        cpu_training=results(paths.CPU_TABLE),
        gpu_training=GPU_TRAINING_TABLE,
        transfers=TRANSFER_TABLE,
        load_convert=results(paths.LOAD_CONVERT_TABLE),
        probe=results(paths.DEVICE_PROBE),
        profile=results(paths.MODEL_PROFILE),
        # the epochs the Northstar selection needed: the default of gpu.epochs
        time_to_target=results(paths.TIME_TO_TARGET),
        code=code("decide.py"),
    output:
        decision=results(paths.DECISION),
        full_path_csv=results(paths.FULL_PATH_CSV),
        full_path_html=report(results(paths.FULL_PATH_HTML), caption="../report/full_path.rst", category="Decision"),
        full_path_json=results(paths.FULL_PATH),
        data_csv=report(results(paths.DATA_CSV), caption="../report/data.rst", category="Data"),
        data_json=results(paths.DATA_TABLE),
        theory_csv=report(results(paths.THEORY_CSV), caption="../report/theory.rst", category="Decision"),
        theory_json=results(paths.THEORY),
        sheet_csv=results(paths.DECISION_SHEET_CSV),
        sheet_html=report(
            results(paths.DECISION_SHEET_HTML), caption="../report/decision_sheet.rst", category="Decision"
        ),
        sheet_json=results(paths.DECISION_SHEET),
    log:
        results(paths.log("decide")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        rows=config["data"]["benchmark"]["rows"],
        batch_sizes=config["timing"]["batch_sizes"],
        bandwidth_gb_s=config["report"]["bandwidth_gb_s"],
        accelerator=config["accelerator"],
        speedup_threshold=config["gpu"]["speedup_threshold"],
        epochs=config["gpu"]["epochs"],
        noise=NOISE_RULES,
    script:
        "../scripts/decide.py"


rule cost_table:
    input:
        decision=results(paths.DECISION),
        selection=results(paths.TIME_TO_TARGET),
        code=code("cost_table.py"),
    output:
        json=results(paths.COST),
        csv=report(results(paths.COST_CSV), caption="../report/cost.rst", category="Decision"),
    log:
        results(paths.log("cost_table")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        cost=sorted_keys(config["cost"]),
    script:
        "../scripts/cost_table.py"


rule report:
    input:
        environment=results(paths.ENVIRONMENT),
        decision=results(paths.DECISION),
        data=results(paths.DATA_TABLE),
        theory=results(paths.THEORY),
        cpu_training=results(paths.CPU_TABLE),
        gpu_training=GPU_TRAINING_TABLE,
        transfers=TRANSFER_TABLE,
        load_convert=results(paths.LOAD_CONVERT_TABLE),
        probe=results(paths.DEVICE_PROBE),
        selection=results(paths.TIME_TO_TARGET),
        seed_limits=results(paths.SEED_LIMITS),
        gradient_variance=GRADIENT_VARIANCE,
        resources=results(paths.RESOURCES),
        cost_model=results(paths.COST_MODEL),
        break_even=results(paths.BREAK_EVEN),
        flop_check=results(paths.FLOP_CHECK),
        scenario=results(paths.SCENARIO),
        cost=COST_TABLE,
        # The streaming study (scale.enabled): its summary and the jobs' stages it tabulates.
        scale=SCALE_TABLE,
        scale_jobs=SCALE_JOBS,
        scale_steps=expand(results(paths.SCALE_STEP), device=DEVICES) if SCALE_ON else [],
        # timing.budget_s: every round of the timing plan
        plan=lambda wildcards: planned_rounds()[0],
        code=code("make_report.py"),
        # The workflow's description, under REPORT.md's first screen on the HTML report's landing page.
        description=os.path.relpath(REPO / "workflow" / "report" / "workflow.rst"),
    output:
        md=report(results(paths.REPORT), caption="../report/report_md.rst", category="Decision"),
        html=report(results(paths.REPORT_HTML), caption="../report/report_html.rst", category="Decision"),
        landing=results(paths.LANDING),
        png=report(results(paths.DECISION_PNG), caption="../report/decision_figure.rst", category="Decision"),
        svg=report(results(paths.DECISION_SVG), caption="../report/decision_figure.rst", category="Decision"),
    log:
        results(paths.log("report")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        seed=config["seed"],
        accelerator=config["accelerator"],
        noise=NOISE_RULES,
        target=config["timing"]["target"],
        # The files this configuration makes (archive.smk): the provenance section counts the
        # commits of their records only, not of records an earlier configuration left behind.
        made=lambda wildcards: made_files(),
    script:
        "../scripts/make_report.py"


# The effective configuration (defaults filled in) beside the results: it changes whenever the
# configuration does, so it is its own job and the report does not re-run with it.
rule config_snapshot:
    input:
        code=code("config_snapshot.py"),
    output:
        results(paths.CONFIG),
    log:
        results(paths.log("config_snapshot")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        config=sorted_keys(config),
    script:
        "../scripts/config_snapshot.py"


# The run ends by saying its answer: the verdict, the run's trust, where the report is (render/run_end.py).
onsuccess:
    from accel_choice import records
    from accel_choice.records.decision import Decision
    from accel_choice.render.run_end import end_of_run

    if os.path.exists(results(paths.DECISION)):
        print(end_of_run(records.read(Decision, results(paths.DECISION)), paths.RESULTS))
