"""Every file and folder the workflow writes under results/, each named once.

Names are relative to the results folder (`RESULTS`); patterns keep Snakemake's `{wildcard}` form,
and `fill` sets some of their wildcards (`fill(DATASET_FILE, dataset="benchmark", fmt="parquet")`
is the benchmark data set's Parquet file). The rule files read these names through
`results(...)` in workflow/rules/common.smk; the library and the scripts read them here, so a
file is renamed in one place. Standard library only: the Snakefile imports this when it is
parsed, and it is the bottom of the library (it imports nothing of accel_choice).
"""

from __future__ import annotations

# The results folder, relative to the working directory.
RESULTS = "results"

# Folders.
DATA = "data"
TIMING = "timing"
TABLES = "tables"
FIGURES = "figures"
ENV = "env"
NORTHSTAR = "northstar"
LOGS = "logs"
BENCHMARKS = "benchmarks"

# ---- data: the generated matrices and their exports ({dataset}: benchmark, northstar)
DATASET_MATRIX = f"{DATA}/{{dataset}}.npy"
DATASET_META = f"{DATA}/{{dataset}}.meta.json"
DATASET_FILE = f"{DATA}/{{dataset}}.{{fmt}}"  # an exported file: {fmt} is parquet or csv
DATASET_EXPORT = f"{DATA}/{{dataset}}.export.json"

# ---- timing records: one file per timing job
LOAD_CONVERT_JOB = f"{TIMING}/load_convert/rep{{repeat}}.json"  # every (dataset, format), interleaved
# A training job's name: its record's, log's and benchmark's stem, and its name in the sentinel and the report.
CPU_JOB = "rep{repeat}"  # every thread count, batch size and loader, interleaved
GPU_JOB = "bs{batch_size}.rep{repeat}"  # one batch size, every precision and placement
JOB_NAMES = {"cpu": CPU_JOB, "gpu": GPU_JOB}


def training_job(table: str, batch_size: int, threads: int, repeat: int) -> str:
    """Name the training job of `table` ("cpu", "gpu") that timed a variant's repeat: "rep2", "bs64.rep2"."""
    return JOB_NAMES[table].format(batch_size=batch_size, threads=threads, repeat=repeat)


def training_record(table: str, job: str) -> str:
    """Return the timing record of the training job `job` (CPU_JOB or GPU_JOB, filled in) of `table` ("cpu", "gpu")."""
    return f"{TIMING}/{table}/{job}.json"


CPU_RECORD = training_record("cpu", CPU_JOB)
GPU_RECORD = training_record("gpu", GPU_JOB)
TRANSFER_RECORD = f"{TIMING}/gpu/transfer.rep{{repeat}}.json"
COST_MODEL_RECORD = f"{TIMING}/cost_model/{{device}}.rep{{repeat}}.json"
# timing.budget_s: each round's decision to add CPU training jobs or stop (records.timing_plan)
TIMING_PLAN = f"{TIMING}/plan/round{{round}}.json"

