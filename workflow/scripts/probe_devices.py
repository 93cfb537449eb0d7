"""Rule probe_devices: what accelerators torch sees on the machine that runs this job."""

from accel_choice.io import atomic, envinfo
from accel_choice.measure import devices
from accel_choice.io.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821 (injected by Snakemake)
    probed = devices.probe_record(
        mode=snakemake.params.mode,  # noqa: F821
        planned_fingerprint=snakemake.params.fingerprint,  # noqa: F821
        environment=envinfo.quick_environment(),
    )
    atomic.write_record(snakemake.output[0], probed)  # noqa: F821
    log.info("devices: %s", probed.fingerprint)
