"""The model a timing job trains: its specification (the `model` config section) and what was
counted on it (results/model/profile.json).

The textbook's d → hidden → 1 MLP is the default (`factory` null); a user's own model comes from
`factory: "package.module:function"`, called as `function(input_shape, **kwargs)`.
"""

from __future__ import annotations

from typing import Any, Literal

from accel_choice.records import Count, Positive, PositiveCount, record

Loss = Literal["bce", "ce", "mse"]
Optimizer = Literal["adam", "adamw", "sgd"]
TEXTBOOK = "textbook MLP"


def split_factory(factory: str) -> tuple[str, str]:
    """("package.module", "function") from "package.module:function"; ValueError naming the key otherwise."""
    module, sep, function = factory.partition(":")
    names = [*module.split("."), function]
    if not sep or ":" in function or not all(name.isidentifier() for name in names):
        raise ValueError(
            f"config key model.factory: {factory!r} is not of the form 'package.module:function' "
            "(a dotted module name, one colon, the function's name)"
        )
    return module, function


def spec_problem(factory: str | None, loss: str, classes: int | None) -> str | None:
    """Say what makes a `model` section unusable before anything is imported, naming the key; None if nothing."""
    if factory is not None:
        try:
            split_factory(factory)
        except ValueError as error:
            return str(error)
    if loss == "ce" and classes is None:
        return "config key model.classes: not set; model.loss ce needs the number of classes (an integer >= 2)"
    if loss != "ce" and classes is not None:
        return f"config key model.classes: {classes} is set but model.loss is {loss}; allowed: classes with ce only"
    if loss == "ce" and factory is None:
        return (
            "config key model.loss: ce needs model.factory: the textbook MLP has one output per sample "
            "(bce or mse); a model with a logit per class is your own"
        )
    return None


@record
class ModelSpec:
    """The `model` config section: which model, trained with which loss and optimizer."""

    hidden: PositiveCount  # the textbook MLP's hidden width; unused by a factory's model
    lr: Positive
    factory: str | None = None  # "package.module:function", importable from `path`
    path: str = "."
    kwargs: dict[str, Any] | None = None
    loss: Loss = "bce"
    classes: PositiveCount | None = None  # ce only: the number of classes
    optimizer: Optimizer = "adam"

    def __post_init__(self) -> None:
        problem = spec_problem(self.factory, self.loss, self.classes)
        if problem:
            raise ValueError(problem)

    @property
    def textbook(self) -> bool:
        return self.factory is None

    @property
    def label(self) -> str:
        return TEXTBOOK if self.factory is None else self.factory

    @property
    def outputs(self) -> int:
        """Outputs per sample the loss needs: one logit (bce) or value (mse), a logit per class (ce)."""
        return self.classes if self.loss == "ce" and self.classes is not None else 1


# --- results/model/profile.json ---------------------------------------------------------------


@record
class ProfileRow:
    """One batch size: what FlopCounterMode counted for a training step, and the forward
    activations the forward hooks saw; the textbook's formulas beside them (null for a user's model)."""

    batch_size: PositiveCount
    forward_flop: Count
    backward_flop: Count
    step_flop: Count  # forward + backward
    activation_bytes: Count  # the batch's input plus every leaf module's output
    last_batch_rows: PositiveCount  # rows of the epoch's last batch (rows % batch_size, or a full batch)
    last_batch_step_flop: Count
    epoch_flop: Count  # full batches at step_flop plus the last at its own count
    formula_step_flop: Count | None  # theory.forward_backward_flops_counted
    formula_activation_bytes: Count | None  # theory.activation_bytes (layer outputs; no ReLU output)


# How a record names a floating dtype (measure.conditions.DTYPE_LABELS).
Dtype = Literal["fp64", "fp32", "bf16", "fp16"]


@record(schema="model-profile", version=3)
class ModelProfile:
    """results/model/profile.json: the model counted, not assumed. Parameters from the module,
    FLOP per training step from torch's FlopCounterMode, activations from forward hooks, the
    optimizer's state from the optimizer after one (weight-preserving) step. For the textbook MLP the
    formulas of analyze.theory are kept beside the counts, and must agree with them."""

    model: str  # TEXTBOOK or the factory
    widths: tuple[PositiveCount, ...] | None  # the textbook MLP's layer widths; null for a user's model
    kwargs: dict[str, Any] | None
    input_shape: tuple[PositiveCount, ...]  # one sample's
    output_shape: tuple[PositiveCount, ...]  # one sample's
    loss: Loss
    classes: PositiveCount | None
    optimizer: Optimizer
    rows: PositiveCount
    params: Count
    trainable_params: Count
    param_bytes: Count
    grad_bytes: Count  # one gradient per trainable parameter, in its dtype
    buffer_bytes: Count  # the module's buffers: a normalisation's running statistics and step count
    # The dtypes it holds and computes in, in training mode on the smallest batch (measure.conditions):
    # fp32 only, the parse-time check refuses others (the timing sets lower precisions through autocast).
    param_dtype: Literal["fp32"]
    output_dtype: Literal["fp32"]
    compute_dtype: Literal["fp32"]
    optimizer_state_bytes: Count
    input_bytes_per_sample: PositiveCount  # fp32 features
    formula_params: Count | None
    table: tuple[ProfileRow, ...]
    # One training step's dispatched aten ops and those of them that launch work (measure.op_count),
    # counted on the CPU at the largest batch size: what a GPU's host does per step (docs/planner.md).
    step_ops: PositiveCount
    step_kernels: Count

    def __post_init__(self) -> None:
        if self.step_kernels > self.step_ops:
            raise ValueError(f"step_kernels {self.step_kernels} > step_ops {self.step_ops}")
        if self.trainable_params > self.params:
            raise ValueError(f"trainable_params {self.trainable_params} > params {self.params}")
        if (self.model == TEXTBOOK) != (self.widths is not None):
            raise ValueError(f"{self.model}: widths {self.widths} are the textbook MLP's only")
        if self.model != TEXTBOOK:
            if self.formula_params is not None or any(r.formula_step_flop is not None for r in self.table):
                raise ValueError(f"{self.model}: the textbook's formulas do not describe a user's model")
            return
        if self.formula_params != self.params:
            raise ValueError(f"textbook MLP: counted {self.params} parameters, the formula {self.formula_params}")
        for row in self.table:
            if row.formula_step_flop != row.step_flop:
                raise ValueError(
                    f"textbook MLP at B={row.batch_size}: counted {row.step_flop} FLOP per step, "
                    f"the formula {row.formula_step_flop}"
                )

    @property
    def state_bytes(self) -> int:
        """Parameters, gradients, buffers and optimizer state: what training holds besides activations and data."""
        return self.param_bytes + self.grad_bytes + self.buffer_bytes + self.optimizer_state_bytes

    def row(self, batch_size: int) -> ProfileRow:
        found = [r for r in self.table if r.batch_size == batch_size]
        if not found:
            raise KeyError(f"no profile row for batch size {batch_size}; have {[r.batch_size for r in self.table]}")
        return found[0]
