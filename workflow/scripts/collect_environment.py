"""Rule collect_environment: torch's own collect_env, once per workflow."""

from accel_choice.io import atomic, envinfo
from accel_choice.io.runtime import job

with job(snakemake.log[0], snakemake.threads):  # noqa: F821 (injected by Snakemake)
    environment = envinfo.full_environment()
    atomic.write_record(snakemake.output.json, environment)  # noqa: F821
    atomic.write_text(snakemake.output.txt, environment.collect_env_pretty + "\n")  # noqa: F821
