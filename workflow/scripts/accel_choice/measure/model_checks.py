"""Parse-time checks of a user's model (`model.factory`), before any job runs.

`measure.parse_time` calls `check_model` when the Snakefile is parsed, so a factory that does not
import, is not `module:function`, raises, returns something that is not a Module, or whose output
does not fit the data and the loss stops the run with a message naming the key, before anything is
written to results/. Importing the factory runs the user's code, as a Snakefile does (docs/own-model.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from accel_choice.io import benchmark_data, data_warnings
from accel_choice.io.targets import check_target_values
from accel_choice.measure.model import ModelError, build, make_loss, outputs, targets
from accel_choice.records.data import ConstantTarget
from accel_choice.records.model import ModelSpec

PROBE_ROWS = 2  # a batch of two: a model that drops or merges the batch dimension shows it


def expected_output(spec: ModelSpec, batch: int) -> str:
    return f"({batch}, {spec.classes})" if spec.loss == "ce" else f"({batch},) or ({batch}, 1)"


def _fits(spec: ModelSpec, shape: Sequence[int], batch: int) -> bool:
    if spec.loss == "ce":
        return tuple(shape) == (batch, spec.classes)
    return tuple(shape) in ((batch,), (batch, 1))


def check_spec(spec: ModelSpec, input_shape: Sequence[int], seed: int, where: str) -> torch.nn.Module:
    """Build the model and run one training step on a seeded batch of `PROBE_ROWS` samples of
    `input_shape`; ModelError naming the key for every way that fails. Returns the model."""
    model = build(spec, input_shape, seed)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(PROBE_ROWS, *input_shape, generator=generator)
    y = targets(spec, torch.arange(PROBE_ROWS) % (spec.classes or 2))
    shape = f"({', '.join(map(str, x.shape))})"
    try:
        logits = model(x)
    except Exception as error:  # the user's forward
        raise ModelError(
            f"config key model.factory: {spec.label} rejected a batch of shape {shape} ({where}): "
            f"{type(error).__name__}: {error}"
        ) from error
    if not torch.is_tensor(logits):
        raise ModelError(
            f"config key model.factory: {spec.label} returned a {type(logits).__name__} for a batch of shape "
            f"{shape}; it must return one tensor"
        )
    if not _fits(spec, logits.shape, PROBE_ROWS) or not logits.is_floating_point():
        raise ModelError(
            f"config key model.factory: {spec.label} maps a batch of shape {shape} to a {logits.dtype} tensor of "
            f"shape {tuple(logits.shape)}; model.loss {spec.loss}"
            + (f" with model.classes {spec.classes}" if spec.loss == "ce" else "")
            + f" needs floating-point outputs of shape {expected_output(spec, PROBE_ROWS)}"
        )
    if not any(p.requires_grad for p in model.parameters()):
        raise ModelError(f"config key model.factory: {spec.label} has no trainable parameters")
    loss = make_loss(spec)(outputs(spec, logits, y), y)
    try:
        loss.backward()
    except RuntimeError as error:
        raise ModelError(
            f"config key model.factory: {spec.label}: backward through its output failed ({error})"
        ) from error
    return model


def check_model(config: dict[str, Any], sample_shape: Sequence[int]) -> ConstantTarget | None:
    """The parse-time check of the configured model on the benchmark data's sample shape, and of
    your own data's target against the loss; the warning where that target is constant (no refusal)."""
    spec = ModelSpec(**config["model"])
    found = benchmark_data.source(config)
    where = (
        f"data.benchmark: {config['data']['benchmark']['features']} features per sample"
        if found is None
        else f"data.benchmark.{found['kind']}: samples of shape {tuple(sample_shape)}"
    )
    check_spec(spec, tuple(sample_shape), config["seed"], where)
    if found is None:
        return None
    values = benchmark_data.targets(found)
    check_target_values(values, spec.loss, spec.classes, f"the target of data.benchmark.{found['kind']}")
    return data_warnings.constant_target(values, benchmark_data.target_column(found))
