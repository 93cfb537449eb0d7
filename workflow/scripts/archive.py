"""Rule archive: provenance.json, then MANIFEST.sha256 over the files this configuration made."""

from pathlib import Path

from accel_choice.io import manifest, atomic, envinfo
from accel_choice.io.runtime import job

inp, out = snakemake.input, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    results = Path(out.manifest).parent
    made = [Path(path).relative_to(results).as_posix() for path in inp.made]
    for name in manifest.remove_stale_reports(results, made):
        log.info("removed %s: made from the files of an earlier run", name)
    record, found = manifest.seal(results, made, envinfo.workflow_commit())
    log.info(
        "manifest: %d files; its own sha256 %s (note it elsewhere to detect an edited manifest)",
        len(found.made),
        atomic.sha256_file(out.manifest),
    )
    for entry in found.foreign:
        log.warning("not made by this configuration, left out of the manifest: %s (%s)", entry.path, entry.kind)
    if record["mixed_commits"]:
        log.warning("records from more than one workflow commit: %s", record["record_commits"])
