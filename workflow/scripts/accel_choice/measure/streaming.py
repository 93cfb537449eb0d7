"""A streaming reader: a dataset on disk (io.streaming_data) as torch batches, with bounded memory.

The dataset is read unit by unit - a Parquet row group, or a window of the same rows of the .npy
file mapped with numpy.memmap and unmapped after it is copied - and each unit is cut into batches
of `batch_size` rows (row groups are whole batches, so only the last batch is short). An epoch
visits the units in a seeded permutation and shuffles the rows inside each unit: the usual
trade-off of a streaming loader, which cannot draw rows from the whole file at random.

`loader(..., workers=k)` wraps the dataset in a DataLoader: with k > 0 each worker process reads
every k-th unit of the epoch's order and the DataLoader hands their batches out in turn, so an
epoch holds the same batches for any k, in an order fixed for each k (a test checks both). At most
`prefetch_factor` × k batches wait in memory, and the main process holds one unit at a time: memory
stays bounded however large the file. `threaded(..., threads=k)` is the alternative the study
measures beside it: a pool of k threads reading and decoding units ahead, in the order without
workers.
"""

from __future__ import annotations

import itertools
import mmap
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from accel_choice.io.streaming_data import open_parts, unit_ranges

Batch = tuple[torch.Tensor, torch.Tensor]
Unit = tuple[Path, int, int]


