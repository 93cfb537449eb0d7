"""Rule train_northstar: early stopping at every selection batch size on one device, each then the test set once."""

import dataclasses
import tempfile

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
    meta = records.read(NorthstarPrepare, inp.meta)
    for batch_size in p.batch_sizes:
        selection.check_batch_size_fits(meta.splits.train.rows, batch_size, str(inp.meta), "selection.batch_sizes")
    device = torch.device("cpu") if wc.device == "cpu" else devices.require(wc.device)
    if atomic.sha256_file(inp.table) != meta.table_sha256:
        raise ValueError(f"{inp.table} differs from the split prepare_northstar recorded; delete it and re-run")
    splits = northstar.load_splits(inp.table, meta)
    settings = northstar.RunSettings(**p.run)
    with tempfile.TemporaryDirectory() as scratch:  # first kernels and allocations paid before any clock
        northstar.warm_up(
            splits["train"],
            splits["val"],
            p.batch_sizes,
            seed=p.seed,
            settings=settings,
            scratch=scratch,
            device=device,
        )
    # One envelope and record per batch size, in turn: each history is its batch size's timing record.
    for batch_size, history, checkpoint, events in zip(p.batch_sizes, out.history, out.model, out.events, strict=True):
        with timing_job(history, seed=p.seed) as envelope:
            writer = SummaryWriter(events)
            run = northstar.train_with_early_stopping(
                splits["train"],
                splits["val"],
                batch_size=batch_size,
                seed=p.seed,
                settings=settings,
                checkpoint=checkpoint,
                device=device,
                log_scalar=writer.add_scalar,
            )
            model = northstar.restore_best(checkpoint, splits["train"][0].shape[1], settings.hidden, device)
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
            batch_size,
            wc.device,
            run.best_epoch,
            run.stopped_epoch,
            run.best_val_loss,
            test.log_loss,
            test.roc_auc,
        )
