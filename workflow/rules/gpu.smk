# The accelerator path: device probe, transfer timing and GPU training (planned only when
# GPU_DEVICE is set, see common.smk). GPU jobs ask for gpu=1 so a cluster executor places
# them on GPU nodes, and take the whole timing_slot like every timing job.


rule probe_devices:
    output:
        "results/env/devices.json",
    input:
        code=code("probe_devices.py"),
    params:
        fingerprint=DEVICE_FINGERPRINT,
        mode=config["accelerator"],
    log:
        "results/logs/probe_devices.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
        gpu=GPU_JOB_GPUS,
    conda:
        ENV
    script:
        "../scripts/probe_devices.py"


rule time_transfer:
    input:
        data="results/data/benchmark.parquet",
        meta="results/data/benchmark.meta.json",
        export="results/data/benchmark.export.json",
        probe="results/env/devices.json",
        code=code("time_transfer.py"),
    output:
        "results/timing/gpu/transfer.rep{repeat}.json",
    params:
        device=GPU_DEVICE,
        batch_sizes=BATCH_SIZES,
        passes=config["gpu"]["transfer_passes"],
    wildcard_constraints:
        repeat=r"\d+",
    log:
        "results/logs/time_transfer/rep{repeat}.log",
    benchmark:
        "results/benchmarks/time_transfer/rep{repeat}.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=TIMING_JOB,
        gpu=1,
    conda:
        ENV
    script:
        "../scripts/time_transfer.py"


rule time_gpu_training:
    input:
        data="results/data/benchmark.parquet",
        meta="results/data/benchmark.meta.json",
        export="results/data/benchmark.export.json",
        probe="results/env/devices.json",
        code=code("time_gpu_training.py"),
    output:
        "results/timing/gpu/bs{batch_size}.rep{repeat}.json",
    params:
        device=GPU_DEVICE,
        seed=config["seed"],
        hidden=config["model"]["hidden"],
        lr=config["model"]["lr"],
        precisions=config["gpu"]["precisions"],
        placements=config["gpu"]["placements"],
        grad_scaler=config["gpu"]["grad_scaler"],
        warmup_steps=config["timing"]["warmup_steps"],
    wildcard_constraints:
        batch_size=r"\d+",
        repeat=r"\d+",
    log:
        "results/logs/time_gpu_training/bs{batch_size}.rep{repeat}.log",
    benchmark:
        "results/benchmarks/time_gpu_training/bs{batch_size}.rep{repeat}.tsv"
    threads: config["timing"]["threads"]
    resources:
        timing_slot=TIMING_JOB,
        gpu=1,
    conda:
        ENV
    script:
        "../scripts/time_gpu_training.py"


rule aggregate_gpu:
    input:
        records=GPU_TRAINING_RECORDS,
        transfers=GPU_TRANSFER_RECORDS,
        code=code("aggregate_gpu.py"),
    output:
        json="results/tables/gpu_training.json",
        csv=report("results/tables/gpu_training.csv", caption="../report/gpu_training.rst", category="GPU"),
        transfers="results/tables/transfers.json",
        transfers_csv=report("results/tables/transfers.csv", caption="../report/transfers.rst", category="GPU"),
    params:
        rows=config["data"]["benchmark"]["rows"],
        noise_iqr_ratio=config["aggregate"]["noise_iqr_ratio"],
        outlier_factor=config["aggregate"]["outlier_factor"],
        foreign_cpu_share=config["aggregate"]["foreign_cpu_share"],
        loadavg_rise=config["aggregate"]["loadavg_rise"],
    log:
        "results/logs/aggregate_gpu.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/aggregate_gpu.py"
