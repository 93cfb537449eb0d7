"""Rule northstar_selection: time-to-target per device and batch size, and the learning-curve figure."""

from accel_choice.io import atomic, tables
from accel_choice.render import northstar
from accel_choice.analyze import selection
from accel_choice.io.runtime import job

out = snakemake.output  # noqa: F821 (injected by Snakemake)
with job(snakemake.log[0], snakemake.threads) as log:  # noqa: F821
    runs = [atomic.read_json(path) for path in snakemake.input.histories]  # noqa: F821
    histories = {f"{r['device']} B={r['batch_size']}": r["history"] for r in runs}
    result = selection.time_to_target(histories, snakemake.params.within)  # noqa: F821
    by_name = {f"{r['device']} B={r['batch_size']}": r for r in runs}
    rows = []
    for row in result["rows"]:
        run = by_name[row["run"]]
        rows.append({"device": run["device"], "batch_size": run["batch_size"], **row, "best_epoch": run["best_epoch"],
                     "stopped_epoch": run["stopped_epoch"], "stopped_early": run["stopped_early"],
                     **{f"test_{k}": v for k, v in run["test"].items()}})
    result["rows"] = rows
    atomic.write_json(out.json, result)
    tables.write_csv(out.csv, rows)
    northstar.learning_curves(histories, result["target_val_loss"], out.png, out.svg)
    log.info("fastest to target: %s", result["fastest"])
