"""What a timing job writes of each variant: its record, checked against section 28.3.5's invariants."""

from __future__ import annotations

from typing import Any

from accel_choice.analyze import theory
from accel_choice.measure.finite import finite_or_none
from accel_choice.records.training import Invariants, TrainingRecord


class InvariantError(AssertionError):
    """A timing record broke an invariant: the measurement, not the machine, is wrong."""


def check_invariants(record: dict[str, Any], rows: int) -> dict[str, bool]:
    """Check section 28.3.5's invariants: samples == n every epoch, and the steps of an epoch.

    Its second, samples_per_s == samples / epoch_s, holds by construction: a record stores the raw epochs, and
    its throughput is read from them (records.training.EpochMeasurement)."""
    checks = {
        "samples_eq_rows": record["samples"] == rows,
        "eval_samples_eq_rows": record["eval_samples"] == rows,
        "steps_eq_ceil_rows_over_batch": record["steps"] == theory.steps_per_epoch(rows, record["batch_size"]),
    }
    broken = [name for name, ok in checks.items() if not ok]
    if broken:
        raise InvariantError(
            f"batch_size={record['batch_size']} loader={record['loader']}: invariant(s) broken: {', '.join(broken)} "
            f"(samples={record['samples']}, rows={rows}, steps={record['steps']})"
        )
    return checks


def training_record(measured: dict[str, Any], **job: Any) -> TrainingRecord:
    """Return the record of one measured variant (`measure_interleaved`) with what only its job knows (repeat,
    position, start-up, foreign CPU, whether all variants ended on the same weights). Non-finite losses become null."""
    losses = ("eval_loss", "eval_accuracy", "final_loss", "mean_train_loss")
    apart = (*losses, "invariants", "loadavg_before", "loadavg_after")
    return TrainingRecord(
        **{key: value for key, value in measured.items() if key not in apart},
        **{key: finite_or_none(measured[key]) for key in losses},
        loadavg_before=tuple(measured["loadavg_before"]),
        loadavg_after=tuple(measured["loadavg_after"]),
        invariants=Invariants(**measured["invariants"]),
        **job,
    )
