"""The full path of one epoch: load + convert + transfer + train + eval, per file format and training variant."""

from __future__ import annotations

from collections.abc import Sequence

from accel_choice.records.loads import CopyCell, LoadCell, TransferTable
from accel_choice.records.training import TrainingCell, variant_fields
from accel_choice.records.fullpath import FullPathRow


def pageable_copy(transfers: TransferTable | None, what: str, direction: str) -> CopyCell | None:
    """Return the aggregated pageable copy of `what` in `direction`, or None where none was measured."""
    for row in transfers.copies if transfers else ():
        if (row.what, row.direction, row.memory) == (what, direction, "pageable"):
            return row
    return None


NO_COPY = ((0.0, 0.0, 0.0), (0.0,))


def _copy(
    transfers: TransferTable | None, what: str, direction: str
) -> tuple[tuple[float, float, float], tuple[float, ...]]:
    """One pageable copy's (median, min, max) seconds and each transfer job's seconds; NO_COPY without transfers."""
    if not transfers:
        return NO_COPY
    row = pageable_copy(transfers, what, direction)
    if row is None:
        raise ValueError(f"no {direction} transfer of {what!r} in the transfer table")
    return (row.seconds.point, row.seconds_min, row.seconds_max), row.seconds_jobs


def _added(*copies: tuple[Sequence[float], Sequence[float]]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Copies paid together (the matrix and the target): their seconds added term by term, job by job."""
    spreads, jobs = zip(*copies)
    return tuple(map(sum, zip(*spreads))), tuple(map(sum, zip(*jobs)))


def one_off_jobs(train: TrainingCell, parts: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """Return the one-off costs each of `train`'s jobs pays.

    The one-off costs each of `train`'s jobs pays: its own start-up plus, for every part (load, conversion,
    a copy: each a sequence of per-job times from jobs of its own), the time of the part's job of the same
    repeat, cycled where the part ran fewer repeats. The part's jobs ran apart from the training job, so
    pairing them by repeat draws each sum from independent jobs: an interval over the sums carries the
    spread of every term, not that of training alone."""
    return tuple(
        startup + sum(part[repeat % len(part)] for part in parts) for repeat, startup in enumerate(train.startup_s_jobs)
    )


def full_path(
    train_table: Sequence[TrainingCell],
    load_table: Sequence[LoadCell],
    transfers: TransferTable | None = None,
    dataset: str = "benchmark",
) -> list[FullPathRow]:
    """Load + convert + transfer + train epoch + eval for every format × training variant.

    Medians add up to `total_s`; `total_min_s`..`total_max_s` add the training and eval
    min/max (and the transfers' min/max) to the load medians. Every row also carries its timing
    jobs' one-off start-up (the training cell's `startup_s_median`: on a GPU the context and the
    first step's costs), separately and in `total_with_startup_s`, and splits the total into
    what recurs every epoch (`per_epoch_s`) and what is paid once (`one_off_s`; per training job, from raw
    times, `one_off_s_jobs`: see `one_off_jobs`). Transfer:
    resident data pay one pageable host→device copy of the matrix and the target, prefetched data the
    pinning of the matrix; every device row pays the device→host copy of the predictions; streamed
    and prefetched rows pay their batch copies inside the epoch.
    """
    rows = []
    for load in (r for r in load_table if r.dataset == dataset):
        load_s = load.read_s_median + load.to_pandas_s_median
        convert_s = load.to_numpy_s_median + load.to_torch_s_median
        for train in train_table:
            on_device = train.device != "cpu"
            if on_device and not transfers:
                raise ValueError(f"a {train.device} training row needs the transfer table for its full path")
            device_transfers = transfers if on_device else None
            matrix, matrix_jobs = NO_COPY
            if train.placement == "resident":
                matrix, matrix_jobs = _added(
                    _copy(device_transfers, "matrix", "host_to_device"),
                    _copy(device_transfers, "target", "host_to_device"),
                )
            elif train.placement == "prefetched" and device_transfers and device_transfers.pin_memory_s_median:
                pin = device_transfers.pin_memory_s_median  # the matrix pinned once, before the first epoch
                matrix, matrix_jobs = (pin, pin, pin), device_transfers.pin_memory_s_jobs
            predictions, predictions_jobs = _copy(device_transfers, "predictions", "device_to_host")
            startup = train.startup_s_median
            fixed = load_s + convert_s
            total = fixed + matrix[0] + predictions[0] + train.epoch_s.point + train.eval_s.point
            rows.append(
                FullPathRow(
                    format=load.format,
                    **variant_fields(train),
                    load_s=load_s,
                    convert_s=convert_s,
                    transfer_s=matrix[0] + predictions[0],
                    train_s=train.epoch_s.point,
                    eval_s=train.eval_s.point,
                    total_s=total,
                    total_min_s=fixed + matrix[1] + predictions[1] + train.epoch_s_min + min(train.eval_s_runs),
                    total_max_s=fixed + matrix[2] + predictions[2] + train.epoch_s_max + max(train.eval_s_runs),
                    startup_s=startup,
                    total_with_startup_s=total + startup,
                    per_epoch_s=train.epoch_s.point + train.eval_s.point,
                    one_off_s=fixed + matrix[0] + predictions[0] + startup,
                    one_off_s_jobs=one_off_jobs(
                        train, (load.load_s_jobs, load.convert_s_jobs, matrix_jobs, predictions_jobs)
                    ),
                    train_share=train.epoch_s.point / total,
                    noisy=bool(load.noisy or train.noisy),
                )
            )
    return sorted(rows, key=lambda r: (r.device, r.format, r.precision, r.placement, r.loader, r.batch_size))
