"""Count what one training step dispatches: every aten op, and those that launch work on a device.

A step's cost on a GPU is mostly the host's: Python, autograd and one launch per kernel, a few
microseconds each (docs/planner.md). The planner therefore needs how many ops a model's step
dispatches. They are counted on the CPU, where every workflow runs, with a TorchDispatchMode around
one warm step of the project's own Trainer (fused Adam, the loss kept in a slot as the timed epoch
keeps it): the dispatcher sees the same ops whatever the device. Views (`t`, `view`, `detach`) and the
profiler's marks launch no kernel; every other op is counted as one kernel, a count the GPU jobs'
profiler checks (measure.gpu_checks).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from accel_choice.measure.steps import Trainer


@dataclass(frozen=True)
class OpCount:
    """One step's dispatched aten ops, and how many of them launch work (kernels)."""

    ops: int
    kernels: int
    by_op: dict[str, int]


class _Counting(TorchDispatchMode):
    """Count every aten op the dispatcher runs while active (forward, backward and the optimizer)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[str] = Counter()
        self.launching = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen[str(func)] += 1
        if not (func.is_view or func.namespace == "profiler"):
            self.launching += 1
        return func(*args, **(kwargs or {}))


def count_step(trainer: Trainer, xb: torch.Tensor, yb: torch.Tensor) -> OpCount:
    """Count the ops of one update of `trainer` on (xb, yb), its loss copied into a slot as train_epoch does.

    The trainer is stepped once first (untimed, uncounted), so lazily made state is not counted;
    both updates change its weights, so count on a throw-away copy of a model, not a timed one."""
    slots = torch.zeros(2, device=trainer.device).unbind()
    slots[0].copy_(trainer.step(xb, yb))
    with _Counting() as counting:
        slots[1].copy_(trainer.step(xb, yb))
    return OpCount(ops=sum(counting.seen.values()), kernels=counting.launching, by_op=dict(counting.seen))
