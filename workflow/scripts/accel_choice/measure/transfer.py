"""Host <-> device copies, timed on their own (decision-sheet step 3).

Every copy is preceded by an untimed copy of the same size, and the device is synchronized
before each clock read, because `.to(device)` may return before the copy has finished.
`copy=True` forces a real copy even where source and target are the same device, so the
functions also run (as a memcpy) on a CPU-only machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import torch

from accel_choice.measure.devices import context_startup_seconds, synchronize
from accel_choice.measure.job import Envelope
from accel_choice.measure.contention import load_average
from accel_choice.records.loads import CopyTiming, TransferJob


def _timed_copy(
    tensor: torch.Tensor, device: torch.device, passes: int, non_blocking: bool
) -> tuple[float, list[float]]:
    def settle() -> None:  # both ends: a device-to-host copy is queued on the source device
        synchronize(tensor.device)
        synchronize(device)

    tensor.to(device, non_blocking=non_blocking, copy=True)
    settle()
    times = []
    for _ in range(passes):
        settle()
        t0 = time.perf_counter()
        tensor.to(device, non_blocking=non_blocking, copy=True)
        settle()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def copy_record(
    what: str, direction: str, memory: str, tensor: torch.Tensor, device: torch.device, passes: int
) -> CopyTiming:
    """Median seconds of copying `tensor` to `device`, as bytes, seconds and GB/s (1 GB = 1e9 bytes)."""
    seconds, runs = _timed_copy(tensor, device, passes, non_blocking=memory == "pinned")
    n_bytes = tensor.element_size() * tensor.nelement()
    return CopyTiming(
        what=what,
        direction=direction,
        memory=memory,
        bytes=n_bytes,
        seconds=seconds,
        gb_per_s=n_bytes / seconds / 1e9 if seconds > 0 else None,
        passes=tuple(runs),
    )


def measure_transfers(
    x: torch.Tensor,
    batch_sizes: Sequence[int],
    device: str | torch.device,
    passes: int = 5,
    pin: bool | None = None,
    y: torch.Tensor | None = None,
    *,
    repeat: int,
    envelope: Envelope,
) -> TransferJob:
    """Time the context start-up and the host-device transfers.

    Context start-up, then H2D of the matrix and of one batch per batch size (pageable and
    pinned), H2D of the target column, and D2H of one prediction per row.

    The record's wall interval (the timing job's `envelope`, opened before this is called) spans the
    whole measurement, the context start-up included; the envelope describes the environment after
    it: asking torch about the GPU first would initialise CUDA before the context start-up is timed.
    """
    target = torch.device(device)
    startup = context_startup_seconds(target)
    pin = target.type == "cuda" if pin is None else pin
    host = torch.device("cpu")
    load_before = load_average()
    t0 = time.perf_counter()
    pinned_x = x.pin_memory() if pin else None
    pin_seconds = time.perf_counter() - t0 if pin else None

    copies = []
    for memory, source in (("pageable", x), ("pinned", pinned_x)):
        if source is None:
            continue
        copies.append(copy_record("matrix", "host_to_device", memory, source, target, passes))
        for batch_size in batch_sizes:
            copies.append(
                copy_record(f"batch B={batch_size}", "host_to_device", memory, source[:batch_size], target, passes)
            )
    labels = torch.zeros(x.shape[0], 1) if y is None else y.reshape(-1, 1)
    copies.append(copy_record("target", "host_to_device", "pageable", labels, target, passes))
    predictions = torch.zeros(x.shape[0], 1, device=target)
    copies.append(copy_record("predictions", "device_to_host", "pageable", predictions, host, passes))
    return envelope.record(
        TransferJob,
        device=target.type,
        context_startup_s=startup,
        pin_memory_s=pin_seconds,
        matrix_bytes=x.element_size() * x.nelement(),
        copies=tuple(copies),
        loadavg_before=tuple(load_before),
        loadavg_after=tuple(load_average()),
        repeat=repeat,
    )
