"""Rule lab_report: Snakemake's HTML report of this run, made inside the run so the manifest lists it."""

import os
from pathlib import Path

from accel_choice.io.lab_report import make_report
from accel_choice.io.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    snakefile = Path(snakemake.scriptdir).resolve().parents[1] / "Snakefile"  # scriptdir: workflow/rules/../scripts
    said = make_report(
        snakefile, Path(os.getcwd()), dict(snakemake.config), snakemake.input.made, snakemake.output.html
    )
    log.info("snakemake --report said, at the end:\n%s", "\n".join(said.strip().splitlines()[-8:]))
    log.info("%s: %d bytes", snakemake.output.html, Path(snakemake.output.html).stat().st_size)
