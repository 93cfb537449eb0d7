"""One timing job: warm every variant up, then time `epochs` training epochs and evaluation passes of each,
in interleaved rounds (A B, B A, ...), the drift sentinel (measure.sentinel) timed at the start, between rounds
and at the end, a CPU job's fixed reference step (measure.reference.ReferenceStep) after each round's tick.
Every epoch starts from the seeded weights on the same batches; the record keeps every epoch.

A variant is records.training.Variant, the one name of what is measured: a CPU job runs every thread count
(measure.threads), batch size and loader in fp32 on host data, each beside its plain-loop reference (measure.reference); a GPU job runs fp32/fp16/bf16
with data resident on the device or streamed from the host batch by batch, its eager fp32 resident variant
beside its plain loop too and, after the epochs, checked against its launch floor (measure.gpu_checks).
What the loop needs beyond it (the GradScaler setting, the compiled forward) is its `steps.Step` (`steps.step_of`);
`steps.cpu_variants` and `steps.gpu_variants` list a job's variants. Discipline (torch.utils.benchmark's, per epoch):
`time.perf_counter()` around the loop, the device synchronized before each read; a warm-up per variant on a
throw-away copy of its model (first-call costs paid before the clock, the timed model from the seeded weights);
the load average around a variant's epochs, other processes' CPU (`foreign_cpu_share`), the process CPU time and
(CUDA) the peak memory; section 28.3.5's invariants on every record; non-finite losses caught without a host sync
per step (each step's loss into a device buffer read after the clock stops; a non-finite gradient makes
non-finite weights, hence losses, which are checked; a GradScaler only skips the step).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from accel_choice.analyze import theory
from accel_choice.measure.contention import ForeignCpuMeter, load_average
from accel_choice.measure.devices import (
    allocated_memory_bytes,
    context_startup_seconds,
    matmul_precision,
    peak_memory_bytes,
    reset_peak_memory,
)
from accel_choice.measure.conditions import dtype_label
from accel_choice.measure.model import build, check_targets, optimizer_impl, state_sha256, targets
from accel_choice.measure.compile_counts import graph_breaks
from accel_choice.measure.gpu_checks import launch_checks
from accel_choice.measure.heap import frozen_heap
from accel_choice.measure.finite import check_some_step_finite
from accel_choice.measure.invariants import InvariantError, check_invariants, training_record
from accel_choice.measure.placement import placed, variant_batches
from accel_choice.measure.reference import Reference, ReferenceStep, has_reference
from accel_choice.measure.rehearsal import rehearse
from accel_choice.measure.sentinel import Sentinel
from accel_choice.measure.threads import at_threads, switch_to, use_threads
from accel_choice.measure.steps import (
    Step,
    Trainer,
    WarmupResult,
    compile_mode_of,
    compiled_already,
    evaluate,
    step_of,
    train_epoch,
    warm_up,
)
from accel_choice.records.model import ModelSpec
from accel_choice.records.sentinel import SentinelReadings
from accel_choice.records.launch import launch_checked
from accel_choice.records.training import TrainingRecord, Variant, variant_fields


@dataclass
class Prepared:
    """A variant warmed up and ready to time: every epoch starts from `initial_sha`'s weights."""

    variant: Variant
    update: Step
    x: torch.Tensor
    y: torch.Tensor
    seed: int
    spec: ModelSpec
    initial_sha: str
    warm: WarmupResult

    @property
    def device(self) -> torch.device:
        return torch.device(self.variant.device)


def prepare_variant(
    variant: Variant,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    grad_scaler: bool,
    seed: int,
    spec: ModelSpec,
    warmup_steps: int,
    compile_mode: str = "default",
) -> Prepared:
    """Warm a variant up on a throw-away copy of its seeded model (x, y are host tensors, y as
    measure.model.targets shapes it), on the variant's device at the variant's thread count."""
    use_threads(variant.threads)
    update = step_of(variant, grad_scaler=grad_scaler, compile_mode=compile_mode)
    device = torch.device(variant.device)
    data = placed(variant, x, y)
    model = build(spec, x.shape[1:], seed).to(device)
    warm = warm_up(
        model,
        spec,
        update,
        device,
        variant_batches(variant, x, y, data, shuffle=True, seed=seed + 1),
        warmup_steps,
        eval_batches=variant_batches(variant, x, y, data, shuffle=False, seed=seed),
    )
    return Prepared(
        variant=variant, update=update, x=x, y=y, seed=seed, spec=spec, initial_sha=state_sha256(model), warm=warm
    )


