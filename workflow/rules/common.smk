# Shared helpers: the library path, the device plan and the job lists.
import itertools
import os
from pathlib import Path

from snakemake.io import strip_wildcard_constraints

from accel_choice import records
from accel_choice.io import benchmark_data, gpu_profiles, paths
from accel_choice.io.imports import CACHE, ImportCache, closure, module_file, relative_paths
from accel_choice.records.model import split_factory
from accel_choice.records.timing_plan import TimingPlan
from accel_choice.measure.device_plan import planned_device

# This file is workflow/rules/common.smk: the library is workflow/scripts, found from here (not from
# workflow.basedir, the main Snakefile's folder: another project's when this workflow is a module).
LIBRARY = Path(workflow.current_basedir).parent / "scripts"

ENV = "../../envs/accel-choice.yaml"
# Shares of the global `timing_slot` resource (2 in profiles/default): a timing job takes
# both and runs alone; any other job takes one.
TIMING_JOB = 2
OTHER_JOB = 1
BATCH_SIZES = config["timing"]["batch_sizes"]
# timing.threads: each CPU training cell at each of these torch thread counts (a measured dimension
# of the best CPU configuration), all of them in each CPU training job; every other timing job runs at
# the first of them. A CPU training job given fewer threads than its largest count (--cores below it)
# refuses to run (time_cpu_training.py): the check cannot be made when the workflow is parsed, where a
# dry run without --cores also reads 1 core.
CPU_THREADS = config["timing"]["threads"]
TIMING_THREADS = CPU_THREADS[0]
CPU_JOB_THREADS = max(CPU_THREADS)

REPEATS = list(range(config["timing"]["repeats"]))
DATASETS = ["benchmark", "northstar"]
# Repeat r of every timing cell runs before repeat r+1 of any: the rules with a {repeat} wildcard
# take `priority: repeat_priority`, higher for earlier repeats (never negative: the ILP scheduler
# maximises priority x scheduled, so a negative priority would hold a job back). A slow minute of
# the machine then lands on one repeat of many cells instead of on every repeat of one cell.
LAST_REPEAT = max(config["timing"]["repeats"], config["planner"]["repeats"]) - 1


# Every timing job also goes before the other jobs ready beside it (priority 0). Otherwise the greedy
# scheduler may start one of them alone, and the timing job waits for both slots while a core idles:
# planner_flop_check and seed_limits ran alone like that, about 4 s each, between the last timing jobs.
TIMING_PRIORITY = 1


def repeat_priority(wildcards):
    # A job the timing plan added: as the last planned repeat.
    return TIMING_PRIORITY + max(LAST_REPEAT - int(wildcards.repeat), 0)


# The data jobs (generate or import, export) run before any timing job that is ready without them (the
# planner's grid needs no data): otherwise the grid's later repeats would take the timing slot while the
# data waited, and a resumed run would start a later repeat of one rule before an earlier one of another.
DATA_PRIORITY = TIMING_PRIORITY + LAST_REPEAT + 1


def results(name, **wildcards):
    """A file or folder under results/, by its name in accel_choice.io.paths (the one place that
    names them), with the wildcards given set: results(paths.DATASET_META, dataset="benchmark")."""
    return f"{paths.RESULTS}/{paths.fill(name, **wildcards)}"


def in_results(path):
    """The name of a path under results/ relative to that folder: the inverse of results()."""
    prefix = f"{paths.RESULTS}/"
    if not str(path).startswith(prefix):
        raise ValueError(f"{path} is not under {prefix}")
    return str(path).removeprefix(prefix)


def sorted_keys(value):
    """A config mapping with its keys sorted, at every level, for use as a param.

    Snakemake's params trigger compares a dict param with its key order, so reordering the
    keys of a YAML section (or `--config` merging them) would otherwise re-run the rule.
    """
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    return value


# When a cell is noisy and a repeat busy (analyze.stats.NoiseRules): one param of each rule that flags.
NOISE_RULES = sorted_keys(config["aggregate"])


# What each library file imports, kept between invocations (every one parses the workflow): by content,
# so an edit is read again. Deleting it costs the next parse about a second.
IMPORT_CACHE = ImportCache(CACHE)


