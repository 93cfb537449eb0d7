"""Rule train_northstar: early stopping at one batch size on one device, then the test set once."""

import dataclasses

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from accel_choice import records
from accel_choice.io import atomic
from accel_choice.measure import devices, northstar
from accel_choice.measure.job import timing_job
from accel_choice.analyze import selection
from accel_choice.io.runtime import job
from accel_choice.records.northstar import HeldOutResult, NorthstarHistory, NorthstarPrepare

inp, wc, p, out = snakemake.input, snakemake.wildcards, snakemake.params, snakemake.output
with job(snakemake.log[0], snakemake.threads) as log:
    batch_size = int(wc.batch_size)
    meta = records.read(NorthstarPrepare, inp.meta)
    selection.check_batch_size_fits(meta.splits.train.rows, batch_size, str(inp.meta), "selection.batch_sizes")
    device = torch.device("cpu") if wc.device == "cpu" else devices.require(wc.device)
    if atomic.sha256_file(inp.table) != meta.table_sha256:
        raise ValueError(f"{inp.table} differs from the split prepare_northstar recorded; delete it and re-run")
    splits = northstar.load_splits(inp.table, meta)
    # A timing job: its epochs' times are the history's (time-to-target); the history is its record.
    with timing_job(out.history, seed=p.seed) as envelope:
        writer = SummaryWriter(out.events)
        settings = northstar.RunSettings(**p.run)
        run = northstar.train_with_early_stopping(
            splits["train"],
            splits["val"],
            batch_size=batch_size,
            seed=p.seed,
            settings=settings,
            checkpoint=out.model,
            device=device,
            log_scalar=writer.add_scalar,
        )
        model = northstar.restore_best(out.model, splits["train"][0].shape[1], settings.hidden, device)
        metrics = northstar.HeldOutTestSet(*splits["test"]).evaluate(model)
        # The no-skill reference: predict the training split's late rate for every test order.
        y_test = splits["test"][1].numpy()
        test = HeldOutResult(
            **{field.name: getattr(metrics, field.name) for field in dataclasses.fields(metrics)},
            base_rate=float(y_test.mean()),
            base_rate_log_loss=selection.log_loss(y_test, np.full_like(y_test, float(splits["train"][1].mean()))),
        )
        for name, value in records.to_json(test).items():
            if value is not None:
                writer.add_scalar(f"test/{name}", value, run.best_epoch or 0)
        writer.close()
        envelope.finish(
            NorthstarHistory,
            device=wc.device,
            batch_size=batch_size,
            history=tuple(run.history),
            best_epoch=run.best_epoch,
            best_val_loss=run.best_val_loss,
            stopped_epoch=run.stopped_epoch,
            stopped_early=run.stopped_early,
            best_state_sha256=run.best_state_sha256,
            test=test,
            test_evaluations=1,
        )
    log.info(
        "B=%s %s: best epoch %s of %s, val %.4f, test log loss %.4f AUC %s",
        wc.batch_size,
        wc.device,
        run.best_epoch,
        run.stopped_epoch,
        run.best_val_loss,
        test.log_loss,
        test.roc_auc,
    )
