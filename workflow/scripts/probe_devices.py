"""Rule probe_devices: what accelerators torch sees on the machine that runs this job."""

from accel_choice.io import atomic, envinfo
from accel_choice.measure import devices
from accel_choice.io.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    probed = devices.probe_record(
        mode=snakemake.params.mode,
        planned_fingerprint=snakemake.params.fingerprint,
        environment=envinfo.quick_environment(),
    )
    atomic.write_record(snakemake.output[0], probed)
    log.info("devices: %s", probed.fingerprint)
