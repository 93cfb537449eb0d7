# The lab report as an archive: the resource table, then provenance and the checksum manifest.
from snakemake.exceptions import WorkflowError

# Each heavy job's log and benchmark file share a stem (paths.log(stem), paths.benchmark(stem)),
# so the resource table can pair them.
BENCHMARKED_JOBS = [
    paths.benchmark_stem(in_results(path))
    for name, each in own_rules().items()
    if each.benchmark
    for path in job_files(name, kinds=("benchmark",))
]


rule resource_table:
    input:
        benchmarks=lambda wildcards: expand(results(paths.benchmark("{job}")), job=benchmarked_jobs()),
        logs=lambda wildcards: expand(results(paths.log("{job}")), job=benchmarked_jobs()),
        code=code("resource_table.py"),
    output:
        json=results(paths.RESOURCES),
        csv=report(results(paths.RESOURCES_CSV), caption="../report/resources.rst", category="Resources"),
        jobs_csv=report(results(paths.RESOURCES_PER_JOB_CSV), caption="../report/resources.rst", category="Resources"),
        jobs_json=results(paths.RESOURCES_PER_JOB),
    log:
        results(paths.log("resource_table")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    params:
        jobs=lambda wildcards: benchmarked_jobs(),
    script:
        "../scripts/resource_table.py"


# Snakemake's HTML report as a job (config lab_report; profiles/lab-report sets it), from every other job's files: so
# the manifest lists it like any other file. `snakemake --report` runs inside the job (scripts/lab_report.py).
REPORTED_FILES = [path for name in JOBS if name != "lab_report" for path in job_files(name)]


rule lab_report:
    input:
        made=lambda wildcards: REPORTED_FILES + added_files(),
        code=code("lab_report.py"),
    output:
        html=results(paths.SNAKEMAKE_REPORT_HTML),
    log:
        results(paths.log("lab_report")),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    script:
        "../scripts/lab_report.py"


# Every rule but `all` and `archive` must say what its jobs are: a rule left out of JOBS would
# have its files neither rebuilt when lost nor told apart from an earlier configuration's.
_rules_without_jobs = sorted(set(own_rules()) - set(JOBS) - {"all", "archive"})
if _rules_without_jobs:
    raise WorkflowError(f"rules missing from JOBS in workflow/rules/common.smk: {', '.join(_rules_without_jobs)}")

# Every script's rule lists its script's import closure as `code`, so that an edit re-runs it.
_stale_code = sorted(
    name
    for name, each in own_rules().items()
    if each.script and list(map(str, each.input.get("code", []))) != code(Path(each.script).name)
)
if _stale_code:
    raise WorkflowError(f"rules whose code input is not code(<their script>): {', '.join(_stale_code)}")

# What this configuration's DAG makes: every output, log and benchmark file of every job.
MADE_FILES = [path for name in JOBS for path in job_files(name)]


# Last job of every run: hashes everything under results/ (its own log excepted: it is
# still being written), after writing provenance.json so that the manifest covers it. Every
# file of the DAG is an input, so a record or data file deleted after a run is made again
# (re-measured) by the next one instead of vanishing from the archive; files in results/
# that this configuration did not make are listed as such in provenance.json, not vouched for.
rule archive:
    input:
        made=made_files,
        code=code("archive.py"),
    output:
        provenance=results(paths.PROVENANCE),
        manifest=results(paths.MANIFEST),
    log:
        results(paths.ARCHIVE_LOG),
    conda:
        ENV
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    script:
        "../scripts/archive.py"