# ---- tables: the aggregated measurements, each as JSON (the record) and CSV
CPU_TABLE = f"{TABLES}/cpu_training.json"
CPU_TABLE_CSV = f"{TABLES}/cpu_training.csv"
CPU_TABLE_HTML = f"{TABLES}/cpu_training.html"  # the table as a page: Snakemake's report shows it as a table
EXERCISE2 = "s111_cpu_results.json"  # the textbook's exercise-2 shape of the CPU table
CPU_EPOCHS = f"{TABLES}/cpu_epochs.parquet"  # every timed CPU epoch, one row each (io.tidy)
CPU_EPOCHS_CSV = f"{TABLES}/cpu_epochs.csv"
CPU_ESTIMATES = f"{TABLES}/cpu_estimates.parquet"  # every CPU cell's estimates, one row each (io.tidy)
CPU_ESTIMATES_CSV = f"{TABLES}/cpu_estimates.csv"
LOAD_CONVERT_TABLE = f"{TABLES}/load_convert.json"
LOAD_CONVERT_CSV = f"{TABLES}/load_convert.csv"
GPU_TABLE = f"{TABLES}/gpu_training.json"
GPU_TABLE_CSV = f"{TABLES}/gpu_training.csv"
GPU_EPOCHS = f"{TABLES}/gpu_epochs.parquet"  # every timed GPU epoch, one row each (io.tidy)
GPU_EPOCHS_CSV = f"{TABLES}/gpu_epochs.csv"
GPU_ESTIMATES = f"{TABLES}/gpu_estimates.parquet"  # every GPU cell's estimates, one row each (io.tidy)
GPU_ESTIMATES_CSV = f"{TABLES}/gpu_estimates.csv"
TRANSFER_TABLE = f"{TABLES}/transfers.json"
TRANSFER_CSV = f"{TABLES}/transfers.csv"
RESOURCES = f"{TABLES}/resources.json"
RESOURCES_CSV = f"{TABLES}/resources.csv"
RESOURCES_PER_JOB = f"{TABLES}/resources_per_job.json"
RESOURCES_PER_JOB_CSV = f"{TABLES}/resources_per_job.csv"

# ---- environment
ENVIRONMENT = f"{ENV}/collect_env.json"
ENVIRONMENT_TXT = f"{ENV}/collect_env.txt"
DEVICE_PROBE = f"{ENV}/devices.json"

# ---- northstar: the split, one early-stopping run per device and batch size, the selection
NORTHSTAR_SPLITS = f"{NORTHSTAR}/splits.parquet"
NORTHSTAR_PREPARE = f"{NORTHSTAR}/prepare.json"
NORTHSTAR_HISTORY = f"{NORTHSTAR}/{{device}}/bs{{batch_size}}/history.json"
NORTHSTAR_MODEL = f"{NORTHSTAR}/{{device}}/bs{{batch_size}}/best_model.pt"
TENSORBOARD = f"{NORTHSTAR}/tensorboard"
TENSORBOARD_RUN = f"{TENSORBOARD}/{{device}}_bs{{batch_size}}"  # a folder: one TensorBoard run
SEED_LIMITS = f"{NORTHSTAR}/seed_limits.json"
SEED_LIMITS_TABLE = f"{TABLES}/seed_limits.json"
SEED_LIMITS_CSV = f"{TABLES}/seed_limits.csv"
TIME_TO_TARGET = f"{TABLES}/time_to_target.json"
TIME_TO_TARGET_CSV = f"{TABLES}/time_to_target.csv"
NORTHSTAR_CURVES_PNG = f"{FIGURES}/northstar_curves.png"
NORTHSTAR_CURVES_SVG = f"{FIGURES}/northstar_curves.svg"
GRADIENT_VARIANCE = f"{TABLES}/gradient_variance.json"
GRADIENT_VARIANCE_CSV = f"{TABLES}/gradient_variance.csv"
GRADIENT_VARIANCE_PNG = f"{FIGURES}/gradient_variance.png"
GRADIENT_VARIANCE_SVG = f"{FIGURES}/gradient_variance.svg"

# ---- planner: the cost model, break-even curves, FLOP check and scale scenario
COST_MODEL = f"{TABLES}/cost_model.json"
COST_MODEL_CSV = f"{TABLES}/cost_model.csv"
BREAK_EVEN = f"{TABLES}/break_even.json"
BREAK_EVEN_CSV = f"{TABLES}/break_even.csv"
BREAK_EVEN_SUMMARY = f"{TABLES}/break_even_summary.json"
BREAK_EVEN_SUMMARY_CSV = f"{TABLES}/break_even_summary.csv"
BREAK_EVEN_PNG = f"{FIGURES}/break_even.png"
BREAK_EVEN_SVG = f"{FIGURES}/break_even.svg"
FLOP_CHECK = f"{TABLES}/flop_check.json"
FLOP_CHECK_CSV = f"{TABLES}/flop_check.csv"
SCENARIO = f"{TABLES}/scenario.json"
SCENARIO_CSV = f"{TABLES}/scenario.csv"

