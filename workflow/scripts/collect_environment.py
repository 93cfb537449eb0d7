"""Rule collect_environment: torch's own collect_env, once per workflow."""

from accel_choice.io import atomic, envinfo
from accel_choice.io.runtime import job

with job(snakemake.log[0], snakemake.threads):
    environment = envinfo.full_environment()
    atomic.write_record(snakemake.output.json, environment)
    atomic.write_text(snakemake.output.txt, environment.collect_env_pretty + "\n")
