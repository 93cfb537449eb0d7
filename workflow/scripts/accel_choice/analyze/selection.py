"""Model selection on the Northstar table (section 28.3.2), the analysis side: the stratified split,
train-only standardisation, the early-stopping rule, classification metrics, the time each
batch size needs to reach a target and the seed-limits summary. The training itself is
measure/northstar.py; the records are records/northstar.py.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from accel_choice import records
from accel_choice.io import envinfo
from accel_choice.analyze.bootstrap import estimate_from
from accel_choice.analyze.job_intervals import outcome
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records import UserInputError
from accel_choice.records.environment import Environment
from accel_choice.records.northstar import (
    EnvironmentalCheck,
    Metrics,
    NorthstarHistory,
    SeedLimits,
    SeedTableRow,
    Spread,
)
from accel_choice.records.estimate import positive
from accel_choice.records.time_to_target import TargetRow, TimeToTarget

SPLITS = ("train", "val", "test")


def stratified_split(target: np.ndarray, ratios: dict[str, float], seed: int) -> np.ndarray:
    """Return a stratified split label per row.

    A split label per row; each class is shuffled and cut by `ratios`, so every split keeps
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
    """Return the name of the split-label column beside `columns`.

    The name of the split-label column beside `columns`: `split`, or `split_1`, `split_2`, ...
    when a feature or the target is already called that."""
    taken = set(columns)
    name, number = "split", 0
    while name in taken:
        number += 1
        name = f"split_{number}"
    return name


def check_split_classes(target: np.ndarray, labels: np.ndarray, source: str) -> None:
    """Check that every split has both classes.

    Every split needs both classes: validation loss, early stopping and the test AUC mean
    nothing on one class. Raises naming the split, its rows and its class counts."""
    problems = []
    for name in SPLITS:
        rows = target[labels == name]
        negatives, positives = int((rows == 0).sum()), int((rows == 1).sum())
        if negatives == 0 or positives == 0:
            problems.append(f"the {name} split has {len(rows)} rows: {negatives} of class 0, {positives} of class 1")
    if problems:
        raise UserInputError(
            f"{source}: {'; '.join(problems)}. Every split needs both classes: use a table with more rows "
            "of the rarer class, or other selection.split ratios (a larger share for that split)"
        )


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


def classification_metrics(y: np.ndarray, p: np.ndarray) -> Metrics:
    auc = roc_auc(y, p)
    return Metrics(
        log_loss=log_loss(y, p),
        roc_auc=None if math.isnan(auc) else auc,
        brier=float(np.mean((p - y) ** 2)),
        accuracy_at_0_5=float(np.mean((p >= 0.5) == (y == 1))),
        rows=int(len(y)),
    )


def finite(value: float) -> float | None:
    """`value`, or None when it is NaN or infinite (JSON holds neither: the records write null)."""
    return value if math.isfinite(value) else None


def check_batch_size_fits(train_rows: int, batch_size: int, source: str, key: str) -> None:
    """Check that the batch size fits in the training split.

    A batch size larger than the training split would make every epoch one short batch: refused,
    naming the split's rows, the batch size and the config key it came from."""
    if train_rows < batch_size:
        raise UserInputError(
            f"{source}: the training split has {train_rows} rows, fewer than the batch size {batch_size} "
            f"({key}); use batch sizes of at most {train_rows} in {key}, or more training rows (a larger "
            "table: data.northstar.rows or data.northstar.table; or a larger selection.split.train)"
        )


TARGET_METHOD = "percentile bootstrap: the run's epoch times, summed"  # one run: jobs 1


def target_seconds_draws(history: NorthstarHistory, epochs: int, resamples: int, seed: int) -> np.ndarray:
    """Draw bootstrap samples of the time to reach epoch `epochs`.

    Bootstrap draws of the time to reach epoch `epochs`: that many of the run's epoch times,
    drawn with replacement from all its epochs, summed. One run per batch size: the interval holds
    the run's own epoch-to-epoch spread, not the drift between runs, and says no more."""
    times = np.array([row.epoch_s for row in history.history])
    rng = np.random.default_rng(seed)
    return rng.choice(times, size=(resamples, epochs)).sum(axis=1)