# ---- the streaming study (scale.enabled; docs/scale.md)
SCALE_JOB = f"{TIMING}/scale/{{format}}.json"  # one format's stages at every dataset size
SCALE_STEP = f"{TIMING}/scale/step.{{device}}.json"  # the training step's own rate at the scale width
SCALE = f"{TABLES}/scale.json"
SCALE_CSV = f"{TABLES}/scale.csv"
SCALE_PNG = f"{FIGURES}/scale.png"
SCALE_SVG = f"{FIGURES}/scale.svg"

# ---- decision and report
DECISION = f"{TABLES}/decision.json"
FULL_PATH = f"{TABLES}/full_path.json"
FULL_PATH_CSV = f"{TABLES}/full_path.csv"
FULL_PATH_HTML = f"{TABLES}/full_path.html"
DATA_TABLE = f"{TABLES}/data.json"
DATA_CSV = f"{TABLES}/data.csv"
MODEL_PROFILE = f"{TABLES}/model_profile.json"  # the model counted: parameters, FLOP, activations, state
MODEL_PROFILE_CSV = f"{TABLES}/model_profile.csv"
COST = f"{TABLES}/cost.json"  # what the measured times cost at cost.per_hour
COST_CSV = f"{TABLES}/cost.csv"
THEORY = f"{TABLES}/theory.json"
THEORY_CSV = f"{TABLES}/theory.csv"
DECISION_SHEET = f"{TABLES}/decision_sheet.json"
DECISION_SHEET_CSV = f"{TABLES}/decision_sheet.csv"
DECISION_SHEET_HTML = f"{TABLES}/decision_sheet.html"
REPORT = "REPORT.md"
REPORT_HTML = "REPORT.html"  # REPORT.md as a page, its tables as HTML tables
# The landing page of Snakemake's HTML report (the Snakefile's `report:`): REPORT.md's first screen.
LANDING = "report/landing.rst"
DECISION_PNG = f"{FIGURES}/decision.png"
DECISION_SVG = f"{FIGURES}/decision.svg"


# ---- logs and benchmark files: a job's log and its `benchmark:` file share a stem
def log(stem: str) -> str:
    """Return the log of the job `stem` (a rule name, or rule/wildcards): logs/<stem>.log."""
    return f"{LOGS}/{stem}.log"


def benchmark(stem: str) -> str:
    """Return the `benchmark:` file of the job `stem`: benchmarks/<stem>.tsv."""
    return f"{BENCHMARKS}/{stem}.tsv"


def benchmark_stem(name: str) -> str:
    """Return the stem of a benchmark file (relative to the results folder): the inverse of `benchmark`."""
    stem = name.removeprefix(f"{BENCHMARKS}/").removesuffix(".tsv")
    if benchmark(stem) != name:
        raise ValueError(f"{name} is not a benchmark file ({benchmark('<stem>')})")
    return stem


# ---- archive: the configuration, provenance and the checksum manifest
CONFIG = "config.yaml"  # the effective configuration, defaults filled in
PROVENANCE = "provenance.json"
MANIFEST = "MANIFEST.sha256"
ARCHIVE_LOG = log("archive")  # written after the manifest: the archive job's own log
# Snakemake's HTML report (`--report`, profiles/lab-report), made from the listed files after the run.
SNAKEMAKE_REPORT_HTML = "snakemake-report.html"
SNAKEMAKE_REPORT_ZIP = "snakemake-report.zip"


def fill(pattern: str, **wildcards: object) -> str:
    """`pattern` with the wildcards given set, the others kept as `{name}` for Snakemake.

    Refuses a wildcard the pattern does not have, so a misspelt name fails loudly.
    """
    for name, value in wildcards.items():
        field = "{" + name + "}"
        if field not in pattern:
            raise KeyError(f"{pattern} has no wildcard {field}")
        pattern = pattern.replace(field, str(value))
    return pattern