def time_epoch(prepared: Prepared) -> dict[str, Any]:
    """Time one epoch and evaluation pass from the seeded initial weights and the same batches.

    The resident copy of the data and the model exist only during this epoch. The peak counts
    everything allocated, the cuBLAS workspace and whatever else the job holds included; what was
    allocated when the epoch began (the baseline) taken from it is the epoch's own memory, which
    the report compares with the formulas' bound.
    """
    p, device = prepared, prepared.device
    reset_peak_memory(device)
    baseline = allocated_memory_bytes(device)
    data = placed(p.variant, p.x, p.y)
    model = build(p.spec, p.x.shape[1:], p.seed).to(device)
    if state_sha256(model) != p.initial_sha:
        raise InvariantError(f"{p.variant.name}: an epoch did not start from the seeded initial weights")
    trainer = Trainer(model, p.spec, device, p.update)
    trainer.prime()  # Adam's state and the scaler's exist before the clock starts
    # A few untimed updates warm what the round's other variants left cold; all they change is put back.
    with compiled_already(p.update):  # the warm-up compiled everything: a recompilation here is an error too
        rehearsed = rehearse(trainer, variant_batches(p.variant, p.x, p.y, data, shuffle=True, seed=p.seed))
    # The rehearsal's copies of the weights and state are freed: the peak is the epoch's again, from what is held now.
    reset_peak_memory(device)
    if state_sha256(model) != p.initial_sha:
        raise InvariantError(f"{p.variant.name}: priming the optimizer or the rehearsal changed the initial weights")
    # The same loader seed for every variant and epoch: identical batches, so identical work.
    train_batches = variant_batches(p.variant, p.x, p.y, data, shuffle=True, seed=p.seed)
    eval_batches = variant_batches(p.variant, p.x, p.y, data, shuffle=False, seed=p.seed)
    with compiled_already(p.update):  # a compiled variant compiled everything in its warm-up
        epoch = train_epoch(trainer, train_batches, theory.steps_per_epoch(p.x.shape[0], p.variant.batch_size))
        evaluation = evaluate(trainer, eval_batches)
    peak = peak_memory_bytes(device)
    return {
        "epoch": epoch,
        "evaluation": evaluation,
        "peak_memory_bytes": peak,
        "epoch_memory_bytes": None if peak is None or baseline is None else peak - baseline,
        "final_weights_sha256": state_sha256(model),
        "optimizer_impl": optimizer_impl(trainer.optimizer),
        "param_dtype": dtype_label([p.dtype for p in model.parameters()]),
        "output_dtype": evaluation.output_dtype,
        "matmul_precision": torch.get_float32_matmul_precision(),
        "rehearsal_steps": rehearsed,
    }


def epoch_order(variants: Sequence[Any], epochs: int, repeat: int) -> list[int]:
    """Return the indices of `variants` for `epochs` interleaved rounds: A B, B A, A B, ... (balanced against a
    linear drift inside the job), starting the other way round in odd repeats."""
    forward = list(range(len(variants)))
    rounds = [forward if (k + repeat) % 2 == 0 else forward[::-1] for k in range(epochs)]
    return [index for round_ in rounds for index in round_]


def measure_interleaved(
    prepared: Sequence[Prepared],
    epochs: int,
    repeat: int,
    sentinel: Sentinel | None = None,
    references: Sequence[Reference | None] | None = None,
    reference_step: ReferenceStep | None = None,
) -> list[dict[str, Any]]:
    """Time every variant `epochs` times, rounds interleaved; the sentinel ticks at the start, between rounds
    and at the end. One dict per variant (a record's fields), every epoch kept. `references`, one per
    variant (None: none): each is timed once, in the middle round, right after its variant's epoch.
    `reference_step`: the fixed reference step, timed once at the end of each round, after the tick."""
    timed: list[list[dict[str, Any]]] = [[] for _ in prepared]
    reference_s: list[float | None] = [None for _ in prepared]
    middle = epochs // 2
    first_seen: list[int] = []
    loads: list[list[list[float]]] = [[] for _ in prepared]  # the load average before the first epoch, after the last
    with frozen_heap():  # no full collection of the job's heap inside a timed round (measure.heap)
        if sentinel is not None:
            _tick(sentinel)
        for step, index in enumerate(epoch_order(prepared, epochs, repeat)):
            if not timed[index]:
                first_seen.append(index)
                loads[index].append(load_average())
            # At its own thread count (its plain loop below too), settled by untimed epochs where the count switched.
            switch_to(prepared[index].variant.threads, lambda: time_epoch(prepared[index]))
            timed[index].append(time_epoch(prepared[index]))
            if references is not None and references[index] is not None and len(timed[index]) == middle + 1:
                reference_s[index] = references[index].time()
            if len(timed[index]) == epochs:
                loads[index].append(load_average())
            if (step + 1) % len(prepared) == 0:
                if reference_step is not None:  # a CPU job: its tick and reference step run on one thread, settled
                    switch_to(reference_step.threads, reference_step.rehearse)
                if sentinel is not None:
                    _tick(sentinel)
                if reference_step is not None:  # after the tick, outside every variant's epoch
                    reference_step.time()
    return [
        {**_variant_result(p, runs, first_seen.index(i), loads[i]), "reference_epoch_s": reference_s[i]}
        for i, (p, runs) in enumerate(zip(prepared, timed))
    ]


