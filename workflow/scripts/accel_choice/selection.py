"""Model selection on the Northstar table (section 28.3.2): split, standardise, early stopping,
a test set evaluated exactly once, and the time each batch size needs to reach a target.

The validation set chooses the model; the test set is touched only after early stopping
has restored the best checkpoint, once - `HeldOutTestSet` refuses a second look.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from . import atomic
from .devices import peak_memory_bytes, reset_peak_memory, synchronize
from .loaders import make_loader
from .model import build_model, make_optimizer, state_sha256

SPLITS = ("train", "val", "test")


def stratified_split(target: np.ndarray, ratios: dict[str, float], seed: int) -> np.ndarray:
    """A split label per row; each class is shuffled and cut by `ratios`, so every split keeps
    the class balance. Same target and seed, same labels."""
    total = sum(ratios[name] for name in SPLITS)
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise ValueError(f"split ratios must add up to 1, got {total}")
    rng = np.random.default_rng(seed)
    labels = np.empty(len(target), dtype=object)
    for value in np.unique(target):
        rows = rng.permutation(np.flatnonzero(target == value))
        n_train = round(ratios["train"] * len(rows))
        n_val = round(ratios["val"] * len(rows))
        labels[rows[:n_train]] = "train"
        labels[rows[n_train : n_train + n_val]] = "val"
        labels[rows[n_train + n_val :]] = "test"
    return labels.astype(str)


def split_column_name(columns: Sequence[str]) -> str:
    """The name of the split-label column beside `columns`: `split`, or `split_1`, `split_2`, ...
    when a feature or the target is already called that."""
    taken = set(columns)
    name, number = "split", 0
    while name in taken:
        number += 1
        name = f"split_{number}"
    return name


def check_split_classes(target: np.ndarray, labels: np.ndarray, source: str) -> None:
    """Every split needs both classes: validation loss, early stopping and the test AUC mean
    nothing on one class. Raises naming the split, its rows and its class counts."""
    problems = []
    for name in SPLITS:
        rows = target[labels == name]
        negatives, positives = int((rows == 0).sum()), int((rows == 1).sum())
        if negatives == 0 or positives == 0:
            problems.append(f"the {name} split has {len(rows)} rows: {negatives} of class 0, {positives} of class 1")
    if problems:
        raise ValueError(f"{source}: {'; '.join(problems)}. Every split needs both classes: use a table with more rows "
                         "of the rarer class, or other selection.split ratios (a larger share for that split)")


@dataclass(frozen=True)
class Standardizer:
    """Per-feature mean and standard deviation, fitted on the training split only."""

    mean: tuple[float, ...]
    std: tuple[float, ...]

    @classmethod
    def fit(cls, x_train: np.ndarray) -> Standardizer:
        mean = x_train.mean(axis=0, dtype=np.float64)
        std = x_train.std(axis=0, dtype=np.float64)
        std[std == 0] = 1.0  # a constant feature stays constant instead of dividing by zero
        return cls(tuple(map(float, mean)), tuple(map(float, std)))

    def transform(self, x: np.ndarray) -> np.ndarray:
        return ((x - np.asarray(self.mean)) / np.asarray(self.std)).astype(np.float32)


@dataclass
class EarlyStopping:
    """The specification's rule: stop after `patience` epochs without an improvement larger than `min_delta`."""

    patience: int
    min_delta: float
    best: float = math.inf
    best_epoch: int | None = None
    epochs_without_improvement: int = 0

    def __post_init__(self) -> None:
        if self.patience < 0 or self.min_delta < 0:
            raise ValueError(f"patience and min_delta must be >= 0, got {self.patience}, {self.min_delta}")

    def update(self, epoch: int, val_loss: float) -> tuple[bool, bool]:
        """(improved, stop) after this epoch's validation loss."""
        if val_loss < self.best - self.min_delta:
            self.best, self.best_epoch, self.epochs_without_improvement = val_loss, epoch, 0
            return True, False
        self.epochs_without_improvement += 1
        return False, self.epochs_without_improvement >= self.patience


