"""Count what a model is, instead of assuming it: parameters from the module, FLOP per training step
from torch's FlopCounterMode, forward activations from hooks on its leaf modules, the optimizer's
state from the optimizer itself. For the textbook MLP the formulas of analyze.theory stand beside
every count (records.model.ModelProfile refuses a disagreement).

The counter counts matrix-multiply-like operations (matmul, convolution, attention); elementwise
work (activations, normalisation, the loss, the optimizer update) adds nothing to it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from accel_choice.analyze import theory
from accel_choice.measure.conditions import precision_of
from accel_choice.measure.model import ModelError, build, make_loss, outputs, targets
from accel_choice.measure.op_count import OpCount, count_step
from accel_choice.measure.steps import Trainer
from accel_choice.records.model import ModelProfile, ModelSpec, ProfileRow


def _tensor_bytes(value: object) -> int:
    if torch.is_tensor(value):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(_tensor_bytes(v) for v in value)
    return 0


def step_counts(
    model: nn.Module, spec: ModelSpec, input_shape: Sequence[int], batch_size: int, seed: int
) -> dict[str, int]:
    """Count one training step's FLOP and forward activations.

    Forward and backward FLOP of one training step on a seeded batch, and the forward
    activations: the batch's input plus the output of every leaf module (what backward may keep)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, *input_shape, generator=generator)
    y = targets(spec, torch.arange(batch_size) % (spec.classes or 2))
    seen = [x.numel() * x.element_size()]
    leaves = [m for m in model.modules() if not list(m.children())]
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.append(_tensor_bytes(out))) for m in leaves]
    model.train()  # as the timed epoch runs it: batch statistics, dropout
    model.zero_grad(set_to_none=True)
    try:
        with FlopCounterMode(display=False) as forward_counter:
            logits = model(x)
            loss = make_loss(spec)(outputs(spec, logits, y), y)
    finally:
        for hook in hooks:
            hook.remove()
    with FlopCounterMode(display=False) as backward_counter:
        loss.backward()
    model.zero_grad(set_to_none=True)
    forward, backward = forward_counter.get_total_flops(), backward_counter.get_total_flops()
    return {
        "forward": forward,
        "backward": backward,
        "activation_bytes": sum(seen),
        "output_shape": tuple(int(n) for n in logits.shape[1:]) or (1,),
    }


def step_ops(model: nn.Module, spec: ModelSpec, input_shape: Sequence[int], batch_size: int, seed: int) -> OpCount:
    """Count the aten ops one training step dispatches.

    The aten ops one training step of a copy of `model` dispatches, and how many launch work
    (measure.op_count): the planner's cost of the step on a GPU's host (docs/planner.md)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch_size, *input_shape, generator=generator)
    y = targets(spec, torch.arange(batch_size) % (spec.classes or 2))
    trainer = Trainer(copy.deepcopy(model), spec, torch.device("cpu"))
    trainer.prime()
    return count_step(trainer, x, y)


def optimizer_state_bytes(model: nn.Module, spec: ModelSpec) -> int:
    """Return the bytes the optimizer keeps once it has stepped.

    The bytes the optimizer keeps once it has stepped (Adam's two moments and step counts, none
    for plain SGD): the timing's own priming step (steps.Trainer.prime), which moves no weight."""
    trainer = Trainer(model, spec, torch.device("cpu"))  # an eager fp32 step
    trainer.prime()
    return sum(_tensor_bytes(v) for state in trainer.optimizer.state.values() for v in state.values())


def profile(
    spec: ModelSpec, input_shape: Sequence[int], rows: int, batch_sizes: Sequence[int], seed: int
) -> ModelProfile:
    """Profile the model of `spec` at every batch size of the timing.

    The model of `spec` on samples of `input_shape`, counted at every batch size of the timing, as
    the timed epoch runs it (training mode, the timing's batches; measure.model_checks refuses a model
    that is not fp32 or fails on one of them, when the workflow is parsed)."""
    model = build(spec, input_shape, seed)
    dtypes, problem = precision_of(spec.label, model, torch.zeros(min(batch_sizes), *input_shape))
    if problem:
        raise ModelError(problem)
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    widths = (input_shape[0], spec.hidden, 1) if spec.textbook else None
    counts: dict[int, dict[str, int]] = {}

    def count(b: int) -> dict[str, int]:
        if b not in counts:
            counts[b] = step_counts(model, spec, input_shape, b, seed)
        return counts[b]

    dispatched = step_ops(model, spec, input_shape, max(batch_sizes), seed)
    table = []
    for b in sorted(batch_sizes):
        full, last = divmod(rows, b)
        step = count(b)
        last_step = count(last) if last else step
        step_flop = step["forward"] + step["backward"]
        last_flop = last_step["forward"] + last_step["backward"]
        table.append(
            ProfileRow(
                batch_size=b,
                forward_flop=step["forward"],
                backward_flop=step["backward"],
                step_flop=step_flop,
                activation_bytes=step["activation_bytes"],
                last_batch_rows=last or b,
                last_batch_step_flop=last_flop,
                epoch_flop=full * step_flop + (last_flop if last else 0),
                formula_step_flop=theory.forward_backward_flops_counted(b, widths) if widths else None,
                formula_activation_bytes=theory.activation_bytes(b, widths) if widths else None,
            )
        )
    return ModelProfile(
        model=spec.label,
        widths=widths,
        kwargs=None if spec.textbook else dict(spec.kwargs or {}),
        input_shape=tuple(int(n) for n in input_shape),
        output_shape=count(min(batch_sizes))["output_shape"],
        loss=spec.loss,
        classes=spec.classes,
        optimizer=spec.optimizer,
        rows=rows,
        params=sum(p.numel() for p in params),
        trainable_params=sum(p.numel() for p in trainable),
        param_bytes=sum(_tensor_bytes(p) for p in params),
        grad_bytes=sum(_tensor_bytes(p) for p in trainable),
        buffer_bytes=sum(_tensor_bytes(b) for b in model.buffers()),
        param_dtype=dtypes["parameters"],
        output_dtype=dtypes["output"],
        compute_dtype=dtypes["compute"],
        optimizer_state_bytes=optimizer_state_bytes(model, spec),
        input_bytes_per_sample=math.prod(input_shape) * theory.FP32_BYTES,
        formula_params=theory.param_count(widths) if widths else None,
        table=tuple(table),
        step_ops=dispatched.ops,
        step_kernels=dispatched.kernels,
    )
