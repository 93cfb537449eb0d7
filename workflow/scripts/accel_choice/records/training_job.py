"""timing/cpu/rep<r>.json and timing/gpu/bs<B>.rep<r>.json: one timing job's records, as its process wrote them."""

from __future__ import annotations

from typing import Any, ClassVar

from accel_choice.records import record
from accel_choice.records.environment import Environment
from accel_choice.records.sentinel import ReferenceStepReadings, SentinelReadings
from accel_choice.records.training import TrainingRecord
from accel_choice.records.upgrades import one_thread_count, without_beside, without_derived, without_rehearsal

# time.time() may be stepped by the clock's synchronisation during a job; process CPU time is counted in ticks.
WALL_CLOCK_SLACK_S = 0.5
CPU_CLOCK_SLACK_S = 0.01


@record(schema="training-job", version=16)
class TrainingJob:
    """timing/cpu/rep<r>.json (every thread count, batch size and loader) or timing/gpu/bs<B>.rep<r>.json
    (one batch size): the variants timed in one process, interleaved, with the job's drift sentinel."""

    records: tuple[TrainingRecord, ...]
    wall_interval: tuple[float, float]  # time.time() at the start and end: no two timing jobs overlap
    environment: Environment
    sentinel: SentinelReadings
    probe: dict[str, Any] | None = None  # GPU jobs: what torch saw on the job's node
    reference_step: ReferenceStepReadings | None = None  # CPU jobs: the fixed training step per round
    beside: tuple[TrainingRecord, ...] = ()  # GPU jobs: the CPU's fast path, timed in the same rounds
    UPGRADES: ClassVar = {12: without_derived, 13: one_thread_count, 14: without_beside, 15: without_rehearsal}

    def __post_init__(self) -> None:
        shared, keys = {(r.device, r.repeat) for r in self.records}, [r.key for r in self.records]
        if len(shared) > 1 or len(set(keys)) != len(keys):
            raise ValueError(f"one job's records share a device and repeat, each variant once: {shared}")
        if self.beside:  # a GPU job's: its repeat and batch size (they name its job), on the CPU, each variant once
            cpu, keys = {(r.device, r.repeat, r.batch_size) for r in self.beside}, [r.key for r in self.beside]
            own = {("cpu", r.repeat, r.batch_size) for r in self.records}
            if cpu != own or len(set(keys)) != len(keys):
                raise ValueError(
                    f"beside: the CPU's records of the job's repeat and batch size, each variant once, got {sorted(cpu)}"
                )
        # What one process can do in its wall interval: a record edited by hand rarely still adds up.
        start, end = self.wall_interval
        every = (*self.records, *self.beside)
        timed = sum(sum(r.epoch_s_each) + sum(r.eval_s_each) + (r.reference_epoch_s or 0.0) for r in every)
        step, rounds = self.reference_step, {len(r.epoch_s_each) for r in self.records}
        timed += sum(step.seconds) if step is not None else 0.0
        if step is not None and rounds != {len(step.seconds)}:
            raise ValueError(f"{len(step.seconds)} reference step timings for rounds of {rounds}")
        if not start <= end or timed > end - start + WALL_CLOCK_SLACK_S:
            raise ValueError(
                f"the timed epochs and evaluations add up to {timed:.6g} s, more than the job's wall interval "
                f"({end - start:.6g} s): a damaged record"
            )
        cores = self.environment.affinity_cores or self.environment.logical_cores
        for r in every:
            if cores and r.epoch_cpu_s > r.epoch_s * cores + CPU_CLOCK_SLACK_S:
                raise ValueError(
                    f"records[{r.position_in_job}]: epoch_cpu_s {r.epoch_cpu_s!r} is more CPU time than {cores} "
                    f"core(s) give in its wall epoch_s {r.epoch_s!r}: a damaged record"
                )
