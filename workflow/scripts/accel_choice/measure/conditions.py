"""What a model's code may not change, and the dtypes a model computes in.

A timing job sets torch's conditions itself: its threads from the rule's `threads`, fp32 as the
default dtype, grad mode on, torch's float32 matmul precision from `timing.matmul_precision`. A
factory (or the module it lives in) that changes one of them would time something else than the
record says. `guarded` reads them before the user's code runs and after it returns, and names each
change in one line. `dtype_label` and `computed_dtypes` say what precision a model really computes in.
"""

from __future__ import annotations

import contextlib
import copy
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# How the records name a floating dtype (records.model.Dtype).
DTYPE_LABELS = {torch.float64: "fp64", torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def _default_device() -> str:
    """The device torch.set_default_device set, or "none". Set to "cpu" it still routes every factory
    call through a Python hook (20,000 adds took 0.082 s against 0.023 s, measured 2026-12-06), so "cpu" is
    not "none"."""
    context = getattr(getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None), "device_context", None)
    if context is None:
        return "none" if hasattr(torch, "_GLOBAL_DEVICE_CONTEXT") else str(torch.get_default_device())
    return str(context.device)


def _cudnn(name: str) -> Callable[[], Any]:
    return lambda: getattr(torch.backends.cudnn, name)


# Each condition: how a message names it, and how to read it now.
CONDITIONS: dict[str, Callable[[], Any]] = {
    "threads": torch.get_num_threads,
    "inter-op threads": torch.get_num_interop_threads,
    "default dtype": torch.get_default_dtype,
    "default device": lambda: _default_device(),
    "grad mode": torch.is_grad_enabled,
    "inference mode": torch.is_inference_mode_enabled,
    "anomaly detection": torch.is_anomaly_enabled,
    "deterministic algorithms": torch.are_deterministic_algorithms_enabled,
    "float32 matmul precision": torch.get_float32_matmul_precision,
    "CUDA matmul TF32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "cuDNN benchmark": _cudnn("benchmark"),
    "cuDNN deterministic": _cudnn("deterministic"),
    "cuDNN TF32": _cudnn("allow_tf32"),
    "CPU autocast": lambda: torch.is_autocast_enabled("cpu"),
}


def conditions() -> dict[str, Any]:
    """Torch's process-wide settings that a timing job sets itself, read now."""
    return {name: read() for name, read in CONDITIONS.items()}


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Say each setting that differs, in words: "set torch's threads to 7 (was 2)"."""
    return [
        f"set torch's {name} to {after[name]} (was {before[name]})" for name in before if after[name] != before[name]
    ]


@contextlib.contextmanager
def guarded(who: str, error: Callable[[str], Exception]) -> Iterator[None]:
    """Run the user's code inside; raise `error(line)` naming `who` and every setting it changed.

    Whatever the code did, raising or not, each changed setting is put back where torch lets a program
    set it (`restore`), so the process that catches the error runs as it did before."""
    before = conditions()
    try:
        yield
    finally:
        after = conditions()
        changed = changes(before, after)
        restore(before, after)
    if changed:
        raise error(
            f"config key model.factory: {who} {'; '.join(changed)}. A factory may only build the model: the "
            "workflow sets these itself (docs/own-model.md#what-a-model-may-do)"
        )


# How to put each setting back; inter-op threads (settable once per process) and inference mode (a
# context) cannot be.
SETTERS: dict[str, Callable[[Any], None]] = {
    "threads": torch.set_num_threads,
    "default dtype": torch.set_default_dtype,
    "default device": lambda device: torch.set_default_device(None if device == "none" else device),
    "grad mode": torch.set_grad_enabled,
    "anomaly detection": torch.autograd.set_detect_anomaly,
    "deterministic algorithms": torch.use_deterministic_algorithms,
    "float32 matmul precision": torch.set_float32_matmul_precision,
    "CUDA matmul TF32": lambda on: setattr(torch.backends.cuda.matmul, "allow_tf32", on),
    "cuDNN benchmark": lambda on: setattr(torch.backends.cudnn, "benchmark", on),
    "cuDNN deterministic": lambda on: setattr(torch.backends.cudnn, "deterministic", on),
    "cuDNN TF32": lambda on: setattr(torch.backends.cudnn, "allow_tf32", on),
    "CPU autocast": lambda on: torch.set_autocast_enabled("cpu", on),
}


def restore(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Put back each setting that differs between `before` and `after` and that torch lets a program set."""
    for name, setter in SETTERS.items():
        if after[name] != before[name]:
            setter(before[name])