def _tick(sentinel: Sentinel) -> None:
    """Tick the sentinel; where its work ran on the CPU (on one thread), leave torch at one thread.

    The next variant at another count then settles first (switch_to), as after a CPU job's reference step."""
    sentinel.tick()
    if sentinel.ticks_on_one_cpu_thread:
        use_threads(1)


def _variant_result(p: Prepared, runs: list[dict[str, Any]], position: int, loads: list[list[float]]) -> dict[str, Any]:
    epochs = [run["epoch"] for run in runs]
    evaluations = [run["evaluation"] for run in runs]
    last, last_eval = epochs[-1], evaluations[-1]
    peaks = [run["peak_memory_bytes"] for run in runs if run["peak_memory_bytes"] is not None]
    own = [run["epoch_memory_bytes"] for run in runs if run["epoch_memory_bytes"] is not None]
    finals = {run["final_weights_sha256"] for run in runs}
    record: dict[str, Any] = {
        **variant_fields(p.variant),
        "grad_scaler": p.update.scaler,
        **_one_each(runs, "matmul_precision", "optimizer_impl", "param_dtype", "output_dtype", "rehearsal_steps"),
        "samples": last.samples,
        "steps": last.steps,
        "epoch_s_each": tuple(e.seconds for e in epochs),
        "epoch_cpu_s": statistics.median(e.cpu_seconds for e in epochs),
        "eval_s_each": tuple(e.seconds for e in evaluations),
        "eval_samples": last_eval.samples,
        "eval_loss": last_eval.loss,
        "eval_accuracy": last_eval.accuracy,
        "final_loss": last.last_loss,
        "mean_train_loss": last.mean_loss,
        "finite": all(e.finite for e in epochs),
        "nonfinite_step": next((e.nonfinite_step for e in epochs if not e.finite), None),
        "scaler_skipped_steps": None if not p.update.scaler else max(e.skipped_steps or 0 for e in epochs),
        "peak_memory_bytes": max(peaks) if peaks else None,
        "epoch_memory_bytes": max(own) if own else None,
        "warmup_steps": p.warm.steps,
        "warmup_first_step_s": p.warm.first_step_s,
        "warmup_steady_step_s": p.warm.steady_step_s,
        "loadavg_before": loads[0],
        "loadavg_after": loads[1],
        "initial_weights_sha256": p.initial_sha,
        # Every epoch ran the same batches from the same weights: one final state, or the work differed.
        "final_weights_sha256": runs[-1]["final_weights_sha256"],
        "final_weights_each": finals,
        "position_in_job": position,
    }
    record["invariants"] = check_invariants(record, p.x.shape[0])
    return record


def _one_each(runs: list[dict[str, Any]], *keys: str) -> dict[str, Any]:
    """The value every epoch of a variant ran with, for each of `keys`; a change between epochs is a bug."""
    found = {key: {run[key] for run in runs} for key in keys}
    changed = {key: sorted(values) for key, values in found.items() if len(values) != 1}
    if changed:
        raise InvariantError(f"the epochs of one variant ran with different settings: {changed}")
    return {key: values.pop() for key, values in found.items()}


