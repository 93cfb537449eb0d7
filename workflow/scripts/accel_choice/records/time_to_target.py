"""Northstar time to target: when each run's validation loss first came within `within` of the best
any run reached, with its interval, and the runs this measurement cannot tell from the fastest."""

from __future__ import annotations

from typing import Any

from accel_choice.records import Count, Fraction, NonNegative, Positive, PositiveCount, record
from accel_choice.records.estimate import PositiveEstimate, flat_row


# --- results/tables/time_to_target.json -------------------------------------------------------


@record
class TargetRow:
    """One run: when its validation loss first reached the target, and its test result once."""

    device: str
    batch_size: PositiveCount
    run: str
    best_val_loss: float
    reached: bool
    epoch: PositiveCount | None  # null: the target was not reached (so for updates and seconds)
    updates: Count | None
    # Cumulative training + validation wall time up to that epoch; its interval: the run's epoch times
    # resampled, summed over `epoch` epochs.
    seconds: PositiveEstimate | None
    best_epoch: PositiveCount
    stopped_epoch: PositiveCount
    stopped_early: bool
    test_log_loss: NonNegative
    test_roc_auc: Fraction | None
    test_brier: Fraction
    test_accuracy_at_0_5: Fraction
    test_rows: PositiveCount
    test_base_rate: Fraction
    test_base_rate_log_loss: NonNegative

    def __post_init__(self) -> None:
        found = (self.epoch, self.updates, self.seconds)
        if (None in found) if self.reached else found != (None,) * 3:
            raise ValueError(f"reached is {self.reached} but epoch, updates and seconds are {found}")

    def table_row(self) -> dict[str, Any]:
        """Return one row of tables/time_to_target.csv: `seconds` as its columns (records.estimate.columns)."""
        return flat_row(self, ("seconds",))


@record(schema="time-to-target", version=3)
class TimeToTarget:
    """tables/time_to_target.json: the target (within `within` of the best validation loss any run
    reached), each run's time to it, the fastest run, and the runs not measurably slower than it."""

    best_val_loss: float
    within: Positive
    target_val_loss: float
    rows: tuple[TargetRow, ...]
    fastest: str | None  # null: no run reached the target
    fastest_set: tuple[str, ...]  # the fastest and every run whose time ratio to it has an interval holding 1
    confidence: Fraction

    def __post_init__(self) -> None:
        if self.target_val_loss < self.best_val_loss:
            raise ValueError(f"target_val_loss {self.target_val_loss} is below best_val_loss {self.best_val_loss}")
        names = [row.run for row in self.rows]
        if len(set(names)) != len(names):
            raise ValueError(f"runs {names} are not all different")
        low = [row.run for row in self.rows if row.best_val_loss < self.best_val_loss]
        if low:
            raise ValueError(f"run(s) {low} reached below best_val_loss {self.best_val_loss}")
        reached = [row for row in self.rows if row.reached]
        fastest = min(reached, key=lambda row: row.seconds.point if row.seconds else 0.0).run if reached else None
        if self.fastest != fastest:
            raise ValueError(f"fastest is {self.fastest!r} but the rows say {fastest!r}")
        if (fastest is None) != (not self.fastest_set) or (fastest is not None and fastest not in self.fastest_set):
            raise ValueError(f"fastest_set {self.fastest_set} must hold the fastest run {fastest!r}")
