# accel-choice: is a CPU enough for this training job, or does a GPU pay off?
import os
import sys
from pathlib import Path

from snakemake import __version__ as SNAKEMAKE_VERSION
from snakemake.utils import min_version, validate

min_version("9.0")

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from accel_choice.io.provenance import INVOCATION_VARIABLE, invocation_record  # noqa: E402
from accel_choice.io.config_checks import check_config, check_config_files, check_schema, normalize_config
from accel_choice.io import benchmark_data

# Provenance, not a parameter: the command the user typed reaches every job through the
# environment (setdefault: a cluster job re-parsing this file keeps its submitter's record),
# so it is recorded in results/ without ever triggering a re-run.
os.environ.setdefault(INVOCATION_VARIABLE, invocation_record(sys.argv, os.getcwd(), SNAKEMAKE_VERSION))


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


# Snakemake has read every config file (--configfile ones, then the one above where it exists) and
# kept the last of a key set twice: read each again and refuse duplicates, naming file, key and lines.
check_config_files(workflow.configfiles)
# Our check first: one line per problem, naming the key and what is allowed.
normalize_config(config)
check_schema(config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml")


validate(config, schema="workflow/schemas/config.schema.yaml")
# Your own benchmark data (data.benchmark.table or .arrays): its rows and features set from the files.
SAMPLE_SHAPE = benchmark_data.resolve(config)
check_config(config)
if config["model"]["factory"] or benchmark_data.source(config):
    # Your own model or data, checked now, before any job: a factory that does not import, raises or
    # does not fit the data and loss, or a target the loss cannot take, stops here (this runs the model's code).
    from accel_choice.measure.model_checks import check_model

    check_model(config, SAMPLE_SHAPE)


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/model.smk"
include: "workflow/rules/timing.smk"
include: "workflow/rules/gpu.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/northstar.smk"
include: "workflow/rules/planner.smk"
include: "workflow/rules/scale.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/archive.smk"


# Every file this configuration's jobs make is a target (archive.smk), not only the report:
# Snakemake remakes a missing file only when a target needs it, so a record or data file deleted
# after a run is measured or written again by the next one instead of vanishing from the archive.
rule all:
    input:
        MADE_FILES,
        results(paths.PROVENANCE),
        results(paths.MANIFEST),
