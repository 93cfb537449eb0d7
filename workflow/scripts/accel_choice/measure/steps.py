"""The training loop a timing job times: one update of a variant, one epoch, one evaluation pass, the warm-up.

Read in one go (nanoGPT's habit): `Trainer.step` is one update under autocast and
GradScaler, `train_epoch` and `evaluate` are timed with the device synchronized before each clock
read and no host sync inside the loop (each step's loss is copied, on the device, into a slot of a
buffer made before the clock and inspected after it stops), and `warm_up` pays every first-call cost
on a throw-away copy of the model.
measure.training runs these per job and turns them into records.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from accel_choice.measure.compile_counts import CUDA_GRAPH_MODES
from accel_choice.measure.conditions import dtype_label
from accel_choice.measure.devices import synchronize
from accel_choice.measure.loaders import Batch
from accel_choice.measure.model import correct, make_loss, make_optimizer, outputs
from accel_choice.measure.placement import PLACEMENTS
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import Variant

PRECISIONS = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
# torch.compile's backend for compiled variants: inductor (the default, generated C++/Triton kernels).
COMPILE_BACKEND = "inductor"
# Cache entries a compiled frame may gather in the warm-up (every batch shape, train and eval, each
# precision); past it the warm-up fails instead of dynamo falling back to eager code unannounced.
RECOMPILE_LIMIT = 64


def compiling(step: Step) -> contextlib.AbstractContextManager[Any]:
    """Warm up a compiled variant: compile what it needs, and fail loudly past the limit."""
    if not step.compiled:
        return contextlib.nullcontext()
    return torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT, fail_on_recompile_limit_hit=True)


def compiled_already(step: Step) -> contextlib.AbstractContextManager[Any]:
    """Run a timed pass of a compiled variant: a recompilation here would be timed, so it is an error."""
    if not step.compiled:
        return contextlib.nullcontext()
    return torch._dynamo.config.patch(error_on_recompile=True)


def check_variant(variant: Variant) -> Variant:
    """Check a variant the loop can run: a precision of PRECISIONS, a placement of PLACEMENTS."""
    if variant.precision not in PRECISIONS:
        raise ValueError(f"unknown precision {variant.precision!r}; allowed: {', '.join(PRECISIONS)}")
    if variant.placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {variant.placement!r}; allowed: {', '.join(PLACEMENTS)}")
    return variant


def cpu_variants(
    loaders: Sequence[str], compile_options: Sequence[bool] = (False,), *, batch_size: int, threads: int | None = None
) -> list[Variant]:
    """Return a CPU job's variants: every loader, in fp32 on host data."""
    return _variants("cpu", ["fp32"], ["host"], loaders, compile_options, batch_size, threads)


def gpu_variants(
    precisions: Sequence[str],
    placements: Sequence[str],
    compile_options: Sequence[bool] = (False,),
    *,
    batch_size: int,
    device: str = "cuda",
    threads: int | None = None,
) -> list[Variant]:
    """Return a GPU job's variants: the fast path at every precision and placement (on `device`: the tests run
    them on the CPU too)."""
    return _variants(device, precisions, placements, ["fastpath"], compile_options, batch_size, threads)


def _variants(
    device: str,
    precisions: Sequence[str],
    placements: Sequence[str],
    loaders: Sequence[str],
    compile_options: Sequence[bool],
    batch_size: int,
    threads: int | None,
) -> list[Variant]:
    """Every combination, compiled ones last, at `threads` torch threads (default: torch's present count)."""
    threads = threads or torch.get_num_threads()
    return [
        check_variant(
            Variant(
                device=device,
                precision=precision,
                placement=placement,
                loader=loader,
                batch_size=batch_size,
                threads=threads,
                compiled=compiled,
            )
        )
        for compiled in compile_options
        for precision in precisions
        for placement in placements
        for loader in loaders
    ]