def code(script):
    """The library files `script` imports, directly or not (its import closure, read from the
    source), relative to the working directory: editing one re-runs exactly the rules whose
    scripts import it, and a checkout moved together with its results plans nothing."""
    return relative_paths(closure(LIBRARY / script, LIBRARY, cache=IMPORT_CACHE), os.getcwd())


# The model the timing jobs train (records.model.ModelSpec): a param of each rule that builds it. A
# user's model (model.factory) is also an input through its source: its module and every module it
# imports from model.path, so editing the model re-runs what timed it.
MODEL = sorted_keys(config["model"])
# torch.compile's mode: a param of the training jobs only where a compiled variant is timed (else no result
# depends on it, and changing it re-runs nothing).
COMPILE_MODE = config["timing"]["compile_mode"] if True in config["timing"]["compile"] else None
# The workload of the planner's grid: the textbook MLP trained with Adam on BCE. Any other model is
# planned from its counted profile (analyze.model_work).
GRID_MODEL = (
    config["model"]["factory"] is None and config["model"]["optimizer"] == "adam" and config["model"]["loss"] == "bce"
)
# Your own benchmark data ({"kind": "table" | "arrays", ...}) or None for the generated matrix; one
# sample's shape is a param of the rules that build the model (the Snakefile resolved it).
USER_BENCHMARK = benchmark_data.source(config)
GRADIENT_VARIANCE = [] if USER_BENCHMARK else [results(paths.GRADIENT_VARIANCE)]


def model_code():
    factory = config["model"]["factory"]
    if not factory:
        return []
    root = config["model"]["path"]
    found = module_file(root, split_factory(factory)[0])
    return relative_paths(closure(found, root, None, IMPORT_CACHE) + [found], os.getcwd()) if found else []


MODEL_CODE = sorted(set(model_code()))


# The streaming study (scale.enabled, docs/scale.md): its jobs and what reads them.
SCALE_ON = config["scale"]["enabled"]
SCALE_JOBS = expand(results(paths.SCALE_JOB), format=config["scale"]["formats"]) if SCALE_ON else []
SCALE_TABLE = [results(paths.SCALE)] if SCALE_ON else []


# The cost section, where prices are given (cost.per_hour).
COST_TABLE = [results(paths.COST)] if config["cost"]["per_hour"] else []


# Decided when the workflow is parsed: GPU_DEVICE is "cuda" or "mps" when GPU jobs are
# planned, else None. DEVICE_FINGERPRINT names the visible devices; it is a param of the
# probe rule, so a machine that gains or swaps a GPU re-runs what depends on the probe.
# measure.device_plan caches torch's answer per machine state: a no-op run does not import torch.
GPU_DEVICE, DEVICE_FINGERPRINT = planned_device(config["accelerator"])
GPU_JOB_GPUS = 1 if GPU_DEVICE else 0
GPU_TRAINING_RECORDS = expand(results(paths.GPU_RECORD), batch_size=BATCH_SIZES, repeat=REPEATS) if GPU_DEVICE else []
GPU_TRANSFER_RECORDS = expand(results(paths.TRANSFER_RECORD), repeat=REPEATS) if GPU_DEVICE else []
GPU_TRAINING_TABLE = [results(paths.GPU_TABLE)] if GPU_DEVICE else []
TRANSFER_TABLE = [results(paths.TRANSFER_TABLE)] if GPU_DEVICE else []

# The GPU the planner models where none is measured: your numbers (planner.gpu_assumed), else a device
# profile (planner.gpu_profile: auto, a shipped name or a file), an input of the planner's jobs, so a
# new profile re-runs them (io.gpu_profiles; docs/planner.md).
GPU_PROFILE = (
    []
    if GPU_DEVICE or config["planner"]["gpu_assumed"] is not None
    else [os.path.relpath(gpu_profiles.resolve(config["planner"]["gpu_profile"]), os.getcwd())]
)
# How the report names it: a shipped profile by its name, decided here with this checkout's shipped folder.
GPU_PROFILE_LABEL = gpu_profiles.label(GPU_PROFILE[0]) if GPU_PROFILE else None
PLANNER_COVERAGE = os.path.relpath(LIBRARY.parent / "resources" / "planner_coverage.json", os.getcwd())

