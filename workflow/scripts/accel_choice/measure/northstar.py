"""Northstar model selection, the measured side: training with early stopping (epoch times on the
job's device), the best checkpoint restored, the test set evaluated exactly once, seed limits.

The validation set chooses the model; the test set is touched only after early stopping has
restored the best checkpoint, once - `HeldOutTestSet` refuses a second look.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from accel_choice.analyze.selection import (
    SPLITS,
    EarlyStopping,
    Standardizer,
    classification_metrics,
    environmental_check,
    finite,
    spread,
)
from accel_choice.io import atomic
from accel_choice.measure.devices import peak_memory_bytes, reset_peak_memory, synchronize
from accel_choice.measure.loaders import make_loader
from accel_choice.measure.model import build_model, make_optimizer, state_sha256
from accel_choice.records.environment import Environment
from accel_choice.records.northstar import (
    EpochRow,
    Metrics,
    NorthstarPrepare,
    NumericCheck,
    SeedLimits,
    SeedRun,
    StatisticalCheck,
)


class HeldOutTestSet:
    """The test split, which may be evaluated once: a second evaluation is a selection leak."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        self._x, self._y, self.evaluations = x, y, 0

    def evaluate(self, model: nn.Module) -> Metrics:
        if self.evaluations:
            raise RuntimeError(
                "the test set was already evaluated; evaluating it again would let it steer model choice"
            )
        self.evaluations += 1
        model.eval()
        with torch.no_grad():
            p = torch.sigmoid(model(self._x.to(next(model.parameters()).device))).float().cpu().numpy().ravel()
        return classification_metrics(self._y.cpu().numpy().ravel(), p)


@dataclass
class TrainingRun:
    history: list[EpochRow] = field(default_factory=list)
    best_epoch: int | None = None
    best_val_loss: float = math.inf
    stopped_epoch: int = 0
    stopped_early: bool = False
    best_state_sha256: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """How every Northstar run trains: the model width, Adam's learning rate and the early stopping.
    The selection runs and the seed-limits runs share it (one `run` param of both rules)."""

    hidden: int
    lr: float
    patience: int  # epochs without an improvement larger than min_delta before stopping
    min_delta: float
    max_epochs: int


