# The accelerator path: device probe, transfer timing and GPU training (planned only when
# GPU_DEVICE is set, see common.smk). GPU jobs ask for gpu=1 so a cluster executor places
# them on GPU nodes, and take the whole timing_slot like every timing job.


rule probe_devices:
    input:
        code=code("probe_devices.py"),
    output:
        results(paths.DEVICE_PROBE),
    log:
        results(paths.log("probe_devices")),
    # It gates the GPU timing jobs: before any timing job, or their repeat 0 could wait past the CPU's last.
    priority: DATA_PRIORITY
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
        gpu=GPU_JOB_GPUS,
    params:
        fingerprint=DEVICE_FINGERPRINT,
        mode=config["accelerator"],
    script:
        "../scripts/probe_devices.py"


rule time_transfer:
    input:
        data=results(paths.DATASET_FILE, dataset="benchmark", fmt="parquet"),
        meta=results(paths.DATASET_META, dataset="benchmark"),
        export=results(paths.DATASET_EXPORT, dataset="benchmark"),
        probe=results(paths.DEVICE_PROBE),
        code=code("time_transfer.py"),
    output:
        results(paths.TRANSFER_RECORD),
    log:
        results(paths.log("time_transfer/rep{repeat}")),
    benchmark:
        results(paths.benchmark("time_transfer/rep{repeat}"))
    wildcard_constraints:
        repeat=r"\d+",
    priority: repeat_priority
    conda:
        ENV
    threads: TIMING_THREADS
    resources:
        timing_slot=TIMING_JOB,
        gpu=1,
    params:
        device=GPU_DEVICE,
        batch_sizes=BATCH_SIZES,
        passes=config["gpu"]["transfer_passes"],
    script:
        "../scripts/time_transfer.py"


rule time_gpu_training:
    input:
        data=results(paths.DATASET_FILE, dataset="benchmark", fmt="parquet"),
        meta=results(paths.DATASET_META, dataset="benchmark"),
        export=results(paths.DATASET_EXPORT, dataset="benchmark"),
        probe=results(paths.DEVICE_PROBE),
        code=code("time_gpu_training.py"),
        model_code=MODEL_CODE,
    output:
        results(paths.GPU_RECORD),
    log:
        results(paths.log("time_gpu_training/bs{batch_size}.rep{repeat}")),
    benchmark:
        results(paths.benchmark("time_gpu_training/bs{batch_size}.rep{repeat}"))
    wildcard_constraints:
        batch_size=r"\d+",
        repeat=r"\d+",
    priority: repeat_priority
    conda:
        ENV
    # Its largest CPU thread count (timing.threads): the CPU's fast path is timed beside the GPU at each.
    threads: CPU_JOB_THREADS
    resources:
        timing_slot=TIMING_JOB,
        gpu=1,
    params:
        device=GPU_DEVICE,
        gpu_threads=TIMING_THREADS,
        thread_counts=CPU_THREADS,
        seed=config["seed"],
        model=MODEL,
        precisions=config["gpu"]["precisions"],
        placements=config["gpu"]["placements"],
        grad_scaler=config["gpu"]["grad_scaler"],
        warmup_steps=config["timing"]["warmup_steps"],
        epochs_per_job=config["timing"]["epochs_per_job"],
        compile=config["timing"]["compile"],
        compile_mode=COMPILE_MODE,
        matmul_precision=config["timing"]["matmul_precision"],
    script:
        "../scripts/time_gpu_training.py"


rule aggregate_gpu:
    input:
        records=GPU_TRAINING_RECORDS,
        transfers=GPU_TRANSFER_RECORDS,
        code=code("aggregate_gpu.py"),
    output:
        json=results(paths.GPU_TABLE),
        csv=report(results(paths.GPU_TABLE_CSV), caption="../report/gpu_training.rst", category="GPU"),
        transfers=results(paths.TRANSFER_TABLE),
        transfers_csv=report(results(paths.TRANSFER_CSV), caption="../report/transfers.rst", category="GPU"),
        epochs=results(paths.GPU_EPOCHS),
        epochs_csv=results(paths.GPU_EPOCHS_CSV),
        estimates=results(paths.GPU_ESTIMATES),
        estimates_csv=results(paths.GPU_ESTIMATES_CSV),
    log:
        results(paths.log("aggregate_gpu")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        rows=config["data"]["benchmark"]["rows"],
        noise=NOISE_RULES,
    script:
        "../scripts/aggregate_gpu.py"
