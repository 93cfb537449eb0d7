"""Northstar model selection: the prepared split, one early-stopping run per batch size (and device),
seed limits, and the measured 1/B gradient-variance rule (time to target: records.time_to_target).

Losses are log losses (natural log); times are seconds of `time.perf_counter()`. A loss that was
not finite (a run that diverged after its best epoch) is null.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field

from accel_choice.records import (
    Count,
    Fraction,
    NonNegative,
    Positive,
    PositiveCount,
    Seconds,
    Sha256,
    record,
)
from accel_choice.records.environment import Environment


def _ordered(values: list[float], what: str) -> None:
    if any(later < earlier for earlier, later in zip(values, values[1:])):
        raise ValueError(f"{what} decreases ({values}): a damaged record")


# --- results/northstar/prepare.json -----------------------------------------------------------


@record
class GeneratedSource:
    """The split was made from the generated Northstar table (data.northstar.rows, .late_rate)."""

    kind: Literal["generated"]
    matrix_sha256: Sha256


@record
class UserTableSource:
    """The split was made from the user's own table (data.northstar.table)."""

    kind: Literal["user table"]
    path: str
    sha256: Sha256


@record
class SplitRatios:
    """selection.split: the share of each class that goes to each split."""

    train: Fraction
    val: Fraction
    test: Fraction

    def __post_init__(self) -> None:
        if not math.isclose(self.train + self.val + self.test, 1.0, abs_tol=1e-9):
            raise ValueError(f"split ratios add up to {self.train + self.val + self.test}, not 1")


@record
class SplitSummary:
    """One split's rows and its share of the positive class (every split holds both classes)."""

    rows: PositiveCount
    positive_rate: Annotated[float, Field(gt=0, lt=1)]


@record
class SplitSummaries:
    train: SplitSummary
    val: SplitSummary
    test: SplitSummary


@record
class FittedStandardizer:
    """Per-feature mean and standard deviation, fitted on the training split only."""

    fitted_on: Literal["train"]
    mean: tuple[float, ...]
    std: tuple[Positive, ...]  # a constant feature keeps std 1

    def __post_init__(self) -> None:
        if len(self.mean) != len(self.std):
            raise ValueError(f"{len(self.mean)} means for {len(self.std)} standard deviations")


@record(schema="northstar-prepare", version=3)
class NorthstarPrepare:
    """northstar/prepare.json: the split of northstar/splits.parquet (its columns, seed, rows per
    split) and the train-only standardisation statistics. The split does not depend on the batch
    sizes: each training job checks that its batch size fits `splits.train.rows`."""

    feature_columns: tuple[str, ...]
    target_column: str
    split_column: str  # `split`, or `split_1`, ... when a feature is called that
    source: Annotated[GeneratedSource | UserTableSource, Field(discriminator="kind")]
    ratios: SplitRatios
    seed: Count
    splits: SplitSummaries
    standardizer: FittedStandardizer
    table_sha256: Sha256
    environment: Environment

    def __post_init__(self) -> None:
        columns = (*self.feature_columns, self.target_column, self.split_column)
        if len(set(columns)) != len(columns):
            raise ValueError(f"the feature, target and split columns {list(columns)} are not all different")
        if len(self.standardizer.mean) != len(self.feature_columns):
            raise ValueError(
                f"{len(self.standardizer.mean)} standardizer means for {len(self.feature_columns)} feature columns"
            )


# --- results/northstar/{device}/bs{B}/history.json ---------------------------------------------


@record
class EpochRow:
    """One epoch of an early-stopping run: its training pass and its validation pass."""

    epoch: PositiveCount
    train_loss: float | None  # null: not finite
    val_loss: float | None  # null: not finite (never an improvement)
    epoch_s: Seconds  # training and validation, device synchronized; the checkpoint save is outside
    cumulative_s: Seconds
    updates: Count  # optimizer steps so far
    samples_per_s: Positive
    improved: bool
    peak_memory_bytes: Count | None  # None where the device does not report it (CPU)


@record
class Metrics:
    """Classification metrics of predicted probabilities against 0/1 labels."""

    log_loss: NonNegative
    roc_auc: Fraction | None  # null: the labels hold one class, where AUC is undefined
    brier: Fraction
    accuracy_at_0_5: Fraction
    rows: PositiveCount


@record
class HeldOutResult(Metrics):
    """The test split, evaluated once with the restored best checkpoint, and the no-skill reference:
    the training split's positive rate predicted for every row."""

    base_rate: Fraction
    base_rate_log_loss: NonNegative


@record(schema="northstar-history", version=3)
class NorthstarHistory:
    """northstar/{device}/bs{B}/history.json: one early-stopping run and its single test evaluation."""

    device: str
    batch_size: PositiveCount
    history: tuple[EpochRow, ...]
    best_epoch: PositiveCount
    best_val_loss: float
    stopped_epoch: PositiveCount
    stopped_early: bool
    best_state_sha256: Sha256
    test: HeldOutResult
    test_evaluations: Literal[1]  # the test split is looked at once, after early stopping
    environment: Environment

    def __post_init__(self) -> None:
        epochs = [row.epoch for row in self.history]
        if epochs != list(range(1, self.stopped_epoch + 1)):
            raise ValueError(f"history holds epochs {epochs}, not 1 to stopped_epoch {self.stopped_epoch}")
        if self.best_epoch > self.stopped_epoch:
            raise ValueError(f"best_epoch {self.best_epoch} after stopped_epoch {self.stopped_epoch}")
        _ordered([row.cumulative_s for row in self.history], "cumulative_s")
        _ordered([row.updates for row in self.history], "updates")
        best = self.history[self.best_epoch - 1]
        if not best.improved or best.val_loss != self.best_val_loss:
            raise ValueError(
                f"best_epoch {self.best_epoch} has val_loss {best.val_loss} (improved {best.improved}), "
                f"not best_val_loss {self.best_val_loss}"
            )

    @property
    def name(self) -> str:
        """Return how the report, the tables and the figures call this run."""
        return f"{self.device} B={self.batch_size}"


