"""The model figures the decision rests on: the textbook's formulas (analyze.theory) for its MLP, or
what profile_model counted (records.model.ModelProfile) for a user's model, behind one interface.

The textbook MLP keeps its formulas, so every number of the specification stays as it was; the
profile's counts agree with them there (the record refuses a disagreement). A user's model has no
formula: its parameters, FLOP, activations and optimizer state are the counted ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from accel_choice.analyze import theory
from accel_choice.records.model import TEXTBOOK, ModelProfile


@dataclass(frozen=True)
class Figures:
    widths: tuple[int, ...] | None  # the textbook MLP's layer widths; None for a user's model
    profile: ModelProfile | None = None  # what profile_model counted; needed for a user's model

    def __post_init__(self) -> None:
        if self.widths is None and self.profile is None:
            raise ValueError("a user's model has no formula: its figures need the counted profile")

    @classmethod
    def of(cls, profile: ModelProfile) -> Figures:
        """Build the figures of `profile`: the formulas where they apply, else the counted ones.

        The formulas describe the textbook MLP trained with Adam on BCE (4·P·4 is Adam's state); any
        other model, optimizer or loss takes the counted figures."""
        formula = profile.widths is not None and profile.optimizer == "adam" and profile.loss == "bce"
        return cls(profile.widths if formula else None, profile)

    @property
    def counted(self) -> ModelProfile:
        assert self.profile is not None
        return self.profile

    @property
    def source(self) -> Literal["formula", "counted"]:
        return "formula" if self.widths else "counted"

    @property
    def model(self) -> str:
        return TEXTBOOK if self.widths else self.counted.model

    @property
    def params(self) -> int:
        return theory.param_count(self.widths) if self.widths else self.counted.params

    @property
    def state_bytes(self) -> int:
        """Parameters, gradients, buffers and optimizer state: Adam fp32 4·P·4 by the formula; counted otherwise."""
        return theory.adam_fp32_bytes(self.widths) if self.widths else self.counted.state_bytes

    @property
    def sample_bytes(self) -> int:
        """Return one sample's features in bytes, in fp32."""
        return self.widths[0] * theory.FP32_BYTES if self.widths else self.counted.input_bytes_per_sample

    def forward_flops(self, batch_size: int) -> int:
        if self.widths:
            return theory.forward_flops(batch_size, self.widths)
        return self.counted.row(batch_size).forward_flop

    def step_flops_3x(self, batch_size: int) -> int:
        """Return a step's FLOP by the 3× rule: backward ≈ 2× forward."""
        return 3 * self.forward_flops(batch_size)

    def step_flops_counted(self, batch_size: int) -> int:
        if self.widths:
            return theory.forward_backward_flops_counted(batch_size, self.widths)
        return self.counted.row(batch_size).step_flop

    def epoch_flops_3x(self, rows: int, batch_size: int) -> int:
        """Return the FLOP of an epoch of `rows` samples by the 3× rule.

        The 3× rule over an epoch of `rows` samples (a model whose forward FLOP grow with the
        batch, as every layer's do, counts the same at any batch size)."""
        if self.widths:
            return theory.forward_backward_flops(rows, self.widths)
        return round(3 * self.counted.row(batch_size).forward_flop * rows / batch_size)

    def activation_bytes(self, batch_size: int) -> int:
        if self.widths:
            return theory.activation_bytes(batch_size, self.widths)
        return self.counted.row(batch_size).activation_bytes

    @property
    def target_bytes(self) -> int:
        """Return the bytes of one target on the device: an int64 class index for ce, else fp32."""
        return 8 if self.profile is not None and self.profile.loss == "ce" else theory.FP32_BYTES

    def data_bytes(self, rows: int) -> int:
        """Return the bytes of the data matrix and its target column (fp32; int64 class indices for ce)."""
        return rows * (self.sample_bytes + self.target_bytes)

    def memory_bound_bytes(self, batch_size: int, rows: int, resident: bool) -> int:
        """Return what one timed epoch holds on the device.

        What one timed epoch holds on the device: theory.memory_bound_bytes for the textbook MLP;
        for a user's model the same terms counted - parameters, gradients, buffers and optimizer state, twice
        the hooks' forward activations (every leaf module's output), the batch in use and the next,
        the per-step loss buffer, and the data and the shuffled index where resident. An estimate, not
        a guarantee: what backward saves from functional code (a residual add outside any module) is
        not in the hooks' count, and an in-place module's output is counted once more than stored."""
        if self.widths:
            return theory.memory_bound_bytes(self.widths, batch_size, rows, resident)
        return (
            self.state_bytes
            + 2 * self.activation_bytes(batch_size)
            + 2 * batch_size * (self.sample_bytes + self.target_bytes)
            + theory.steps_per_epoch(rows, batch_size) * theory.FP32_BYTES
            + (self.data_bytes(rows) + rows * 8 if resident else 0)
        )