# Northstar model selection and the planner's grid run on the CPU and, where GPU jobs are
# planned, on the GPU too.
DEVICES = ["cpu"] + ([GPU_DEVICE] if GPU_DEVICE else [])
NORTHSTAR_DEVICES = DEVICES
PLANNER_REPEATS = list(range(config["planner"]["repeats"]))
USER_TABLE = config["data"]["northstar"]["table"]
# The Northstar data as the canonical matrix: generated, or your table imported (data.smk)
NORTHSTAR_SOURCE = [
    results(paths.DATASET_MATRIX, dataset="northstar"),
    results(paths.DATASET_META, dataset="northstar"),
]


def probe_for_device(wildcards):
    """The device probe, an input of a GPU job only: a swapped GPU re-runs it, a CPU job stays."""
    return [] if wildcards.device == "cpu" else [results(paths.DEVICE_PROBE)]


def gpus_for_device(wildcards):
    """GPU count a per-device job asks the scheduler for."""
    return 0 if wildcards.device == "cpu" else 1


# timing.budget_s (docs/statistics.md#adding-jobs-where-the-answer-is-close-2026-12-06): the plan_timing
# checkpoint adds one CPU training job a round until every tie with the fastest and the step-time
# growth are within timing.target, or the budget is spent. None: timing.repeats jobs, no checkpoint.
TIMING_BUDGET = config["timing"]["budget_s"]


def cpu_training_jobs(first, stop):
    """The CPU training jobs of repeats first..stop - 1 (JOBS's form): each times every thread count."""
    return jobs(repeat=range(first, stop))


def cpu_records(repeats):
    """The CPU training records of the first `repeats` repeats."""
    return job_files("time_cpu_training", ("output",), cpu_training_jobs(0, repeats))


def plan_before(round_number):
    """The CPU training jobs round `round_number` of the timing plan reads: timing.repeats, then what the
    round before settled on (its checkpoint must have run: Snakemake re-evaluates this once it has)."""
    if round_number == 0:
        return len(REPEATS)
    previous = checkpoints.plan_timing.get(round=round_number - 1).output[0]
    return records.read(TimingPlan, previous).next_jobs


def planned_rounds():
    """Every round's plan file so far and the CPU training jobs the last one settled on (timing.repeats
    and no rounds without timing.budget_s)."""
    if TIMING_BUDGET is None:
        return [], len(REPEATS)
    rounds = []
    while True:
        path = checkpoints.plan_timing.get(round=len(rounds)).output[0]
        rounds.append(path)
        plan = records.read(TimingPlan, path)
        if plan.stopped:
            return rounds, plan.next_jobs


def jobs(**axes):
    """The wildcard values of a rule's jobs: one mapping per combination of the axes' values."""
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


# Every job of this configuration's DAG, as the wildcard values of each rule's jobs (`all` and
# `archive` aside; a rule missing here stops the workflow when it is parsed). The archive job
# takes every output, log and benchmark file of these jobs as input (archive.smk): a file lost
# from results/ is made again by the next run, and the archive tells this configuration's files
# from those an earlier configuration left behind.
JOBS = {
    "generate_benchmark": [] if USER_BENCHMARK else jobs(),
    "import_benchmark": jobs() if USER_BENCHMARK else [],
    "generate_northstar": [] if USER_TABLE else jobs(),
    "import_northstar": jobs() if USER_TABLE else [],
    "export_data": jobs(dataset=DATASETS),
    "profile_model": jobs(),
    "time_load_convert": jobs(repeat=REPEATS),
    "time_cpu_training": cpu_training_jobs(0, len(REPEATS)),
    "plan_timing": [] if TIMING_BUDGET is None else jobs(round=[0]),
    "aggregate_training": jobs(),
    "aggregate_load_convert": jobs(),
    "probe_devices": jobs(),
    "time_transfer": jobs(repeat=REPEATS) if GPU_DEVICE else [],
    "time_gpu_training": jobs(batch_size=BATCH_SIZES, repeat=REPEATS) if GPU_DEVICE else [],
    "aggregate_gpu": jobs() if GPU_DEVICE else [],
    "prepare_northstar": jobs(),
    "train_northstar": jobs(device=NORTHSTAR_DEVICES),
    "northstar_selection": jobs(),
    "seed_limits": jobs(),
    # The textbook's study of its generated 0/1 matrix: not planned on your own data.
    "gradient_variance": [] if USER_BENCHMARK else jobs(),
    "time_cost_model": jobs(device=DEVICES, repeat=PLANNER_REPEATS),
    "planner_cost_model": jobs(),
    "planner_break_even": jobs(),
    "planner_flop_check": jobs(),
    "planner_scenario": jobs(),
    "collect_environment": jobs(),
    "decide": jobs(),
    "cost_table": jobs() if COST_TABLE else [],
    "time_scale": jobs(format=config["scale"]["formats"]) if SCALE_ON else [],
    "time_scale_step": jobs(device=DEVICES) if SCALE_ON else [],
    "scale_table": jobs() if SCALE_ON else [],
    "report": jobs(),
    "config_snapshot": jobs(),
    "resource_table": jobs(),
    "lab_report": jobs() if config["lab_report"] else [],
}


