"""The streaming study's timing (docs/scale.md): every stage of reading a dataset larger than memory.

At each size, after the dataset has grown to it (io.streaming_data.grow), one job times:

- **storage**: the files' raw bytes read in 8 MiB chunks with the page cache dropped first (cold),
  then again straight after (warm: what the page cache gives back, while the files fit in it);
- **decode**: each unit (row group, .npy window) from file bytes to numpy, the files warm - only
  where they fit in the page cache, else decode would time the disk again;
- **convert**: numpy to torch batches (shuffled within the unit, cut to the batch size);
- **reader**: the streaming reader (measure.streaming) over a whole epoch at each worker count -
  DataLoader worker processes, and a thread pool of as many threads - cold, and warm where the
  files fit in the page cache: the samples per second it sustains, what a training loop could be fed.

Each stage is one pass over the whole dataset, timed in chunks with `time.perf_counter`; its rate's
interval comes from the chunks (analyze.scale.rate). /proc/vmstat's pgpgin says how many bytes a pass
really read from storage (a cold pass ≈ the files, a warm one ≈ 0), and the job's peak resident set
is reset before each size (/proc/self/clear_refs) and read after it: memory must stay flat as the
data grow. Around each size, other processes' user CPU and the hypervisor's steal are metered
(measure.contention.ForeignUserCpuMeter: the reader's workers and the kernel's reclaim are the job's
own), and the job's drift sentinel is timed after it (time_scale.py).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any


from accel_choice.analyze.scale import rate
from accel_choice.io.streaming_data import open_parts
from accel_choice.measure.contention import ForeignUserCpuMeter
from accel_choice.measure.streaming import StreamedBatches, loader, threaded
from accel_choice.records.scale import CacheDrop, ReaderPass, SizeMeasurement

CHUNK = 8 * 1024 * 1024
READ_CHUNKS_PER_SAMPLE = 8  # one raw-read chunk of the interval: 64 MiB


def cache_drop_method() -> CacheDrop:
    """Say how this process can make a read cold.

    How this process can make a read cold: drop the whole page cache (root), evict the files'
    pages (posix_fadvise), or not at all."""
    if os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK):
        return "drop_caches"
    return "fadvise" if hasattr(os, "posix_fadvise") else "none"


def drop_cache(paths: Sequence[Path], method: CacheDrop) -> None:
    """Make the next read of `paths` come from storage (as far as `method` can)."""
    if method == "none":
        return
    os.sync()
    if method == "drop_caches":
        with open("/proc/sys/vm/drop_caches", "w") as handle:
            handle.write("1\n")
        return
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _proc_kib(path: str, prefix: str) -> int | None:
    """The KiB figure on the line of a /proc file that starts with `prefix`, in bytes; None where unknown."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(prefix):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def storage_bytes_read() -> int | None:
    """Bytes paged in from storage since boot, machine-wide (/proc/vmstat pgpgin, KiB); None where unknown."""
    return _proc_kib("/proc/vmstat", "pgpgin ")