def _val_loss(model: nn.Module, loss_fn: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float(loss_fn(model(x), y))


def train_with_early_stopping(
    train: tuple[torch.Tensor, torch.Tensor],
    val: tuple[torch.Tensor, torch.Tensor],
    *,
    batch_size: int,
    seed: int,
    settings: RunSettings,
    checkpoint: str | os.PathLike[str],
    device: torch.device = torch.device("cpu"),
    log_scalar: Callable[[str, float, int], None] | None = None,
) -> TrainingRun:
    """Train until validation loss stops improving; the best state is saved to `checkpoint`.

    Each epoch's `epoch_s` is the wall time of its training pass and its validation pass
    (device synchronized); saving the checkpoint is outside the clock.
    """
    x_train, y_train = (t.to(device) for t in train)
    x_val, y_val = (t.to(device) for t in val)
    y_train, y_val = y_train.reshape(-1, 1), y_val.reshape(-1, 1)
    model = build_model(x_train.shape[1], settings.hidden, seed).to(device)
    optimizer = make_optimizer(model, settings.lr, device)
    loss_fn = nn.BCEWithLogitsLoss()
    batches = make_loader("fastpath", x_train, y_train, batch_size, True, seed)
    stopper = EarlyStopping(settings.patience, settings.min_delta)
    run = TrainingRun()
    cumulative = 0.0
    updates = 0
    reset_peak_memory(device)
    for epoch in range(1, settings.max_epochs + 1):
        model.train()
        synchronize(device)
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        for xb, yb in batches:
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach() * xb.shape[0]
            updates += 1
        val_loss = _val_loss(model, loss_fn, x_val, y_val)
        synchronize(device)
        epoch_s = time.perf_counter() - t0
        cumulative += epoch_s
        improved, stop = stopper.update(epoch, val_loss)
        row = EpochRow(
            epoch=epoch,
            train_loss=finite(float(loss_sum) / x_train.shape[0]),
            val_loss=finite(val_loss),
            epoch_s=epoch_s,
            cumulative_s=cumulative,
            updates=updates,
            samples_per_s=x_train.shape[0] / epoch_s,
            improved=improved,
            peak_memory_bytes=peak_memory_bytes(device),
        )
        run.history.append(row)
        if log_scalar is not None:
            for name, key in (
                ("loss/train", "train_loss"),
                ("loss/val", "val_loss"),
                ("time/epoch_s", "epoch_s"),
                ("throughput/samples_per_s", "samples_per_s"),
                ("memory/peak_bytes", "peak_memory_bytes"),
            ):
                if getattr(row, key) is not None:
                    log_scalar(name, getattr(row, key), epoch)
        if improved:
            with atomic.atomic_path(checkpoint) as tmp:
                torch.save(model.state_dict(), tmp)
            run.best_epoch, run.best_val_loss, run.best_state_sha256 = epoch, val_loss, state_sha256(model)
        run.stopped_epoch = epoch
        if stop:
            run.stopped_early = True
            break
    return run


def warm_up(
    train: tuple[torch.Tensor, torch.Tensor],
    val: tuple[torch.Tensor, torch.Tensor],
    batch_sizes: Sequence[int],
    *,
    seed: int,
    settings: RunSettings,
    scratch: str | os.PathLike[str],
    device: torch.device = torch.device("cpu"),
) -> None:
    """Train one untimed epoch at each batch size, its checkpoint written under `scratch`.

    One job trains every batch size in turn. Without this, the first batch size's first epoch alone would
    carry the process's first kernels, allocations and checkpoint write. With it, no timed epoch carries
    them: time-to-target leaves first-call costs out for every batch size alike (since 4c041da)."""
    once = dataclasses.replace(settings, max_epochs=1)
    for batch_size in batch_sizes:
        checkpoint = Path(scratch) / f"warm_up_bs{batch_size}.pt"
        train_with_early_stopping(
            train, val, batch_size=batch_size, seed=seed, settings=once, checkpoint=checkpoint, device=device
        )


def restore_best(checkpoint: str | os.PathLike[str], features: int, hidden: int, device: torch.device) -> nn.Module:
    """Load the saved best state into a fresh model with weights_only=True (no pickled code runs)."""
    model = build_model(features, hidden, seed=0).to(device)
    model.load_state_dict(torch.load(checkpoint, map_location=device, weights_only=True))
    return model


def _train_and_test(
    splits: dict[str, tuple[torch.Tensor, torch.Tensor]],
    seed: int,
    checkpoint: str | os.PathLike[str],
    batch_size: int,
    settings: RunSettings,
    device: torch.device,
) -> tuple[TrainingRun, Metrics]:
    run = train_with_early_stopping(
        splits["train"],
        splits["val"],
        batch_size=batch_size,
        seed=seed,
        settings=settings,
        checkpoint=checkpoint,
        device=device,
    )
    model = restore_best(checkpoint, splits["train"][0].shape[1], settings.hidden, device)
    return run, HeldOutTestSet(*splits["test"]).evaluate(model)


def seed_limits(
    splits: dict[str, tuple[torch.Tensor, torch.Tensor]],
    seeds: Sequence[int],
    workdir: str | os.PathLike[str],
    *,
    batch_size: int,
    settings: RunSettings,
    environments: Sequence[Environment],
    device: torch.device = torch.device("cpu"),
) -> SeedLimits:
    """Measure numeric, statistical and environmental reproducibility.

    Numeric reproducibility (the first seed twice: identical weights and curves?),
    statistical reproducibility (the spread of test log loss and AUC over `seeds`) and
    environmental reproducibility (which keys of `environments` differ)."""
    runs = []
    for index, seed in enumerate(seeds):
        run, metrics = _train_and_test(splits, seed, Path(workdir) / f"seed{index}.pt", batch_size, settings, device)
        runs.append(
            SeedRun(
                seed=seed,
                best_epoch=run.best_epoch,
                best_state_sha256=run.best_state_sha256,
                val_losses=tuple(row.val_loss for row in run.history),
                **{f.name: getattr(metrics, f.name) for f in dataclasses.fields(metrics)},
            )
        )
    again, _ = _train_and_test(splits, seeds[0], Path(workdir) / "repeat.pt", batch_size, settings, device)
    first = runs[0]
    numeric = NumericCheck(
        seed=seeds[0],
        identical_weights=again.best_state_sha256 == first.best_state_sha256,
        identical_loss_curves=tuple(row.val_loss for row in again.history) == first.val_losses,
        state_sha256=(first.best_state_sha256, again.best_state_sha256),
    )
    statistical = StatisticalCheck(
        log_loss=spread([r.log_loss for r in runs], "test log_loss over the seeds"),
        roc_auc=spread([r.roc_auc for r in runs], "test roc_auc over the seeds"),
    )
    return SeedLimits(
        numeric=numeric,
        statistical=statistical,
        runs=tuple(runs),
        seeds=tuple(seeds),
        environmental=environmental_check(environments),
        batch_size=batch_size,
    )


def split_table(
    x: np.ndarray, y: np.ndarray, labels: np.ndarray, standardizer: Standardizer
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Standardised feature and target tensors per split, the standardiser fitted on train."""
    return {
        name: (
            torch.from_numpy(standardizer.transform(x[labels == name])),
            torch.from_numpy(y[labels == name].astype(np.float32)),
        )
        for name in SPLITS
    }


def load_splits(
    table_path: str | os.PathLike[str], meta: NorthstarPrepare
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Read the split table written by prepare_northstar, standardised with the train-only statistics.

    Without pandas (io.dataio): its import was about 0.5 s of the job's start. The file is read once.
    pyarrow is imported here, not with the module: the measure path imports no pyarrow (docs/gpu.md)."""
    from accel_choice.io.dataio import read_parquet_columns, table_matrix

    numbers = [*meta.feature_columns, meta.target_column]
    table = read_parquet_columns(table_path, [*numbers, meta.split_column])
    matrix = table_matrix(table, numbers)
    labels = np.array(table.column(meta.split_column).to_pylist(), dtype=str)
    standardizer = Standardizer(meta.standardizer.mean, meta.standardizer.std)
    return split_table(matrix[:, :-1], matrix[:, -1], labels, standardizer)
