# Shared helpers: the library path, the device plan and the job lists.
from pathlib import Path

from accel_choice.devices import planned_device

LIBRARY = Path(workflow.basedir) / "workflow" / "scripts"

ENV = "../../envs/accel-choice.yaml"
# Shares of the global `timing_slot` resource (2 in profiles/default): a timing job takes
# both and runs alone; any other job takes one.
TIMING_JOB = 2
OTHER_JOB = 1
BATCH_SIZES = config["timing"]["batch_sizes"]
REPEATS = list(range(config["timing"]["repeats"]))
DATASETS = ["benchmark", "northstar"]


def sorted_keys(value):
    """A config mapping with its keys sorted, at every level, for use as a param.

    Snakemake's params trigger compares a dict param with its key order, so reordering the
    keys of a YAML section (or `--config` merging them) would otherwise re-run the rule.
    """
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    return value


def library(*modules):
    """Library modules a rule's results depend on: edits to them re-run the rule."""
    return [str(LIBRARY / "accel_choice" / f"{name}.py") for name in modules]


# Decided when the workflow is parsed: GPU_DEVICE is "cuda" or "mps" when GPU jobs are
# planned, else None. DEVICE_FINGERPRINT names the visible devices; it is a param of the
# probe rule, so a machine that gains or swaps a GPU re-runs what depends on the probe.
GPU_DEVICE, DEVICE_FINGERPRINT = planned_device(config["accelerator"])
GPU_JOB_GPUS = 1 if GPU_DEVICE else 0
GPU_TRAINING_RECORDS = (
    expand("results/timing/gpu/bs{batch_size}.rep{repeat}.json", batch_size=BATCH_SIZES, repeat=REPEATS)
    if GPU_DEVICE
    else []
)
GPU_TRANSFER_RECORDS = expand("results/timing/gpu/transfer.rep{repeat}.json", repeat=REPEATS) if GPU_DEVICE else []
GPU_TABLES = ["results/tables/gpu_training.json", "results/tables/transfers.json"] if GPU_DEVICE else []

# Northstar model selection and the planner's grid run on the CPU and, where GPU jobs are
# planned, on the GPU too.
DEVICES = ["cpu"] + ([GPU_DEVICE] if GPU_DEVICE else [])
NORTHSTAR_DEVICES = DEVICES
PLANNER_REPEATS = list(range(config["planner"]["repeats"]))
USER_TABLE = config["data"]["northstar"]["table"]
NORTHSTAR_SOURCE = (
    [USER_TABLE["path"]]
    if USER_TABLE
    else ["results/data/northstar.npy", "results/data/northstar.meta.json"]
)


def probe_for_device(wildcards):
    """The device probe, an input of a GPU job only: a swapped GPU re-runs it, a CPU job stays."""
    return [] if wildcards.device == "cpu" else ["results/env/devices.json"]


def gpus_for_device(wildcards):
    """GPU count a per-device job asks the scheduler for."""
    return 0 if wildcards.device == "cpu" else 1


# Jobs with a `benchmark:` file: the heavy ones. Each name is the stem its log and its
# benchmark file share (results/logs/<name>.log, results/benchmarks/<name>.tsv), so the
# resource table can pair them.
BENCHMARKED_JOBS = [
    "generate_benchmark",
    "generate_northstar",
    "collect_environment",
    "seed_limits",
    "gradient_variance",
    *expand("export_data/{dataset}", dataset=DATASETS),
    *expand(
        "time_load_convert/{dataset}.{fmt}.rep{repeat}",
        dataset=DATASETS,
        fmt=config["timing"]["formats"],
        repeat=REPEATS,
    ),
    *expand("time_cpu_training/bs{batch_size}.rep{repeat}", batch_size=BATCH_SIZES, repeat=REPEATS),
    *expand(
        "train_northstar/{device}_bs{batch_size}",
        device=NORTHSTAR_DEVICES,
        batch_size=config["selection"]["batch_sizes"],
    ),
    *expand("time_cost_model/{device}.rep{repeat}", device=DEVICES, repeat=PLANNER_REPEATS),
    *(expand("time_transfer/rep{repeat}", repeat=REPEATS) if GPU_DEVICE else []),
    *(
        expand("time_gpu_training/bs{batch_size}.rep{repeat}", batch_size=BATCH_SIZES, repeat=REPEATS)
        if GPU_DEVICE
        else []
    ),
]
