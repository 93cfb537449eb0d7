"""Where a variant's data sits while it trains: on the host, resident on the device, or copied to
it batch by batch (streamed, or prefetched one batch ahead on a copy stream).

`batches` wraps a loader (measure.loaders) for a placement; measure.steps times what it yields.
Imports run one way: steps -> placement -> loaders.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import torch

from accel_choice.measure.loaders import Batch, make_loader
from accel_choice.records.training import Variant

# host: a CPU job's data. resident: on the device, sliced there. streamed: every batch copied from
# pageable host memory with a blocking `.to(device)`, as `model(xb.to(device))` does: the simplest
# and slowest feed. prefetched: batches gathered into pinned host memory and copied non-blocking
# one batch ahead, so the copy of the next batch overlaps this one's step (a tuned input pipeline).
PLACEMENTS = ("host", "resident", "streamed", "prefetched")


class Streamed:
    """Host batches copied to the device one by one, as `model(xb.to(device))` does."""

    def __init__(self, inner: Iterable[Batch], device: torch.device):
        self.inner, self.device = inner, device

    def __iter__(self) -> Iterator[Batch]:
        for xb, yb in self.inner:
            yield xb.to(self.device), yb.to(self.device)


class Prefetched:
    """Pinned host batches copied non-blocking, one batch ahead, on a copy stream of their own: the
    copy of batch k+1 is queued on that stream before batch k is handed out, so on CUDA it runs
    while batch k trains on the compute stream (copies queued on the compute stream itself would
    run strictly before the step's kernels). Before batch k is used the compute stream waits for
    the copy stream (`wait_stream`, an event on the device: no host sync), and the batch's memory
    is marked as used by the compute stream (`record_stream`) so the caching allocator does not
    reuse it early. The pinned host buffers come from torch's caching host allocator, which reuses
    a block only after the copy that read it has finished. Off CUDA: the same order, no streams."""

    def __init__(self, inner: Iterable[Batch], device: torch.device):
        self.inner, self.device = inner, device
        self.stream = torch.cuda.Stream(device) if device.type == "cuda" else None

    def _copy(self, batch: Batch) -> Batch:
        with torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext():
            return batch[0].to(self.device, non_blocking=True), batch[1].to(self.device, non_blocking=True)

    def _ready(self, batch: Batch) -> Batch:
        if self.stream is not None:
            compute = torch.cuda.current_stream(self.device)
            compute.wait_stream(self.stream)
            for tensor in batch:
                tensor.record_stream(compute)
        return batch

    def __iter__(self) -> Iterator[Batch]:
        host = iter(self.inner)
        ahead = next(host, None)
        if ahead is None:
            return
        ahead = self._copy(ahead)
        for batch in host:
            current = self._ready(ahead)  # wait for its copy before the next one is queued behind it
            ahead = self._copy(batch)
            yield current
        yield self._ready(ahead)


def batches(
    placement: str,
    loader: str,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    shuffle: bool,
    seed: int,
    device: torch.device,
    x_device: torch.Tensor,
    y_device: torch.Tensor,
) -> Iterable[Batch]:
    """Return a variant's batches by its placement (PLACEMENTS), from its loader (loaders.LOADERS)."""
    if placement == "streamed":
        return Streamed(make_loader(loader, x, y, batch_size, shuffle, seed), device)
    if placement == "prefetched":  # x_device, y_device: the host copies, pinned on CUDA
        pin = device.type == "cuda"  # pinned memory is CUDA's; elsewhere the same path, pageable
        return Prefetched(make_loader(loader, x_device, y_device, batch_size, shuffle, seed, pin=pin), device)
    if placement == "resident":
        return make_loader(loader, x_device, y_device, batch_size, shuffle, seed)
    return make_loader(loader, x, y, batch_size, shuffle, seed)


def placed(variant: Variant, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Place the data a variant's batches come from, before its clock starts.

    The data a variant's batches come from, made before its clock starts: on the device
    (resident), pinned on the host (prefetched, on CUDA), else the host tensors themselves."""
    device = torch.device(variant.device)
    if variant.placement == "resident":
        return x.to(device), y.to(device)
    if variant.placement == "prefetched" and device.type == "cuda":
        return x.pin_memory(), y.pin_memory()
    return x, y


def variant_batches(
    variant: Variant,
    x: torch.Tensor,
    y: torch.Tensor,
    data: tuple[torch.Tensor, torch.Tensor],
    *,
    shuffle: bool,
    seed: int,
) -> Iterable[Batch]:
    """`batches` of a variant (records.training.Variant), from the data `placed` made for it."""
    device = torch.device(variant.device)
    return batches(variant.placement, variant.loader, x, y, variant.batch_size, shuffle, seed, device, *data)