def read_unit(
    fmt: str, path: Path, start: int, rows: int, features: int, data_offset: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Decode one unit's rows to numpy.

    One unit's rows decoded to numpy: float32 features (rows × features) and the 0/1 target (float32).
    `data_offset`: where an .npy file's data begin (`npy_data_offset`), read from its header if not given."""
    if fmt == "parquet":
        # Opened for this unit alone: a ParquetFile kept open held on to about a row group's memory per
        # part (RSS grew with the number of parts: 11 GB at 48 GB), and re-reading the footer costs less.
        with pq.ParquetFile(path, memory_map=False) as handle:
            group = handle.metadata.row_group(0).num_rows
            table = handle.read_row_group(start // group).slice(start % group, rows)
        x = np.empty((table.num_rows, features), dtype=np.float32)
        for j in range(features):
            x[:, j] = table.column(j).to_numpy()
        return x, table.column(features).to_numpy().astype(np.float32)
    header = npy_data_offset(path, features) if data_offset is None else data_offset
    return _npy_window(path, header, start, rows, features + 1)


def npy_data_offset(path: Path, features: int) -> int:
    """Where the data of an .npy matrix of `features` + 1 float32 columns begin, its header checked.

    Read once per file, in the thread that opens the dataset: numpy parses the header with
    `ast.literal_eval`, which CPython 3.11 can fail in several threads at once ("SystemError: AST
    constructor recursion depth mismatch", python/cpython#106905), as `threaded`'s pool would."""
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in readers:
            raise ValueError(f"{path}: .npy format version {version}, expected 1.0 or 2.0")
        shape, _, dtype = readers[version](handle)
        header = handle.tell()
    if len(shape) != 2 or shape[1] != features + 1 or dtype != np.float32:
        raise ValueError(f"{path}: a {shape} {dtype} matrix, expected (rows, {features + 1}) float32")
    return header


def _npy_window(path: Path, header: int, start: int, rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows start … start+rows of an .npy matrix of `width` float32 columns whose data begin at
    `header`, through a memmap of just that window (page aligned), copied out and unmapped: the mapping
    never holds more than one window."""
    offset = header + start * width * 4
    aligned = offset - offset % mmap.ALLOCATIONGRANULARITY
    window = np.memmap(path, dtype=np.uint8, mode="r", offset=aligned, shape=(offset - aligned + rows * width * 4,))
    try:
        matrix = np.array(window[offset - aligned :].view(np.float32).reshape(rows, width))
    finally:
        window._mmap.close()  # noqa: SLF001 - unmap now, not when the garbage collector runs
    return matrix[:, : width - 1], np.ascontiguousarray(matrix[:, width - 1])


def to_batches(x: np.ndarray, y: np.ndarray, batch_size: int, generator: torch.Generator | None) -> Iterator[Batch]:
    """Cut a unit's rows into torch batches, in a seeded order within the unit (None: in file order)."""
    features, target = torch.from_numpy(x), torch.from_numpy(y)
    if generator is not None:
        order = torch.randperm(len(features), generator=generator)
        features, target = features[order], target[order]
    for start in range(0, len(features), batch_size):
        yield features[start : start + batch_size], target[start : start + batch_size]


class StreamedBatches(IterableDataset):
    """Batches of a dataset on disk, unit by unit (see the module's text); one epoch per iteration."""

    def __init__(
        self, folder: str | Path, batch_size: int, *, seed: int, shuffle: bool = True, rows: int | None = None
    ):
        self.dataset, parts = open_parts(folder, rows)
        self.units: list[Unit] = unit_ranges(self.dataset, parts)
        if rows is not None:
            self.units = _first_rows(self.units, rows)
        self.batch_size, self.seed, self.shuffle = batch_size, seed, shuffle
        self.epoch = 0
        features = self.dataset.features
        self.data_offsets = (
            {path: npy_data_offset(path, features) for path, _, _ in self.units} if self.dataset.format == "npy" else {}
        )

    def order(self) -> list[int]:
        """Return the epoch's unit order: a seeded permutation (file order without shuffle)."""
        if not self.shuffle:
            return list(range(len(self.units)))
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        return torch.randperm(len(self.units), generator=generator).tolist()

    def read(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Unit `index` decoded to numpy."""
        path, start, rows = self.units[index]
        offset = self.data_offsets.get(path)
        return read_unit(self.dataset.format, path, start, rows, self.dataset.features, offset)

    def batches(self, index: int, x: np.ndarray, y: np.ndarray) -> Iterator[Batch]:
        """Unit `index`'s rows as torch batches, shuffled within the unit by a seeded generator of its own."""
        generator = torch.Generator().manual_seed(self.seed * 7919 + index) if self.shuffle else None
        return to_batches(x, y, self.batch_size, generator)

    def __iter__(self) -> Iterator[Batch]:
        info = get_worker_info()
        mine = self.order()[info.id :: info.num_workers] if info else self.order()
        for index in mine:
            yield from self.batches(index, *self.read(index))

    @property
    def rows(self) -> int:
        return sum(rows for _, _, rows in self.units)


def _first_rows(units: list[Unit], rows: int) -> list[Unit]:
    chosen, total = [], 0
    for path, start, count in units:
        if total >= rows:
            break
        take = min(count, rows - total)
        chosen.append((path, start, take))
        total += take
    return chosen


def threaded(dataset: StreamedBatches, threads: int) -> Iterator[Batch]:
    """Yield the epoch's batches from a thread pool of readers.

    The epoch in the order of `StreamedBatches` without workers, its units read and decoded ahead
    by a pool of `threads` threads (at most 2 × threads units in flight, so memory stays bounded) and
    cut into batches in the calling thread: the thread-pool alternative to DataLoader workers."""
    order = iter(dataset.order())
    with ThreadPoolExecutor(threads) as pool:
        pending: deque[tuple[int, Future[tuple[np.ndarray, np.ndarray]]]] = deque()
        for index in itertools.islice(order, 2 * threads):
            pending.append((index, pool.submit(dataset.read, index)))
        while pending:
            index, future = pending.popleft()
            x, y = future.result()
            following = next(order, None)
            if following is not None:
                pending.append((following, pool.submit(dataset.read, following)))
            yield from dataset.batches(index, x, y)


def loader(dataset: StreamedBatches, workers: int, prefetch_factor: int = 2) -> DataLoader:
    """Return the dataset behind a DataLoader with `workers` reader processes (0: read in this process).

    With workers, each reads every `workers`-th unit of the epoch's order and the DataLoader takes one
    batch from each worker in turn: the epoch's batches are those without workers, interleaved unit
    by unit across the workers, in an order fixed for each worker count."""
    return DataLoader(
        dataset,
        batch_size=None,
        num_workers=workers,
        prefetch_factor=prefetch_factor if workers else None,
        persistent_workers=False,
    )