# --- results/northstar/seed_limits.json and tables/seed_limits.{csv,json} ---------------------


@record
class SeedRun(Metrics):
    """One seed's run at the seed batch size: its best state and its test metrics."""

    seed: Count
    best_epoch: PositiveCount
    best_state_sha256: Sha256
    val_losses: tuple[float | None, ...]  # null: not finite


@record
class NumericCheck:
    """The first seed trained twice on one machine: the same weights and loss curves?"""

    seed: Count
    identical_weights: bool
    identical_loss_curves: bool
    state_sha256: tuple[Sha256, Sha256]  # the first run's best state, the second's

    def __post_init__(self) -> None:
        if self.identical_weights != (self.state_sha256[0] == self.state_sha256[1]):
            raise ValueError(f"identical_weights is {self.identical_weights} for state_sha256 {self.state_sha256}")


@record
class Spread:
    """A metric over the seeds: mean, sample standard deviation (ddof 1), min and max."""

    mean: float
    std: NonNegative
    min: float
    max: float

    def __post_init__(self) -> None:
        slack = 1e-12 * (abs(self.min) + abs(self.max))  # the mean of equal values may round past them
        if not self.min - slack <= self.mean <= self.max + slack:
            raise ValueError(f"min {self.min} <= mean {self.mean} <= max {self.max} does not hold: a damaged record")


@record
class StatisticalCheck:
    log_loss: Spread
    roc_auc: Spread


JsonScalar = str | int | float | bool | None


@record
class EnvironmentalCheck:
    """The environment records of the Northstar jobs compared: the keys that differ, with their values."""

    records_compared: PositiveCount
    differences: dict[str, tuple[JsonScalar | tuple[JsonScalar, ...], ...]]  # flattened key -> distinct values
    note: str


@record(schema="seed-limits")
class SeedLimits:
    """northstar/seed_limits.json: numeric, statistical and environmental reproducibility, measured
    at `batch_size` (selection.seed_batch_size) over `seeds`."""

    numeric: NumericCheck
    statistical: StatisticalCheck
    runs: tuple[SeedRun, ...]
    seeds: tuple[Count, ...]
    environmental: EnvironmentalCheck
    batch_size: PositiveCount

    def __post_init__(self) -> None:
        if tuple(run.seed for run in self.runs) != self.seeds:
            raise ValueError(f"runs of seeds {[run.seed for run in self.runs]} for seeds {list(self.seeds)}")
        if len(self.seeds) < 2:
            raise ValueError(f"{len(self.seeds)} seed(s): a spread needs at least 2")
        if self.numeric.seed != self.seeds[0] or self.numeric.state_sha256[0] != self.runs[0].best_state_sha256:
            raise ValueError("the numeric check is not of the first seed's run")


@record
class SeedTableRow:
    """A row of tables/seed_limits.{csv,json}: one test metric over the seeds, or one check."""

    check: str
    value: bool | str | None  # the numeric checks' yes/no, the environmental differences
    seeds: PositiveCount
    batch_size: PositiveCount
    mean: float | None  # the statistical rows only
    std: NonNegative | None
    min: float | None
    max: float | None


# --- results/tables/gradient_variance.json ----------------------------------------------------


@record
class VarianceRow:
    """Measured against predicted mini-batch gradient variance at one batch size."""

    batch_size: PositiveCount
    measured: NonNegative  # mean of |g_B − G|² over the draws
    measured_stderr: NonNegative
    predicted: NonNegative  # σ²/B · (N − B)/(N − 1), without replacement
    predicted_iid: NonNegative  # σ²/B, independent samples
    ratio: NonNegative | None  # measured / predicted; null where predicted is 0 (B = N: no sampling noise)
    ratio_2se: NonNegative | None  # 2 · stderr / predicted; null likewise

    def __post_init__(self) -> None:
        undefined = self.predicted == 0
        if (self.ratio is None) != undefined or (self.ratio_2se is None) != undefined:
            raise ValueError(
                f"ratio {self.ratio} and ratio_2se {self.ratio_2se} for predicted {self.predicted}: "
                "null exactly where predicted is 0"
            )
        if self.predicted > self.predicted_iid:
            raise ValueError(
                f"predicted {self.predicted} above predicted_iid {self.predicted_iid}: "
                "the finite-population factor is at most 1"
            )


@record(schema="gradient-variance", version=3)
class GradientVariance:
    """tables/gradient_variance.json: the 1/B rule measured over N rows and P parameters."""

    rows: PositiveCount  # N
    parameters: PositiveCount  # P
    sigma2: NonNegative  # mean over rows of |g_i − G|²
    draws: Annotated[int, Field(ge=2)]  # mini-batches per batch size
    table: tuple[VarianceRow, ...]
    parameter_point: str
    environment: Environment

    def __post_init__(self) -> None:
        sizes = [row.batch_size for row in self.table]
        if len(set(sizes)) != len(sizes) or any(size > self.rows for size in sizes):
            raise ValueError(f"batch sizes {sizes}: each once, none above the {self.rows} rows")
