"""Rule planner_scenario: exercise 4's scale scenario, with the cost models' modelled epochs."""

import dataclasses

from accel_choice import records
from accel_choice.analyze import gpu_costs, planner, planner_fit
from accel_choice.io import atomic, tables
from accel_choice.io.runtime import job
from accel_choice.records.loads import DeviceProbe

p, out = snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    f = planner_fit.fit(snakemake.input, p)
    gpu_memory, gpu_memory_source = gpu_costs.gpu_memory_bytes(
        records.read(DeviceProbe, snakemake.input.probe), p.gpu_assumed, f.profile
    )
    scenario = planner.scenario_plan(
        **p.scenario,
        # The nodes that measured, not the one running this job.
        host_memory_bytes=f.host_memory_bytes,
        gpu_memory_bytes=gpu_memory,
        gpu_memory_source=gpu_memory_source,
    )
    scenario = dataclasses.replace(
        scenario, modelled=planner.scenario_predictions(scenario, f.models["cpu"], f.gpu, f.bandwidth)
    )
    atomic.write_record(out.scenario, scenario)
    tables.write_csv(out.scenario_csv, planner.scenario_rows(scenario))
    log.info("scenario: %d bytes of input, must stream: %s", scenario.input_bytes, scenario.must_stream)