# Each rule's name in the workflow that runs it: renamed where this workflow is a module (`use rule * from
# accel_choice as accel_choice_*`). Taken while the workflow is parsed: Snakemake drops the module's renaming once
# the module is read, and the timing plan's added jobs are listed later (added_files).
RULE_NAMES = {name: workflow.modifier.modify_rulename(name) for name in [*JOBS, "archive", "all"]}


def own_rules():
    """This workflow's rules defined so far, in their order, by the names they have here (JOBS's keys).

    Imported as a module (docs/development.md#use-it-as-a-module), Snakemake gives them the names the
    importing workflow asks for (`use rule * from accel_choice as accel_choice_*`), and workflow.rules
    holds that workflow's own rules too: only the rules of the module being parsed are this one's.
    """
    here = {renamed: name for name, renamed in RULE_NAMES.items()}
    return {here.get(each.name, each.name): each for each in workflow.rules if each in workflow.modifier.rules}


def job_files(name, kinds=("output", "log", "benchmark"), listed=None):
    """Outputs, logs and benchmark files of every job that JOBS (or `listed`) lists for the rule called `name`."""
    listed = JOBS[name] if listed is None else listed
    if not listed:  # e.g. import_benchmark where the benchmark matrix is generated: not even defined
        return []
    writer = workflow.get_rule(RULE_NAMES[name])
    patterns = [
        *(writer.output if "output" in kinds else []),
        *(writer.log if "log" in kinds else []),
        *([writer.benchmark] if "benchmark" in kinds and writer.benchmark else []),
    ]
    return [
        path
        for wildcards in listed
        for pattern in patterns
        for path in expand(strip_wildcard_constraints(pattern), **{key: [value] for key, value in wildcards.items()})
    ]


def added_files(kinds=("output", "log", "benchmark")):
    """The files of the jobs the timing plan added beyond JOBS: the CPU training jobs past timing.repeats, and
    every round of the plan after the first. Known once the plan_timing checkpoints have run."""
    if TIMING_BUDGET is None:
        return []
    rounds, settled = planned_rounds()
    added = {
        "time_cpu_training": cpu_training_jobs(len(REPEATS), settled),
        "plan_timing": jobs(round=range(1, len(rounds))),
    }
    return [path for name, listed in added.items() for path in job_files(name, kinds, listed)]


def plan_inputs(wildcards):
    """The CPU training records and benchmark files a round of the timing plan weighs."""
    measured = cpu_training_jobs(0, plan_before(int(wildcards.round)))
    return {
        "records": job_files("time_cpu_training", ("output",), measured),
        "benchmarks": job_files("time_cpu_training", ("benchmark",), measured),
    }


def benchmarked_jobs():
    """BENCHMARKED_JOBS (archive.smk) and the CPU training jobs the timing plan added (timing.budget_s)."""
    return BENCHMARKED_JOBS + [paths.benchmark_stem(in_results(path)) for path in added_files(kinds=("benchmark",))]


def made_files(wildcards=None):
    """MADE_FILES (archive.smk) and the files of the jobs the timing plan added (timing.budget_s)."""
    return MADE_FILES + added_files()