def time_to_target(
    histories: Sequence[NorthstarHistory], within: float, rules: NoiseRules = NoiseRules()
) -> TimeToTarget:
    """Return, per run, the first epoch whose validation loss is near the best.

    Per run, the first epoch whose validation loss is within `within` (relative) of the best
    validation loss any run reached, with the wall time (and its interval) and updates it took to
    get there; each row also carries the run's early stopping and its one test evaluation. The
    fastest set: the fastest run and every run whose time ratio to it has an interval holding 1."""
    best = min(row.val_loss for history in histories for row in history.history if row.val_loss is not None)
    target = best * (1 + within) if best >= 0 else best * (1 - within)
    rows, draws = [], {}
    for index, history in enumerate(histories):
        hit = next((row for row in history.history if row.val_loss is not None and row.val_loss <= target), None)
        seconds = None
        if hit:
            draws[history.name] = target_seconds_draws(history, hit.epoch, rules.bootstrap_resamples, index)
            drawn = estimate_from(hit.cumulative_s, draws[history.name], rules.confidence, 1, TARGET_METHOD)
            seconds = positive(drawn)
        test = {f"test_{field.name}": getattr(history.test, field.name) for field in dataclasses.fields(history.test)}
        rows.append(
            TargetRow(
                device=history.device,
                batch_size=history.batch_size,
                run=history.name,
                best_val_loss=min(row.val_loss for row in history.history if row.val_loss is not None),
                reached=hit is not None,
                epoch=hit.epoch if hit else None,
                updates=hit.updates if hit else None,
                seconds=seconds,
                best_epoch=history.best_epoch,
                stopped_epoch=history.stopped_epoch,
                stopped_early=history.stopped_early,
                **test,
            )
        )
    reached = [row for row in rows if row.reached]
    fastest = min(reached, key=lambda row: row.seconds.point if row.seconds else 0.0).run if reached else None
    tied = []
    best_seconds = min((row.seconds.point for row in reached if row.seconds), default=None)
    for row in reached:
        point = row.seconds.point / best_seconds  # type: ignore[operator,union-attr]
        ratio = estimate_from(point, draws[row.run] / draws[fastest], rules.confidence, 1)  # type: ignore[index]
        if row.run == fastest or outcome(ratio) == "no_difference":
            tied.append(row.run)
    return TimeToTarget(
        best_val_loss=best,
        within=within,
        target_val_loss=target,
        rows=tuple(rows),
        fastest=fastest,
        fastest_set=tuple(tied),
        confidence=rules.confidence,
    )


def spread(values: Sequence[float | None], what: str) -> Spread:
    """Mean, sample standard deviation, min and max of `values` (at least two, all finite)."""
    if len(values) < 2 or any(value is None for value in values):
        raise ValueError(f"{what}: a spread needs at least two finite values, got {list(values)}")
    array = np.array(values, dtype=np.float64)
    return Spread(
        mean=float(array.mean()), std=float(array.std(ddof=1)), min=float(array.min()), max=float(array.max())
    )


ENVIRONMENT_NOTE = (
    "environment records of every Northstar training job and of this job; only the same records "
    "(versions, hardware, threads) promise the same numbers"
)


# Which library modules a job loaded depends on its script, not on its environment: left out of the check.
PER_SCRIPT = ("workflow.library.files", "workflow.library.sha256")


def environmental_check(environments: Sequence[Environment]) -> EnvironmentalCheck:
    """Compare the environment records: which (flattened) keys differ, with the distinct values."""
    differences = envinfo.differences([records.to_json(environment) for environment in environments])
    return EnvironmentalCheck(
        records_compared=len(environments),
        differences={key: tuple(values) for key, values in differences.items() if key not in PER_SCRIPT},
        note=ENVIRONMENT_NOTE,
    )


def seed_table(result: SeedLimits) -> list[SeedTableRow]:
    """Return the seed-limits summary as rows: one per test metric over the seeds, plus the checks."""
    numeric, env = result.numeric, result.environmental

    def row(check: str, value: bool | str | None = None, summary: Spread | None = None) -> SeedTableRow:
        shown = (
            {"mean": None, "std": None, "min": None, "max": None}
            if summary is None
            else {"mean": summary.mean, "std": summary.std, "min": summary.min, "max": summary.max}
        )
        return SeedTableRow(check=check, value=value, seeds=len(result.seeds), batch_size=result.batch_size, **shown)

    rows = [
        row(f"statistical: test {field.name}", summary=getattr(result.statistical, field.name))
        for field in dataclasses.fields(result.statistical)
    ]
    rows.append(row(f"numeric: seed {numeric.seed} twice, identical weights", numeric.identical_weights))
    rows.append(row(f"numeric: seed {numeric.seed} twice, identical loss curves", numeric.identical_loss_curves))
    rows.append(
        row(f"environmental: keys differing over {env.records_compared} records", "; ".join(env.differences) or "none")
    )
    return rows
