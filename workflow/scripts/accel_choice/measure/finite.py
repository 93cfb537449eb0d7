"""Non-finite losses in a timing job: stop a model that never gave a finite step, keep NaN out of JSON."""

from __future__ import annotations

import math

from accel_choice.records import UserInputError
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import TrainingRecord


class NeverFinite(UserInputError):
    """Every variant of a timing job went non-finite at its first timed step: the model cannot be timed."""


def check_some_step_finite(records: list[TrainingRecord], spec: ModelSpec) -> None:
    """Stop the run at its first timing job when no variant gave one finite step: every later job would measure
    the same NaNs. A variant that diverges later (one precision, a larger step) stays a measurement the report names."""
    if records and all(not r.finite and r.nonfinite_step == 0 for r in records):
        raise NeverFinite(
            f"batch size {', '.join(map(str, sorted({r.batch_size for r in records})))}: the loss or the weights were "
            f"not finite from the first timed step in each of its {len(records)} variant(s), so nothing can be timed; check model.factory, model.lr "
            f"({spec.lr:g}) and the data, whose values the model may not take"
        )


def finite_or_none(value: float) -> float | None:
    """Return the value, or None where it is not finite (JSON has no NaN)."""
    return value if math.isfinite(value) else None
