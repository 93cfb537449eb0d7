"""The full path of one epoch: load + convert + transfer + train + eval, per file format and training variant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accel_choice.records.training import FullPathRow, TrainingCell


def _field(row: Any, name: str) -> Any:
    # Load cells and transfer tables reach here as dicts until they are typed records too.
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def pageable_copy(transfers: Any | None, what: str, direction: str) -> Any | None:
    """The aggregated pageable copy of `what` in `direction`, or None where none was measured."""
    for row in _field(transfers, "copies") if transfers else ():
        if _field(row, "what") == what and _field(row, "direction") == direction and _field(row, "memory") == "pageable":
            return row
    return None


def _copy_seconds(transfers: Any | None, what: str, direction: str) -> tuple[float, float, float]:
    if not transfers:
        return 0.0, 0.0, 0.0
    row = pageable_copy(transfers, what, direction)
    if row is None:
        raise ValueError(f"no {direction} transfer of {what!r} in the transfer table")
    return _field(row, "seconds_median"), _field(row, "seconds_min"), _field(row, "seconds_max")


def full_path(
    train_table: Sequence[TrainingCell],
    load_table: Sequence[Any],
    transfers: Any | None = None,
    dataset: str = "benchmark",
) -> list[FullPathRow]:
    """Load + convert + transfer + train epoch + eval for every format × training variant.

    Medians add up to `total_s`; `total_min_s`..`total_max_s` add the training and eval
    min/max (and the transfers' min/max) to the load medians. Device rows also carry the
    fixed start-up (CUDA context), separately and in `total_with_startup_s`. Transfer:
    resident data pay one pageable host→device copy of the matrix and the target; every device row pays
    the device→host copy of the predictions; streamed rows pay their copies inside the epoch.
    """
    rows = []
    for load in (r for r in load_table if _field(r, "dataset") == dataset):
        load_s = _field(load, "read_s_median") + _field(load, "to_pandas_s_median")
        convert_s = _field(load, "to_numpy_s_median") + _field(load, "to_torch_s_median")
        for train in train_table:
            on_device = train.device != "cpu"
            if on_device and not transfers:
                raise ValueError(f"a {train.device} training row needs the transfer table for its full path")
            device_transfers = transfers if on_device else None
            matrix = (0.0, 0.0, 0.0)
            if train.placement == "resident":
                features = _copy_seconds(device_transfers, "matrix", "host_to_device")
                target = _copy_seconds(device_transfers, "target", "host_to_device")
                matrix = tuple(a + b for a, b in zip(features, target))
            predictions = _copy_seconds(device_transfers, "predictions", "device_to_host")
            startup = _field(_field(device_transfers, "context_startup_s"), "median") if device_transfers else 0.0
            fixed = load_s + convert_s
            total = fixed + matrix[0] + predictions[0] + train.epoch_s_median + train.eval_s_median
            rows.append(FullPathRow(
                format=_field(load, "format"), device=train.device, precision=train.precision,
                placement=train.placement, loader=train.loader, batch_size=train.batch_size, load_s=load_s,
                convert_s=convert_s, transfer_s=matrix[0] + predictions[0], train_s=train.epoch_s_median,
                eval_s=train.eval_s_median, total_s=total,
                total_min_s=fixed + matrix[1] + predictions[1] + train.epoch_s_min + train.eval_s_min,
                total_max_s=fixed + matrix[2] + predictions[2] + train.epoch_s_max + train.eval_s_max,
                startup_s=startup, total_with_startup_s=total + startup, train_share=train.epoch_s_median / total,
                noisy=bool(_field(load, "noisy") or train.noisy),
            ))
    return sorted(rows, key=lambda r: (r.device, r.format, r.precision, r.placement, r.loader, r.batch_size))
