"""What the loss can take, checked without pandas or pyarrow: the measure path (measure.model) imports
this, so a GPU machine with torch and numpy alone can time (docs/gpu.md). io.benchmark_data reads
the user's files and uses the same checks.
"""

from __future__ import annotations


import numpy as np

from accel_choice.records import UserInputError


class DataError(UserInputError):
    """Your benchmark data cannot be used as it is; the message names the key and what was found."""


def check_target_values(
    y: np.ndarray, loss: str, classes: int | None, where: str = "the benchmark data's target"
) -> None:
    """Refuse a target the loss cannot take.

    Refuse a target the loss cannot take, naming the key: bce needs values in [0, 1], ce class
    indices 0 .. model.classes − 1, mse finite values."""
    try:
        values = np.asarray(y, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise DataError(f"config key model.loss: {where} is not numeric ({np.asarray(y).dtype} values)") from None
    if not np.isfinite(values).all():
        raise DataError(f"config key model.loss: {where} holds values that are not finite")
    with np.errstate(over="ignore"):
        beyond = int(np.count_nonzero(~np.isfinite(values.astype(np.float32))))
    if beyond:
        raise DataError(
            f"config key model.loss: {where} holds {beyond} value(s) beyond the largest float32 "
            f"({float(np.finfo(np.float32).max):.4g}): training in float32 would see them as inf"
        )
    low, high = float(values.min()), float(values.max())
    if loss == "bce" and (low < 0 or high > 1):
        raise DataError(
            f"config key model.loss: bce needs targets in [0, 1]; {where} ranges from {low:g} to {high:g} "
            "(ce for classes, mse for values)"
        )
    if loss == "ce":
        whole = bool((values == np.round(values)).all())
        if not whole or low < 0 or high >= (classes or 0):
            raise DataError(
                f"config key model.classes: ce needs class indices 0 .. {(classes or 0) - 1}; {where} "
                + (f"ranges from {low:g} to {high:g}" if whole else "holds values that are not whole numbers")
            )