def reset_peak_rss() -> None:
    """Start a new peak resident set for this process (Linux: /proc/self/clear_refs 5); a no-op elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5\n")
    except OSError:
        pass


def peak_rss_bytes() -> int:
    """This process's peak resident set since the last reset (VmHWM), else since it started."""
    peak = _proc_kib("/proc/self/status", "VmHWM:")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def workers_peak_rss_bytes() -> int:
    """Return the largest peak resident set of any child process that has ended (the reader's workers)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def _delta(before: int | None) -> int:
    after = storage_bytes_read()
    return max(after - before, 0) if before is not None and after is not None else 0


def timed_chunks(work: Iterable[float], close: Callable[[float, int], bool]) -> tuple[list[float], list[float]]:
    """Time one pass in chunks: (amount, seconds) per chunk.

    One pass timed in chunks: (amount, seconds) per chunk. `work` yields the amount each step did
    (bytes, samples) as it is done; a chunk closes after a step where `close(amount, steps)` of the
    chunk so far is true, and a last partial chunk closes at the end. The clock starts here, before
    `work`'s first step: a generator's set-up (opening a file, starting a reader's workers) is timed."""
    amounts: list[float] = []
    seconds: list[float] = []
    done, steps, start = 0.0, 0, time.perf_counter()
    for amount in work:
        done += amount
        steps += 1
        if close(done, steps):
            now = time.perf_counter()
            amounts.append(done)
            seconds.append(now - start)
            done, steps, start = 0.0, 0, now
    if done:
        amounts.append(done)
        seconds.append(time.perf_counter() - start)
    return amounts, seconds


def _file_reads(paths: Sequence[Path], view: memoryview) -> Iterator[float]:
    """Every file's bytes read in order into `view`: the bytes of each read."""
    for path in paths:
        with open(path, "rb", buffering=0) as handle:
            while n := handle.readinto(view):
                yield float(n)


def raw_read(paths: Sequence[Path]) -> tuple[list[float], list[float]]:
    """Read every file's bytes in order; (bytes, seconds) per 64 MiB sample."""
    view = memoryview(bytearray(CHUNK))  # allocated before the clock starts
    return timed_chunks(_file_reads(paths, view), lambda done, _: done >= CHUNK * READ_CHUNKS_PER_SAMPLE)


def decode_and_convert(folder: Path, rows: int, batch_size: int, seed: int) -> tuple[list[float], ...]:
    """Time decoding and converting each unit apart.

    Each unit decoded (file bytes → numpy) and converted (numpy → torch batches) by the reader's own
    two steps (StreamedBatches.read, .batches), timed apart: (row bytes, decode seconds, convert seconds) per unit."""
    data = StreamedBatches(folder, batch_size, seed=seed, rows=rows)
    amounts, decode, convert = [], [], []
    for index, (_, _, count) in enumerate(data.units):
        t0 = time.perf_counter()
        x, y = data.read(index)
        t1 = time.perf_counter()
        for _ in data.batches(index, x, y):
            pass
        t2 = time.perf_counter()
        amounts.append(float(count * (data.dataset.features + 1) * 4))
        decode.append(t1 - t0)
        convert.append(t2 - t1)
    return amounts, decode, convert


def reader_pass(
    folder: Path, rows: int, batch_size: int, workers: int, seed: int, kind: str = "processes"
) -> tuple[list[float], list[float]]:
    """Time one epoch of the streaming reader.

    One epoch of the streaming reader: (samples, seconds) per chunk of a row group's worth of batches.
    The clock starts before the DataLoader's workers (or the thread pool) do: starting them is part
    of what a reader costs."""
    dataset = StreamedBatches(folder, batch_size, seed=seed, rows=rows)
    per_chunk = max(1, dataset.dataset.row_group_rows // batch_size)

    def samples() -> Iterator[float]:  # the reader made inside the clock (timed_chunks starts it first)
        source = threaded(dataset, workers) if kind == "threads" else loader(dataset, workers)
        for x, _ in source:
            yield float(len(x))

    return timed_chunks(samples(), lambda _, batches: batches >= per_chunk)


def measure_size(
    folder: Path,
    *,
    target_gb: float,
    rows: int,
    generate_s: float,
    batch_size: int,
    workers: Sequence[int],
    method: CacheDrop,
    available_bytes: int,
    seed: int,
    log: Any = None,
) -> SizeMeasurement:
    """Measure every stage at one size (see the module's text), the peak resident set reset first."""
    make_rate = rate
    reset_peak_rss()
    meter = ForeignUserCpuMeter().start()
    dataset, parts = open_parts(folder, rows)
    file_bytes = sum(p.stat().st_size for p in parts)
    fits = file_bytes < available_bytes

    def storage_pass(cold: bool) -> tuple[Any, int]:
        if cold:
            drop_cache(parts, method)
        before = storage_bytes_read()
        amounts, seconds = raw_read(parts)
        return make_rate(amounts, seconds), _delta(before)

    cold, cold_bytes = storage_pass(True)
    warm, warm_bytes = storage_pass(False)
    decode = convert = None
    if fits:
        amounts, decode_s, convert_s = decode_and_convert(folder, rows, batch_size, seed)
        decode, convert = make_rate(amounts, decode_s), make_rate(amounts, convert_s)
    readers = []
    # DataLoader worker processes at each count (0: in this process), and a thread pool of each count.
    kinds = [("processes", count) for count in workers] + [("threads", count) for count in workers if count]
    # Warm passes only where the files fit in the page cache: beyond it a "warm" pass times the disk again
    # (the raw warm read above shows that it does).
    for cache in ("cold", "warm") if fits else ("cold",):
        for kind, count in kinds:
            if cache == "cold":
                drop_cache(parts, method)
            before = storage_bytes_read()
            amounts, seconds = reader_pass(folder, rows, batch_size, count, seed, kind)
            readers.append(
                ReaderPass(
                    workers=count,
                    cache=cache,
                    kind=kind,
                    samples=make_rate(amounts, seconds),
                    storage_bytes=_delta(before),
                )
            )
            if log:
                log.info(
                    "%.3g GB, %d %s, %s: %.0f samples/s", target_gb, count, kind, cache, readers[-1].samples.per_s.point
                )
    shared = meter.stop()
    return SizeMeasurement(
        target_gb=target_gb,
        rows=rows,
        file_bytes=file_bytes,
        parts=len(parts),
        generate_s=generate_s,
        fits_page_cache=fits,
        cold_read=cold,
        cold_storage_bytes=cold_bytes,
        warm_read=warm,
        warm_storage_bytes=warm_bytes,
        decode=decode,
        convert=convert,
        readers=tuple(readers),
        peak_rss_bytes=peak_rss_bytes(),
        workers_peak_rss_bytes=workers_peak_rss_bytes(),
        foreign_cpu_share=shared.share,
        steal_share=shared.steal_share,
    )


def available_memory_bytes() -> int:
    """MemAvailable: roughly what the page cache can hold for a file read now."""
    return _meminfo("MemAvailable:")


def _meminfo(key: str) -> int:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {key} in /proc/meminfo")