def log_loss(y: np.ndarray, p: np.ndarray, eps: float = 1e-7) -> float:
    p = np.clip(p, eps, 1 - eps)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def roc_auc(y: np.ndarray, score: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    positives, negatives = int((y == 1).sum()), int((y == 0).sum())
    if positives == 0 or negatives == 0:
        return math.nan
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    sorted_scores = score[order]
    start = 0
    while start < len(score):  # average ranks over ties
        end = start
        while end + 1 < len(score) and sorted_scores[end + 1] == sorted_scores[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return float((ranks[y == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def classification_metrics(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    return {
        "log_loss": log_loss(y, p),
        "roc_auc": roc_auc(y, p),
        "brier": float(np.mean((p - y) ** 2)),
        "accuracy_at_0_5": float(np.mean((p >= 0.5) == (y == 1))),
        "rows": int(len(y)),
    }


class HeldOutTestSet:
    """The test split, which may be evaluated once: a second evaluation is a selection leak."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        self._x, self._y, self.evaluations = x, y, 0

    def evaluate(self, model: nn.Module) -> dict[str, float]:
        if self.evaluations:
            raise RuntimeError("the test set was already evaluated; evaluating it again would let it steer model choice")
        self.evaluations += 1
        model.eval()
        with torch.no_grad():
            p = torch.sigmoid(model(self._x.to(next(model.parameters()).device))).float().cpu().numpy().ravel()
        return classification_metrics(self._y.cpu().numpy().ravel(), p)


@dataclass
class TrainingRun:
    history: list[dict[str, Any]] = field(default_factory=list)
    best_epoch: int | None = None
    best_val_loss: float = math.inf
    stopped_epoch: int = 0
    stopped_early: bool = False
    best_state_sha256: str | None = None


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
    hidden: int,
    lr: float,
    patience: int,
    min_delta: float,
    max_epochs: int,
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
    model = build_model(x_train.shape[1], hidden, seed).to(device)
    optimizer = make_optimizer(model, lr)
    loss_fn = nn.BCEWithLogitsLoss()
    batches = make_loader("fastpath", x_train, y_train, batch_size, True, seed)
    stopper = EarlyStopping(patience, min_delta)
    run = TrainingRun()
    cumulative = 0.0
    updates = 0
    reset_peak_memory(device)
    for epoch in range(1, max_epochs + 1):
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
        row = {
            "epoch": epoch,
            "train_loss": float(loss_sum) / x_train.shape[0],
            "val_loss": val_loss,
            "epoch_s": epoch_s,
            "cumulative_s": cumulative,
            "updates": updates,
            "samples_per_s": x_train.shape[0] / epoch_s,
            "improved": improved,
            "peak_memory_bytes": peak_memory_bytes(device),
        }
        run.history.append(row)
        if log_scalar is not None:
            for name, key in (("loss/train", "train_loss"), ("loss/val", "val_loss"), ("time/epoch_s", "epoch_s"),
                              ("throughput/samples_per_s", "samples_per_s"), ("memory/peak_bytes", "peak_memory_bytes")):
                if row[key] is not None:
                    log_scalar(name, row[key], epoch)
        if improved:
            with atomic.atomic_path(checkpoint) as tmp:
                torch.save(model.state_dict(), tmp)
            run.best_epoch, run.best_val_loss, run.best_state_sha256 = epoch, val_loss, state_sha256(model)
        run.stopped_epoch = epoch
        if stop:
            run.stopped_early = True
            break
    return run


def restore_best(checkpoint: str | os.PathLike[str], features: int, hidden: int, device: torch.device) -> nn.Module:
    """The saved best state in a fresh model, loaded with weights_only=True (no pickled code runs)."""
    model = build_model(features, hidden, seed=0).to(device)
    model.load_state_dict(torch.load(checkpoint, map_location=device, weights_only=True))
    return model


def time_to_target(histories: dict[Any, Sequence[dict[str, Any]]], within: float) -> dict[str, Any]:
    """Per run, the first epoch whose validation loss is within `within` (relative) of the best
    validation loss any run reached, with the wall time and updates it took to get there."""
    best = min(row["val_loss"] for history in histories.values() for row in history)
    target = best * (1 + within) if best >= 0 else best * (1 - within)
    rows = []
    for key, history in histories.items():
        hit = next((row for row in history if row["val_loss"] <= target), None)
        rows.append(
            {
                "run": key,
                "best_val_loss": min(row["val_loss"] for row in history),
                "reached": hit is not None,
                "epoch": hit["epoch"] if hit else None,
                "updates": hit["updates"] if hit else None,
                "seconds": hit["cumulative_s"] if hit else None,
            }
        )
    reached = [r for r in rows if r["reached"]]
    fastest = min(reached, key=lambda r: r["seconds"])["run"] if reached else None
    return {"best_val_loss": best, "within": within, "target_val_loss": target, "rows": rows, "fastest": fastest}


def _train_and_test(
    splits: dict[str, tuple[torch.Tensor, torch.Tensor]], seed: int, checkpoint: str | os.PathLike[str], hidden: int,
    device: torch.device, **training: Any,
) -> tuple[TrainingRun, dict[str, float]]:
    run = train_with_early_stopping(splits["train"], splits["val"], seed=seed, hidden=hidden, checkpoint=checkpoint,
                                    device=device, **training)
    model = restore_best(checkpoint, splits["train"][0].shape[1], hidden, device)
    return run, HeldOutTestSet(*splits["test"]).evaluate(model)


def seed_limits(
    splits: dict[str, tuple[torch.Tensor, torch.Tensor]],
    seeds: Sequence[int],
    workdir: str | os.PathLike[str],
    *,
    hidden: int,
    device: torch.device = torch.device("cpu"),
    **training: Any,
) -> dict[str, Any]:
    """Numeric reproducibility (the first seed twice: identical weights and curves?) and
    statistical reproducibility (the spread of test log loss and AUC over `seeds`)."""
    runs = []
    for index, seed in enumerate(seeds):
        run, metrics = _train_and_test(splits, seed, Path(workdir) / f"seed{index}.pt", hidden, device, **training)
        runs.append({"seed": seed, "best_epoch": run.best_epoch, "best_state_sha256": run.best_state_sha256,
                     "val_losses": [row["val_loss"] for row in run.history], **metrics})
    again, _ = _train_and_test(splits, seeds[0], Path(workdir) / "repeat.pt", hidden, device, **training)
    first = runs[0]
    numeric = {
        "seed": seeds[0],
        "identical_weights": again.best_state_sha256 == first["best_state_sha256"],
        "identical_loss_curves": [row["val_loss"] for row in again.history] == first["val_losses"],
        "state_sha256": [first["best_state_sha256"], again.best_state_sha256],
    }
    statistical = {}
    for metric in ("log_loss", "roc_auc"):
        values = np.array([r[metric] for r in runs])
        statistical[metric] = {"mean": float(values.mean()), "std": float(values.std(ddof=1)),
                               "min": float(values.min()), "max": float(values.max())}
    return {"numeric": numeric, "statistical": statistical, "runs": runs, "seeds": list(seeds)}


def split_table(x: np.ndarray, y: np.ndarray, labels: np.ndarray, standardizer: Standardizer) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Standardised feature and target tensors per split, the standardiser fitted on train."""
    return {
        name: (torch.from_numpy(standardizer.transform(x[labels == name])), torch.from_numpy(y[labels == name].astype(np.float32)))
        for name in SPLITS
    }


def load_splits(table_path: str | os.PathLike[str], meta: dict[str, Any]) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Read the split table written by prepare_northstar, standardised with the train-only statistics."""
    import pyarrow.parquet as pq

    frame = pq.read_table(table_path).to_pandas()
    x = frame[meta["feature_columns"]].to_numpy(dtype=np.float32)
    y = frame[meta["target_column"]].to_numpy(dtype=np.float32)
    standardizer = Standardizer(tuple(meta["standardizer"]["mean"]), tuple(meta["standardizer"]["std"]))
    return split_table(x, y, frame[meta["split_column"]].to_numpy(dtype=str), standardizer)