def measure_training_job(
    x: torch.Tensor,
    y: torch.Tensor,
    variants: Sequence[Variant],
    *,
    repeat: int,
    seed: int,
    spec: ModelSpec,
    warmup_steps: int,
    grad_scaler: bool = True,
    epochs: int = 1,
    precision: str = "highest",
    compile_mode: str = "default",
    reference_step: ReferenceStep | None = None,
    beside: Sequence[Variant] = (),
) -> tuple[list[TrainingRecord], SentinelReadings]:
    """Time a job: every variant (one device; a CPU job's thread counts and batch sizes, a GPU job's one) warmed up, `epochs` rounds
    of one epoch each, interleaved over all of them (epoch_order), the sentinel and foreign-CPU meter around the
    rounds; the records and the sentinel's readings. `grad_scaler`: fp16 variants use a GradScaler;
    `precision`: torch's float32 matmul precision for the whole job; `compile_mode` the compiled variants'.
    `reference_step` (a CPU job's, made by its caller) is timed once per round; its readings the caller's.
    `beside`: CPU variants timed in the same rounds, after `variants` in each (a GPU job's CPU, so that their
    ratio pairs job by job); their records follow those of `variants`, each group in its order in the job."""
    on = {v.device for v in variants}
    if len(on) != 1:
        raise ValueError(f"a timing job times its variants on one device, got {sorted(on)}")
    if any(v.device != "cpu" for v in beside):
        raise ValueError(f"a job times CPU variants beside its device's, got {sorted({v.device for v in beside})}")
    variants = [*variants, *beside]
    outside = [v.batch_size for v in variants if not 1 <= v.batch_size <= len(x)]
    if outside:
        raise ValueError(f"batch size {outside[0]} must be between 1 and the data's {x.shape[0]} rows")
    (device,) = on
    if epochs < 1:
        raise ValueError(f"epochs per job must be at least 1, got {epochs}")
    target = torch.device(device)
    started = time.perf_counter()
    context = context_startup_seconds(target)
    check_targets(spec, y)
    y = targets(spec, y)
    # The whole job at one precision, warm-up included: its kernels are the timed ones. Each variant runs at its
    # own thread count (a CPU job times them all); torch's count is the job's again afterwards.
    with matmul_precision(precision), at_threads(torch.get_num_threads()):
        breaks = graph_breaks()  # compiled frames are cached per process: the job's breaks, in whichever warm-up
        options = dict(
            grad_scaler=grad_scaler, seed=seed, spec=spec, warmup_steps=warmup_steps, compile_mode=compile_mode
        )
        prepared = [prepare_variant(v, x, y, **options) for v in variants]
        breaks = graph_breaks() - breaks
        # Other processes' CPU while the epochs are timed (after the warm-up: torch.compile's workers,
        # compiling a compiled variant's kernels there, are no contamination of them).
        meter = ForeignCpuMeter().start()
        # The one-off start-up: from before the first device call (context, cuBLAS handles and workspace, lazy
        # kernels, the first model, placement, first allocations, the optimizer's imports) to the synchronised
        # end of the first variant's first warm-up step, less one steady step; each later variant adds what its
        # own first step paid beyond a steady one (its precision's kernels, the scaler's, pinning). The
        # sentinel's first matmuls come after.
        first = prepared[0].warm
        process = max(first.first_step_end - started - first.steady_step_s, 0.0)
        startups = [process] + [process + max(p.warm.first_step_s - p.warm.steady_step_s, 0.0) for p in prepared[1:]]
        if reference_step is not None:
            reference_step.prepare()  # after the start-up, so its first calls take none of it away
        # The plain loop each eager fp32 host or resident variant is checked against (measure.reference).
        references = [Reference(v, x, y, spec, seed) if has_reference(v) else None for v in variants]
        sentinel = Sentinel(target)
        measured = measure_interleaved(prepared, epochs, repeat, sentinel, references, reference_step)
        # After every epoch, nothing timed beside it: the eager fp32 resident step's launch floor and kernels.
        launches = [launch_checks(v, x, y, spec, seed) if launch_checked(v) else None for v in variants]
    for result, startup, p, launch in zip(measured, startups, prepared, launches):
        mode = compile_mode_of(p.update)
        result |= {"startup_s": startup, "compile_mode": mode, "graph_breaks": None if mode is None else breaks}
        result["launch"] = launch
    foreign = meter.stop()
    # Identical batches in identical order at one precision give identical weights, whatever the loader,
    # placement or epoch: the variants of one batch size did the same work (another takes other steps).
    # Compiled kernels may round differently: compared among themselves.
    weights: dict[tuple[str, str, bool, int, int], set[str]] = {}
    for result in measured:
        weights.setdefault(_same_work(result), set()).update(result.pop("final_weights_each"))
    own = len(variants) - len(beside)
    records = [
        training_record(
            result,
            repeat=repeat,
            context_startup_s=context if result["device"] == device else None,  # the CPU beside a GPU has none
            foreign_cpu_share=foreign.share,
            same_final_weights_across_variants=len(weights[_same_work(result)]) == 1,
        )
        for group in (measured[:own], measured[own:])
        for result in sorted(group, key=lambda r: r["position_in_job"])
    ]
    check_some_step_finite(records, spec)
    return records, sentinel.readings()


def _same_work(result: dict[str, Any]) -> tuple[str, str, bool, int, int]:
    """Return what makes two variants' steps the same to the bit: device, precision, compiled, batch size, threads."""
    return result["device"], result["precision"], result["compiled"], result["batch_size"], result["threads"]
