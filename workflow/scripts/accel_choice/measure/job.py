"""The envelope of every timing job (each rule that takes the whole `timing_slot`), in one place.

A timing job opens it just before its measurement and closes it by writing its record:

    with timing_job(snakemake.output[0], seed=p.seed) as envelope:
        records, sentinel = training.measure_training_job(...)
        envelope.finish(TrainingJob, records=tuple(records), sentinel=sentinel)

What the envelope adds to the record, where the record's type has the field:
- `wall_interval`: `time.time()` when the envelope opened and when the record is made - what lets a
  test prove that no two timing jobs overlapped;
- `environment`: `io.envinfo.quick_environment(seed)`, described after the measurement (asking torch
  about a GPU first would start CUDA before a job has timed its context start-up);
- `sentinel` and `foreign_cpu_share`, only for a job that asks the envelope for them (`sentinel=device`,
  `meter=True`): the drift sentinel (measure.sentinel) made and timed once when the envelope opens, and
  the foreign-CPU meter (measure.contention) started before it, stopped when the record is made. Jobs
  that time the sentinel or meter a narrower window (after a warm-up, around each size) keep them in
  their measurement and pass the readings as fields.

The record is written atomically (io.atomic): a job that fails before `write` leaves no file, and one that
ends without writing its record fails. `tests/test_envelope.py` checks that every timing rule's script
goes through here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import torch

from accel_choice.io import atomic, envinfo
from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.measure.sentinel import Sentinel

R = TypeVar("R")


class Envelope:
    """One timing job's wall interval, environment, and optionally its sentinel and foreign-CPU meter.

    `output`: the record file `write` writes (None: the envelope only makes records, as in tests).
    """

    def __init__(
        self,
        output: str | os.PathLike[str] | None = None,
        *,
        seed: int | None,
        sentinel: torch.device | None = None,
        meter: bool = False,
    ):
        self.output = output
        self.seed = seed
        self.written = False
        self.started = time.time()
        self.meter = ForeignCpuMeter().start() if meter else None
        self.sentinel = Sentinel(sentinel) if sentinel is not None else None
        if self.sentinel is not None:
            self.sentinel.tick()

    def fields(self, kind: type[Any]) -> dict[str, Any]:
        """Read the envelope's fields of a record of type `kind` now (the wall interval ends here)."""
        names = {field.name for field in dataclasses.fields(kind)}
        made: dict[str, Any] = {}
        if "wall_interval" in names:
            made["wall_interval"] = (self.started, time.time())
        if self.meter is not None:
            made["foreign_cpu_share"] = self.meter.stop().share
        made["environment"] = envinfo.quick_environment(self.seed)
        if self.sentinel is not None:
            made["sentinel"] = self.sentinel.readings()
        missing = sorted(set(made) - names)
        if missing:
            raise TypeError(f"{kind.__name__} has no field {', '.join(missing)} for the timing job's envelope")
        return made

    def record(self, kind: type[R], **fields: Any) -> R:
        """Return a `kind` record of `fields` and the envelope's own (which `fields` must not name)."""
        made = self.fields(kind)
        twice = sorted(set(made) & set(fields))
        if twice:
            raise TypeError(f"{', '.join(twice)}: set by the timing job's envelope, not by the job")
        return kind(**fields, **made)

    def write(self, record: Any) -> None:
        """Write the job's record, atomically, once."""
        if self.output is None:
            raise ValueError("this envelope has no output file")
        if self.written:
            raise RuntimeError(f"{self.output}: the timing job's record is written once")
        atomic.write_record(self.output, record)
        self.written = True

    def finish(self, kind: type[R], **fields: Any) -> R:
        """`record` then `write`: the job's record made and written."""
        made = self.record(kind, **fields)
        self.write(made)
        return made


@contextlib.contextmanager
def timing_job(
    output: str | os.PathLike[str],
    *,
    seed: int | None,
    sentinel: torch.device | None = None,
    meter: bool = False,
) -> Iterator[Envelope]:
    """Open the envelope of a timing job that writes its record to `output` (see the module's text)."""
    envelope = Envelope(output, seed=seed, sentinel=sentinel, meter=meter)
    yield envelope
    if not envelope.written:
        raise RuntimeError(f"the timing job ended without writing its record {output}")
