"""The GPU acceptance's record (measure.acceptance; docs/gpu.md): what ran, what was checked, passed or not."""

from __future__ import annotations

from accel_choice.records import Count, NonNegativeSeconds, PositiveCount, record
from accel_choice.records.environment import Environment
from accel_choice.records.loads import VisibleDevices


@record
class Check:
    """One acceptance check: its name, whether it held, and what was found."""

    name: str
    passed: bool
    found: str


@record
class VariantRun:
    """One variant's measured epoch in the acceptance (the timing jobs' record, in short)."""

    precision: str
    placement: str
    batch_size: PositiveCount
    compiled: bool
    compile_mode: str | None  # torch.compile's mode of a compiled variant; null for an eager one
    graph_breaks: Count | None  # the graph breaks dynamo met compiling it (its job's); null for an eager one
    epoch_ms: float
    samples_per_s: float
    finite: bool
    epoch_memory_bytes: Count | None  # CUDA's allocator: the epoch's own peak; null on a CPU
    memory_bound_bytes: Count  # the formulas' bound for this variant (analyze.theory)


@record(schema="gpu-acceptance", version=3)
class AcceptanceReport:
    """gpu_acceptance.json: one run of `python workflow/scripts/gpu_acceptance.py`."""

    device: str
    rows: PositiveCount
    seconds: NonNegativeSeconds  # the whole acceptance, wall clock
    probe: VisibleDevices
    runs: tuple[VariantRun, ...]
    checks: tuple[Check, ...]
    environment: Environment

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def __post_init__(self) -> None:
        names = [check.name for check in self.checks]
        if len(set(names)) != len(names):
            raise ValueError(f"a check is named twice: {names}")
