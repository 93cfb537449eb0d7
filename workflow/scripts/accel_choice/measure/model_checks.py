"""Parse-time checks of a user's model (`model.factory`), before any job runs.

`measure.parse_time` calls `check_model` when the Snakefile is parsed. A factory that does not
import, is not `module:function`, raises, returns something that is not a Module, changes torch's
settings, computes in another precision than fp32, or whose output does not fit the data and the
loss stops the run with a message naming the key, before anything is written to results/. Then the
model runs what the jobs will run on it: a training step and an evaluation pass on every batch size
an epoch holds (the partial last batch too), and the profile's counts. Importing the factory runs
the user's code, as a Snakefile does (docs/own-model.md).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch

from accel_choice.io import benchmark_data, data_warnings
from accel_choice.io.targets import check_target_values
from accel_choice.measure.conditions import guarded, held_dtypes, precision_of, precision_problem
from accel_choice.measure.model import ModelError, build, make_loss, outputs, targets
from accel_choice.measure.profile import step_counts, step_ops
from accel_choice.measure.steps import Trainer
from accel_choice.records.data import ConstantTarget
from accel_choice.records.model import ModelSpec

PROBE_ROWS = 2  # a batch of two: a model that drops or merges the batch dimension shows it


def expected_output(spec: ModelSpec, batch: int) -> str:
    return f"({batch}, {spec.classes})" if spec.loss == "ce" else f"({batch},) or ({batch}, 1)"


def _fits(spec: ModelSpec, shape: Sequence[int], batch: int) -> bool:
    if spec.loss == "ce":
        return tuple(shape) == (batch, spec.classes)
    return tuple(shape) in ((batch,), (batch, 1))


def epoch_batches(rows: int, batch_sizes: Sequence[int]) -> list[tuple[int, str]]:
    """Return every batch size an epoch of `rows` holds at `batch_sizes`, once, with where it comes from."""
    found: dict[int, str] = {}
    for b in sorted(batch_sizes):
        found.setdefault(min(b, rows), f"timing.batch_sizes {b}")
        if rows % b and rows > b:
            found.setdefault(
                rows % b, f"the last batch of an epoch: data.benchmark.rows {rows} in batches of {b} leave {rows % b}"
            )
    return sorted(found.items())


def check_spec(
    spec: ModelSpec, input_shape: Sequence[int], seed: int, where: str, batches: Sequence[tuple[int, str]] = ()
) -> torch.nn.Module:
    """Check the model of `spec` and return it.

    Build the model and run one training step on a seeded batch of `PROBE_ROWS` samples of
    `input_shape`, then what the jobs run on every batch of `batches` (`trial`); ModelError naming the
    key for every way that fails. Returns the model."""
    model = build(spec, input_shape, seed)
    try:  # the warm-up and the profile work on copies
        copy.deepcopy(model)
    except Exception as error:  # the user's module
        raise ModelError(
            f"config key model.factory: {spec.label} cannot be copied ({type(error).__name__}: {error}); the jobs warm "
            "up and count a copy.deepcopy of the model: build it from parameters and buffers torch can copy"
        ) from error
    with guarded(f"{spec.label}'s model, run on a batch,", ModelError):
        _probe(model, spec, input_shape, seed, where)
        trial(model, spec, input_shape, seed, batches)
    return model


def _probe(model: torch.nn.Module, spec: ModelSpec, input_shape: Sequence[int], seed: int, where: str) -> None:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(PROBE_ROWS, *input_shape, generator=generator)
    y = targets(spec, torch.arange(PROBE_ROWS) % (spec.classes or 2))
    shape = f"({', '.join(map(str, x.shape))})"
    problem = precision_problem(spec.label, held_dtypes(model))
    if problem:  # before a forward that would fail on fp32 data naming no cause
        raise ModelError(problem)
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
    _, problem = precision_of(spec.label, model, x)
    if problem:
        raise ModelError(problem)
    if not any(p.requires_grad for p in model.parameters()):
        raise ModelError(f"config key model.factory: {spec.label} has no trainable parameters")
    loss = make_loss(spec)(outputs(spec, logits, y), y)
    try:
        loss.backward()
    except RuntimeError as error:
        raise ModelError(
            f"config key model.factory: {spec.label}: backward through its output failed ({error})"
        ) from error
    model.zero_grad(set_to_none=True)


def trial(
    model: torch.nn.Module, spec: ModelSpec, input_shape: Sequence[int], seed: int, batches: Sequence[tuple[int, str]]
) -> None:
    """Run on a copy of `model` what the jobs will.

    Run on a copy of `model` what the jobs will: per batch size, one update in training mode and a
    forward in evaluation mode without gradients; the profile's FLOP count at the smallest size and its op
    count at the largest. ModelError naming the batch and where its size comes from, for the first that fails."""
    if not batches:
        return
    trainer = Trainer(copy.deepcopy(model), spec, torch.device("cpu"))
    trainer.prime()
    generator = torch.Generator().manual_seed(seed)
    for size, why in batches:
        x = torch.randn(size, *input_shape, generator=generator)
        y = targets(spec, torch.arange(size) % (spec.classes or 2))
        with _named(spec, "a training step", size, why):
            trainer.model.train()
            trainer.step(x, y)
        with _named(spec, "an evaluation pass (eval mode, no gradients)", size, why), torch.no_grad():
            trainer.model.eval()
            trainer.model(x)
    smallest, largest = batches[0], batches[-1]
    with _named(spec, "the profile's FLOP count", *smallest):
        step_counts(copy.deepcopy(model), spec, input_shape, smallest[0], seed)
    with _named(spec, "the profile's op count", *largest):
        step_ops(model, spec, input_shape, largest[0], seed)


class _named:
    """Turn an exception of the user's model into one ModelError naming what ran on which batch."""

    def __init__(self, spec: ModelSpec, what: str, size: int, why: str):
        self.spec, self.what, self.size, self.why = spec, what, size, why

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, _tb: object) -> bool:
        if error is None or isinstance(error, ModelError) or not isinstance(error, Exception):
            return False
        hint = (
            "; a model with batch normalisation needs 2 or more samples a batch in training: choose "
            "data.benchmark.rows or timing.batch_sizes that leave no batch of one"
            if self.size == 1
            else ""
        )
        raise ModelError(
            f"config key model.factory: {self.spec.label} failed {self.what} on a batch of {self.size} "
            f"({self.why}): {type(error).__name__}: {error}{hint}"
        ) from error


def check_model(config: dict[str, Any], sample_shape: Sequence[int]) -> ConstantTarget | None:
    """Check the configured model at parse time.

    The parse-time check of the configured model on the benchmark data's sample shape, and of
    your own data's target against the loss; the warning where that target is constant (no refusal)."""
    spec = ModelSpec(**config["model"])
    found = benchmark_data.source(config)
    where = (
        f"data.benchmark: {config['data']['benchmark']['features']} features per sample"
        if found is None
        else f"data.benchmark.{found['kind']}: samples of shape {tuple(sample_shape)}"
    )
    rows = config["data"]["benchmark"]["rows"]
    check_spec(spec, tuple(sample_shape), config["seed"], where, epoch_batches(rows, config["timing"]["batch_sizes"]))
    if found is None:
        return None
    values = benchmark_data.targets(found)
    check_target_values(values, spec.loss, spec.classes, f"the target of data.benchmark.{found['kind']}")
    return data_warnings.constant_target(values, benchmark_data.target_column(found))
