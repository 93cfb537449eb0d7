# accel-choice: is a CPU enough for this training job, or does a GPU pay off?
# It also runs imported into another project as a Snakemake module (docs/development.md#use-it-as-a-module).
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

min_version("9.0")

# This file's own folder, not workflow.basedir (the main Snakefile's: another project's when this
# workflow is imported as a module). Its library is imported from there, so it must be on this disk.
if not isinstance(workflow.current_basedir, os.PathLike):
    raise WorkflowError(
        f"{workflow.current_basedir.get_path_or_uri(secret_free=True)}: not a local folder; import accel-choice "
        "from a local copy (git clone), see docs/development.md#use-it-as-a-module"
    )
REPO = Path(workflow.current_basedir)
sys.path.insert(0, str(REPO / "workflow" / "scripts"))
from accel_choice.io import library  # noqa: E402
from accel_choice.measure.parse_time import prepare  # noqa: E402
from accel_choice.records import UserInputError  # noqa: E402

# Every job imports this checkout's library too, not the one a venv's editable install points to:
# first on the PYTHONPATH jobs inherit, and named for their check (io/library.py).
library.expose(REPO / "workflow" / "scripts")


configfile: "config/config.yaml"


# The config checked once, one line per problem naming the key, and completed with the schema's
# defaults; your own data and model tried; the command line recorded (measure.parse_time).
try:
    SAMPLE_SHAPE = prepare(config, workflow.configfiles, REPO / "workflow" / "schemas" / "config.schema.yaml")
except UserInputError as error:  # the message names the key: no traceback through the library
    raise WorkflowError(str(error)) from None


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


# The HTML report's landing page: REPORT.md's first screen above the workflow's description, written by
# the report job (render/html.py); `snakemake --report` after a finished run. An absolute path: results/
# lies in the working directory, not beside this file.
report: os.path.abspath(results(paths.LANDING))


# Every file this configuration's jobs make is a target (archive.smk), not only the report:
# Snakemake remakes a missing file only when a target needs it, so a record or data file deleted
# after a run is measured or written again by the next one instead of vanishing from the archive.
rule all:
    input:
        MADE_FILES,
        # the jobs the timing plan adds (timing.budget_s): known once its checkpoints have run, so a dry run
        # lists every other job
        lambda wildcards: added_files(),
        results(paths.PROVENANCE),
        results(paths.MANIFEST),