@dataclass(frozen=True)
class Step:
    """How one update runs: what a Trainer needs of the variant it runs (records.training.Variant, the one
    name of what is measured) and of its job (the GradScaler setting). Made by `step_of`; the default is an
    eager fp32 update, the one the profile and the scaling curve take."""

    precision: str = "fp32"
    compiled: bool = False  # the model's forward through torch.compile (timing.compile)
    scaler: bool = False  # a GradScaler scales the loss: fp16 with timing's gpu.grad_scaler on
    compile_mode: str = "default"  # torch.compile's mode (timing.compile_mode): reduce-overhead, CUDA graphs


def compile_mode_of(update: Step) -> str | None:
    """Say what a compiled variant's record says of its mode: timing.compile_mode; None for an eager one."""
    return update.compile_mode if update.compiled else None


def step_of(variant: Variant, *, grad_scaler: bool, compile_mode: str = "default") -> Step:
    """Return the update of `variant`; `grad_scaler` (gpu.grad_scaler) is used by fp16 only, `compile_mode` by a
    compiled variant only."""
    check_variant(variant)
    return Step(
        precision=variant.precision,
        compiled=variant.compiled,
        scaler=variant.precision == "fp16" and grad_scaler,
        compile_mode=compile_mode,
    )


class Trainer:
    """Model, optimizer, loss, autocast and scaler for one variant's update (`Step`); `step` is one update."""

    def __init__(self, model: nn.Module, spec: ModelSpec, device: torch.device, update: Step = Step()):
        self.model, self.spec, self.device = model, spec, device
        # torch.compile wraps the module (its weights stay the model's); the compiled code is cached by
        # torch per process, so a fresh model of the same class reuses what the warm-up compiled.
        mode = None if update.compile_mode == "default" else update.compile_mode
        self.forward = torch.compile(model, backend=COMPILE_BACKEND, mode=mode) if update.compiled else model
        # CUDA graphs (reduce-overhead): each update marks a new iteration, as torch asks of a training loop.
        self.graphed = update.compiled and update.compile_mode in CUDA_GRAPH_MODES and device.type == "cuda"
        self.optimizer = make_optimizer(model, spec.lr, device, spec.optimizer)
        self.loss_fn = make_loss(spec)
        self.dtype = PRECISIONS[update.precision]
        self.scaler = torch.amp.GradScaler(device.type, enabled=update.scaler)

    def prime(self) -> None:
        """Create what the first update would create lazily - Adam's moments and step counts, the
        GradScaler's scale and growth tracker - before the clock starts, without changing a weight:
        one Adam step on zero gradients moves nothing (its moments stay zero, so the update is
        exactly zero), and its step counts are set back to zero, so the first timed step is Adam's
        first step, as without priming. Weight decay (AdamW's, decoupled) would shrink the weights
        even on zero gradients: it is off for this one step. SGD without momentum keeps no state."""
        for p in self.model.parameters():
            p.grad = torch.zeros_like(p) if p.requires_grad else None
        decay = [group.get("weight_decay", 0) for group in self.optimizer.param_groups]
        for group in self.optimizer.param_groups:
            group["weight_decay"] = 0
        self.optimizer.step()
        for group, value in zip(self.optimizer.param_groups, decay):
            group["weight_decay"] = value
        self.optimizer.zero_grad(set_to_none=True)
        for state in self.optimizer.state.values():
            step = state.get("step")
            if torch.is_tensor(step):
                step.zero_()
            elif step is not None:
                state["step"] = 0
        self.prime_scaler()

    def prime_scaler(self) -> None:
        """Make the GradScaler's scale and growth tracker now (they are made lazily at its first use)."""
        if self.scaler.is_enabled() and self.scaler._scale is None:
            self.scaler.scale(torch.zeros((), device=self.device))

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.dtype)

    def step(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        if self.graphed:
            torch.compiler.cudagraph_mark_step_begin()
        self.optimizer.zero_grad(set_to_none=True)
        if self.dtype is None and not self.scaler.is_enabled():
            # The plain update a user writes: no autocast or scaler calls on the clock (their
            # disabled forms cost a few microseconds a step, several per cent of a small model's).
            loss = self.loss_fn(outputs(self.spec, self.forward(xb), yb), yb)
            loss.backward()
            self.optimizer.step()
            return loss.detach()
        with self.autocast():
            loss = self.loss_fn(outputs(self.spec, self.forward(xb), yb), yb)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()


@dataclass
class EpochResult:
    samples: int
    steps: int
    seconds: float
    cpu_seconds: float
    last_loss: float
    mean_loss: float
    nonfinite_step: int | None
    finite: bool
    skipped_steps: int | None = None  # updates the GradScaler skipped (an inf/NaN gradient); None: no scaler


def train_epoch(trainer: Trainer, batches: Iterable[Batch], max_steps: int) -> EpochResult:
    """Time one pass over `batches`, loader iteration included: that is part of the path."""
    trainer.model.train()
    device = trainer.device
    # Each step's loss is copied, on the device (no host sync), into its slot of one buffer made before
    # the clock; kept as separate tensors, each took its own 512-byte block of CUDA's caching allocator:
    # 1 MiB of an epoch of 2,048 steps (B=32 on 65,536 rows), which the first GPU run (an H200) measured
    # as the epoch's own memory, over the formulas' bound. The copy is one small kernel a step on both
    # sides, its cost lost in the steps' own spread on the H200 and on the CPU (docs/gpu.md).
    losses = torch.full((max_steps,), math.nan, device=device)
    slots = losses.unbind()
    sizes: list[int] = []
    steps = 0
    scaler = trainer.scaler if trainer.scaler.is_enabled() else None
    # Skipped updates, counted with no work inside the loop where the optimizer counts its steps
    # (Adam, AdamW: a skipped update leaves the count as it was); else (SGD) from the scale after
    # each update, kept on the device (no host sync per step): a skipped update halves it.
    counted = None if scaler is None else optimizer_steps(trainer.optimizer)
    scales = None if scaler is None or counted is not None else torch.empty(max_steps + 1, device=device)
    if scales is not None:
        trainer.prime_scaler()
        scales[:1] = scaler._scale
    synchronize(device)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for xb, yb in batches:
        if steps == max_steps:
            raise ValueError(f"an epoch took more than the {max_steps} steps it may take")
        slots[steps].copy_(trainer.step(xb, yb))
        if scales is not None:
            scales[steps + 1 : steps + 2] = scaler._scale
        sizes.append(xb.shape[0])
        steps += 1
    synchronize(device)
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
    samples = sum(sizes)
    skipped = None
    if counted is not None:
        skipped = steps - (optimizer_steps(trainer.optimizer) - counted)
    elif scales is not None:
        skipped = skipped_updates(scales[: steps + 1].cpu(), scaler.get_backoff_factor())
    loss_values = losses[:steps].cpu()
    bad = (~torch.isfinite(loss_values)).nonzero()
    nonfinite_step = int(bad[0]) if len(bad) else None
    params_finite = all(bool(torch.isfinite(p).all()) for p in trainer.model.parameters())
    mean_loss = float((loss_values * torch.tensor(sizes, dtype=torch.float32)).sum()) / max(samples, 1)
    return EpochResult(
        samples,
        steps,
        seconds,
        cpu_seconds,
        float(loss_values[-1]) if steps else math.nan,
        mean_loss,
        nonfinite_step if nonfinite_step is not None else (None if params_finite else steps - 1),
        nonfinite_step is None and params_finite,
        skipped,
    )


def optimizer_steps(optimizer: torch.optim.Optimizer) -> int | None:
    """Return the updates the optimizer has taken (its state's step count: Adam's, AdamW's), None where it
    keeps none (SGD without momentum) or has no state yet (Trainer.prime makes it)."""
    counts = [state["step"] for state in optimizer.state.values() if "step" in state]
    if not counts:
        return None
    return int(counts[0]) if torch.is_tensor(counts[0]) else counts[0]


def skipped_updates(scales: torch.Tensor, backoff: float) -> int:
    """Count the updates a GradScaler skipped, from its scale before the first and after each: a
    skipped update (an inf or NaN gradient) multiplies the scale by the backoff factor (< 1); a
    taken one keeps it or grows it (growth_factor > 1, every growth_interval taken steps)."""
    if not 0 < backoff < 1:
        raise ValueError(f"a GradScaler backs off by a factor in (0, 1), got {backoff}")
    return int((scales[1:] < scales[:-1]).sum())


@dataclass
class EvalResult:
    samples: int
    seconds: float
    loss: float
    accuracy: float
    output_dtype: str = "none"  # the model's output dtype, under the variant's autocast (conditions.DTYPE_LABELS)


def evaluate(trainer: Trainer, batches: Iterable[Batch]) -> EvalResult:
    """Evaluate over all samples in one pass.

    One pass under `torch.no_grad()`; loss and accuracy (bce: at probability 0.5, ce: the argmax;
    mse: none, NaN) over all samples."""
    model, device = trainer.model, trainer.device
    model.eval()
    samples = 0
    loss_sum = torch.zeros((), device=device)
    hits = torch.zeros((), device=device, dtype=torch.int64)
    logits = None
    synchronize(device)
    t0 = time.perf_counter()
    with torch.no_grad(), trainer.autocast():
        for xb, yb in batches:
            logits = trainer.forward(xb)
            loss_sum += trainer.loss_fn(outputs(trainer.spec, logits, yb), yb).float() * xb.shape[0]
            right = correct(trainer.spec, logits, yb)
            if right is not None:
                hits += right
            samples += xb.shape[0]
    synchronize(device)
    seconds = time.perf_counter() - t0
    accuracy = int(hits) / max(samples, 1) if trainer.spec.loss != "mse" else math.nan
    return EvalResult(
        samples,
        seconds,
        float(loss_sum) / max(samples, 1),
        accuracy,
        dtype_label([] if logits is None else [logits.dtype]),
    )


@dataclass
class WarmupResult:
    steps: int
    first_step_s: float
    steady_step_s: float
    first_step_end: float  # time.perf_counter() when the first step had finished (device synchronised)


def warm_up(
    model: nn.Module,
    spec: ModelSpec,
    update: Step,
    device: torch.device,
    batches: Iterable[Batch],
    steps: int,
    eval_batches: Iterable[Batch] | None = None,
) -> WarmupResult:
    """Warm up a copy of `model` and time its first step.

    Run `steps` updates on a copy of `model`, cycling through `batches`, then (given
    `eval_batches`) an evaluation pass over at most `steps` of them: the timed evaluation's
    first-call costs (lazy kernel loading, no-grad and autocast paths, its allocations) are paid
    here too, not inside the first variant's timed pass.

    A compiled variant warms up over at least one whole epoch and evaluation pass: every batch shape
    (the partial last batch's too) is compiled here, so no compilation happens inside a timed epoch;
    the first step carries the compilation, a one-off cost the record keeps.

    Returns the first step's time and the median of the last half, so the report can show
    how large the first-call cost was that the warm-up kept out of the timed epoch.
    """
    with compiling(update):
        trainer = Trainer(copy.deepcopy(model), spec, device, update)
        trainer.model.train()  # the timed epoch's mode, whatever the model was left in
        times: list[float] = []
        first_end = math.nan
        whole_epoch = not update.compiled  # only a compiled variant needs every batch shape seen
        while len(times) < steps or not whole_epoch:
            for xb, yb in batches:
                synchronize(device)
                t0 = time.perf_counter()
                trainer.step(xb, yb)
                synchronize(device)
                t1 = time.perf_counter()
                times.append(t1 - t0)
                if len(times) == 1:
                    first_end = t1
                if len(times) >= steps and whole_epoch:
                    break
            else:
                whole_epoch = True
        if eval_batches is not None:
            evaluate(trainer, eval_batches if update.compiled else itertools.islice(eval_batches, steps))
        return WarmupResult(len(times), times[0], statistics.median(times[len(times) // 2 :]), first_end)
