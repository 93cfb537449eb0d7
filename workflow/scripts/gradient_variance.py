"""Rule gradient_variance: the 1/B rule measured at the seeded initial weights on the benchmark matrix."""

from accel_choice import records
from accel_choice.io import atomic, dataio, envinfo, tables
from accel_choice.measure import gradvar, model
from accel_choice.render import northstar
from accel_choice.io.runtime import job

inp, p, out = snakemake.input, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    x, y, _ = dataio.load_benchmark_tensors(inp.data, inp.meta, inp.export)
    net = model.build_model(x.shape[1], p.hidden, p.seed)
    gradients = gradvar.per_sample_gradients(net, x, y)
    result = gradvar.variance_table(
        gradients,
        p.batch_sizes,
        p.draws,
        p.seed,
        parameter_point="seeded initial weights",
        environment=envinfo.quick_environment(p.seed),
    )
    atomic.write_record(out.json, result)
    tables.write_csv(out.csv, [records.to_json(row) for row in result.table])
    northstar.gradient_variance_figure(result, out.png, out.svg)
    for row in result.table:
        log.info("B=%d measured/predicted %s ± %s", row.batch_size, row.ratio, row.ratio_2se)