def dtype_label(dtypes: Iterator[torch.dtype] | list[torch.dtype] | set[torch.dtype]) -> str:
    """Label the floating dtypes seen: "fp32" for one, "mixed: fp32, fp64" for several, "none" for none."""
    found = sorted({DTYPE_LABELS.get(d, str(d).removeprefix("torch.")) for d in dtypes if d.is_floating_point})
    if not found:
        return "none"
    return found[0] if len(found) == 1 else f"mixed: {', '.join(found)}"


class _DtypeCount(TorchDispatchMode):
    """Count the floating dtypes of every aten op's tensor outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[torch.dtype] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 (torch's signature)
        out = func(*args, **(kwargs or {}))
        for value in out if isinstance(out, (tuple, list)) else (out,):
            if torch.is_tensor(value) and value.is_floating_point():
                self.seen[value.dtype] += 1
        return out


def computed_dtypes(run: Callable[[], Any]) -> tuple[Any, Counter[torch.dtype]]:
    """Return what `run()` returns, and how many of the ops it dispatched made floating outputs of each dtype."""
    with _DtypeCount() as counter:
        result = run()
    return result, counter.seen


def held_dtypes(model: torch.nn.Module) -> dict[str, str]:
    """Return the dtypes of a model's parameters and floating buffers, as labels ("none": no floating buffer)."""
    return {
        "parameters": dtype_label([p.dtype for p in model.parameters()]),
        "buffers": dtype_label([b.dtype for b in model.buffers()]),
    }


def model_dtypes(model: torch.nn.Module, x: torch.Tensor) -> dict[str, str]:
    """Return the dtypes a copy of `model` holds and computes in on the batch `x`, in training mode, as labels.

    `compute`: the floating outputs of every op its forward dispatches (a model that casts its input to
    float64 shows here, whatever its parameters are)."""
    probe = copy.deepcopy(model).train()
    with torch.no_grad():
        out, seen = computed_dtypes(lambda: probe(x))
    return {
        **held_dtypes(probe),
        "output": dtype_label([out.dtype]) if torch.is_tensor(out) else "none",
        "compute": dtype_label(list(seen)),
    }


def precision_of(who: str, model: torch.nn.Module, x: torch.Tensor) -> tuple[dict[str, str], str | None]:
    """Return the dtypes of `model` (`model_dtypes`), and why it cannot be timed (`precision_problem`) or None.

    Parameters and buffers are read first: a model that holds fp64 or fp16 weights is refused before a
    forward on fp32 data that would fail with a dtype mismatch naming no cause."""
    held = held_dtypes(model)
    problem = precision_problem(who, held)
    if problem:
        return held, problem
    dtypes = model_dtypes(model, x)
    return dtypes, precision_problem(who, dtypes)


def precision_problem(who: str, dtypes: dict[str, str]) -> str | None:
    """Why a model with these dtypes cannot be timed as the records label it, naming `who`; None if fp32.

    The workflow trains fp32 models: fp32 on the CPU, and on a GPU also bf16 or fp16 through autocast
    (timing.precisions), which lowers fp32 work and leaves fp64 work as it is."""
    wrong = {name: label for name, label in dtypes.items() if label not in ("fp32", "none")}
    if not wrong:
        return None
    found = ", ".join(f"{name} {label}" for name, label in wrong.items())
    return (
        f"config key model.factory: {who} computes in another precision than fp32 ({found}); the workflow "
        "times fp32 models and sets lower precisions itself (timing.precisions, through autocast): return a "
        "float32 model (no .double(), .half() or .to(dtype) in the factory or the forward)"
    )
