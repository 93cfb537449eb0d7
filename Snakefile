# accel-choice: is a CPU enough for this training job, or does a GPU pay off?
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, schema="workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/timing.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "results/REPORT.md",
        "results/figures/decision.png",
        "results/s111_cpu_results.json",
