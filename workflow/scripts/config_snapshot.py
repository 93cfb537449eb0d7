"""Rule config_snapshot: the effective configuration, defaults filled in, as results/config.yaml."""

import yaml

from accel_choice.io import atomic
from accel_choice.io.runtime import job

with job(snakemake.log[0], snakemake.threads):
    atomic.write_text(snakemake.output[0], yaml.safe_dump(snakemake.params.config, sort_keys=False))
