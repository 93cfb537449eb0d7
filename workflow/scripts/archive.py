"""Rule archive: provenance.json, then MANIFEST.sha256 over every file under results/."""

from pathlib import Path

from accel_choice import archive, atomic, envinfo
from accel_choice.runtime import job

out = snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    results = Path(out.manifest).parent
    for name in archive.remove_stale_reports(results):
        log.info("removed %s: made from the files of an earlier run", name)
    record = archive.provenance(results, envinfo.workflow_commit())
    atomic.write_json(out.provenance, record)
    count = archive.write_manifest(results, exclude=archive.AFTER_THE_MANIFEST)
    log.info("manifest: %d files; its own sha256 %s (note it elsewhere to detect an edited manifest)",
             count, atomic.sha256_file(out.manifest))
    if record["mixed_commits"]:
        log.warning("records from more than one workflow commit: %s", record["record_commits"])
