"""A user's model as a cost-model workload: what profile_model counted, per sample and per step.

The planner's grid times the textbook MLP features → hidden → 1 (records.grid.Workload), whose steps,
FLOP and bytes per epoch follow from its widths (costmodel.work). Any other model - your own
factory, or the textbook MLP trained with another optimizer or loss - has no such formula: its epoch
is described by the counted profile (records.model.ModelProfile) instead, as a `CountedWorkload`,
so the same fitted rates (seconds per step, FLOP/s, bytes/s) model it along rows and batch size.

The profile counts a training step at each timed batch size. FLOP and activations of every layer
grow linearly with the batch, so each is described as `per_sample · B + per_step`, fitted by least
squares to the counted batch sizes: the per-step part is zero for every module torch counts (it
stays a term so a model whose count is not proportional to the batch is modelled as counted, and
`linear_error` says how far the line misses the counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from accel_choice.analyze import theory
from accel_choice.analyze.figures import Figures
from accel_choice.records.grid import Workload
from accel_choice.records.model import TEXTBOOK, ModelProfile

AXES = ("rows", "batch_size")  # a counted model has no features or hidden to grow


@dataclass(frozen=True)
class PerSample:
    """The counted figures of one model that one epoch's steps, FLOP and bytes follow from."""

    model: str  # the factory, or the textbook MLP (trained with another optimizer or loss)
    row_bytes: int  # one sample's fp32 features and its target (int64 for ce)
    flop_per_sample: float  # of one training step (forward and backward)
    flop_per_step: float
    activation_bytes_per_sample: float  # the forward hooks' count: input and every leaf module's output
    activation_bytes_per_step: float
    state_bytes: int  # parameters, gradients, buffers and optimizer state
    linear_error: float  # the largest relative miss of the two lines at a counted batch size

    def __post_init__(self) -> None:
        for name in ("flop_per_sample", "flop_per_step", "activation_bytes_per_sample", "activation_bytes_per_step"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.flop_per_sample + self.flop_per_step <= 0:
            raise ValueError(f"{self.model}: a training step with no counted FLOP cannot be modelled")

    @classmethod
    def of(cls, profile: ModelProfile) -> PerSample:
        """Return the profile's counts as lines in the batch size."""
        figures = Figures(None, profile)
        sizes = [row.batch_size for row in profile.table]
        flop, flop_error = _line(sizes, [row.step_flop for row in profile.table])
        activations, activation_error = _line(sizes, [row.activation_bytes for row in profile.table])
        # The textbook MLP trained with another optimizer or loss is not the grid's workload: named so.
        textbook = profile.model == TEXTBOOK
        return cls(
            model=f"{TEXTBOOK} ({profile.optimizer}, {profile.loss})" if textbook else profile.model,
            row_bytes=figures.sample_bytes + figures.target_bytes,
            flop_per_sample=flop[0],
            flop_per_step=flop[1],
            activation_bytes_per_sample=activations[0],
            activation_bytes_per_step=activations[1],
            state_bytes=profile.state_bytes,
            linear_error=max(flop_error, activation_error),
        )


@dataclass(frozen=True)
class CountedWorkload:
    """One epoch of a counted model over `rows` rows in batches of `batch_size` (costmodel.work)."""

    rows: int
    batch_size: int
    per_sample: PerSample

    def __post_init__(self) -> None:
        if self.rows < 1 or self.batch_size < 1:
            raise ValueError(f"rows and batch_size must be positive, got {self.rows} and {self.batch_size}")

    @property
    def model(self) -> str:
        return self.per_sample.model

    def work(self) -> dict[str, float]:
        """Count the steps, training FLOP, bytes moved and rows of one epoch.

        Steps, training FLOP, bytes moved (the rows', the state's) and rows, counted as costmodel.work
        counts the textbook MLP's: data and target read once, activations written in forward and read
        back in backward, and each optimizer step reading and writing parameters, gradients and
        optimizer state."""
        m = self.per_sample
        steps = theory.steps_per_epoch(self.rows, self.batch_size)
        activations = m.activation_bytes_per_sample * self.rows + m.activation_bytes_per_step * steps
        return {
            "steps": float(steps),
            "flop": m.flop_per_sample * self.rows + m.flop_per_step * steps,
            "bytes": float(self.rows * m.row_bytes) + 2 * activations,
            "state_bytes": float(steps * 2 * m.state_bytes),
            "rows": float(self.rows),
        }


def identity(w: Workload | CountedWorkload) -> dict[str, Any]:
    """Return the fields that name a workload in the planner's records.

    The fields that name a workload in the planner's records (FitPoint, Residual): a counted
    model's name, and no features or hidden."""
    if isinstance(w, CountedWorkload):
        return {"model": w.model, "rows": w.rows, "features": None, "hidden": None, "batch_size": w.batch_size}
    return {"model": TEXTBOOK, "rows": w.rows, "features": w.features, "hidden": w.hidden, "batch_size": w.batch_size}


def _line(sizes: list[int], counts: list[int]) -> tuple[tuple[float, float], float]:
    """(per sample, per step) of counts ≈ per_sample · B + per_step, both >= 0, and the largest
    relative miss at a counted B. Counts proportional to B (every module torch counts), or one batch
    size: a line through the origin."""
    b = np.asarray(sizes, dtype=float)
    y = np.asarray(counts, dtype=float)
    per_sample = y / b
    slope, intercept = float(per_sample[-1]), 0.0
    if not np.allclose(per_sample, per_sample[-1], rtol=1e-12, atol=0):
        slope = float(np.sum(b * y) / np.sum(b * b))
        fitted, fitted_intercept = np.polyfit(b, y, 1)
        if fitted >= 0 and fitted_intercept >= 0:
            slope, intercept = float(fitted), float(fitted_intercept)
    predicted = slope * b + intercept
    misses = [abs(p - c) / c for p, c in zip(predicted, y) if c > 0]
    return (slope, intercept), float(max(misses, default=0.0))
