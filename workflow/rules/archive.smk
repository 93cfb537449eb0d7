# The lab report as an archive: the resource table, then provenance and the checksum manifest.


rule resource_table:
    input:
        benchmarks=expand("results/benchmarks/{job}.tsv", job=BENCHMARKED_JOBS),
        logs=expand("results/logs/{job}.log", job=BENCHMARKED_JOBS),
        code=library("resources", "runtime"),
    output:
        json="results/tables/resources.json",
        csv=report("results/tables/resources.csv", caption="../report/resources.rst", category="Resources"),
        jobs_csv=report(
            "results/tables/resources_per_job.csv", caption="../report/resources.rst", category="Resources"
        ),
        jobs_json="results/tables/resources_per_job.json",
    params:
        jobs=BENCHMARKED_JOBS,
    log:
        "results/logs/resource_table.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/resource_table.py"


# Last job of every run: hashes everything under results/ (its own log excepted: it is
# still being written), after writing provenance.json so that the manifest covers it.
rule archive:
    input:
        "results/REPORT.md",
        "results/figures/decision.png",
        "results/s111_cpu_results.json",
        "results/tables/resources.json",
        code=library("archive", "atomic"),
    output:
        provenance="results/provenance.json",
        manifest="results/MANIFEST.sha256",
    log:
        "results/logs/archive.log",
    threads: 1
    resources:
        timing_slot=OTHER_JOB,
    conda:
        ENV
    script:
        "../scripts/archive.py"
