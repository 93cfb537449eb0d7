"""The streaming study in the report (docs/scale.md) and its figure: every stage's rate as the data grow,
which stage bounds the epoch, where the page cache ran out, and the scale scenario with storage."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accel_choice.io import paths  # noqa: E402
from accel_choice.records.estimate import Estimate  # noqa: E402
from accel_choice.records.scale import Rate, ReaderPass, ScaleJob, ScaleTable, SizeMeasurement, StepRate  # noqa: E402
from accel_choice.render.formatting import save_figure, table  # noqa: E402

GB = 1e9
FLAT_RSS, FLAT_RSS_MIB = 1.25, 256  # peak RSS "flat": within 1.25× and 256 MiB from the smallest size to the largest
COLD = {
    "drop_caches": "the page cache dropped first (/proc/sys/vm/drop_caches, as root)",
    "fadvise": "the files' pages evicted first (posix_fadvise DONTNEED: not root, so the rest of the page cache stayed)",
    "none": "**nothing could evict the page cache here: the 'cold' reads were warm**",
}


def _gb_s(r: Rate | None) -> str:
    return "—" if r is None else _interval(r.per_s.scaled(1 / GB), ".2f")


def _samples(r: Rate) -> str:
    return _interval(r.per_s, ",.0f")


def _interval(e: Estimate, spec: str) -> str:
    """'2.50 (2.10–2.90)': an estimate's point and interval."""
    return f"{e.point:{spec}} ({e.low:{spec}}–{e.high:{spec}})"


def reader_label(reader: ReaderPass | tuple[str, int]) -> str:
    """ "no workers", "2 worker processes", "2 threads"."""
    kind, count = (reader.kind, reader.workers) if isinstance(reader, ReaderPass) else reader
    if count == 0:
        return "no workers"
    one, many = ("thread", "threads") if kind == "threads" else ("worker process", "worker processes")
    return f"{count} {one if count == 1 else many}"


def _reader(size: SizeMeasurement, cache: str, key: tuple[str, int]) -> str:
    found = [r for r in size.readers if r.cache == cache and (r.kind, r.workers) == key]
    return _samples(found[0].samples) if found else "—"


def stage_table(jobs: Sequence[ScaleJob]) -> str:
    workers = sorted(
        {(r.kind, r.workers) for j in jobs for s in j.sizes for r in s.readers}, key=lambda k: (k[1] > 0, k)
    )
    rows = []
    for job in jobs:
        for s in job.sizes:
            rows.append(
                (
                    job.format,
                    f"{s.target_gb:g}",
                    f"{s.file_bytes / GB:.2f}",
                    _gb_s(s.cold_read),
                    _gb_s(s.warm_read),
                    _gb_s(s.decode),
                    _gb_s(s.convert),
                    *(_reader(s, "cold", w) for w in workers),
                    *(_reader(s, "warm", w) for w in workers),
                    f"{s.cold_storage_bytes / GB:.2f} / {s.warm_storage_bytes / GB:.2f}",
                    f"{s.peak_rss_bytes / 2**20:,.0f}",
                    f"{_cores(s.foreign_cpu_share)} / {_cores(s.steal_share)}",
                )
            )
    headers = (
        "format",
        "size (GB)",
        "file (GB)",
        "storage cold GB/s",
        "storage warm GB/s",
        "decode GB/s (decoded)",
        "convert GB/s (decoded)",
        *(f"reader cold, {reader_label(w)} (samples/s)" for w in workers),
        *(f"reader warm, {reader_label(w)}" for w in workers),
        "read from storage cold / warm (GB)",
        "peak RSS (MiB)",
        "other CPU / steal (cores)",
    )
    return table(headers, rows)


def _cores(share: float | None) -> str:
    return "?" if share is None else f"{share:.2f}"


def _busy(summary: ScaleTable) -> str:
    """What shared the machine while the study ran: flagged and kept, or none, with the rules."""
    rules = (
        f"other processes' user CPU over {summary.foreign_cpu_limit:g} cores, steal over {summary.steal_limit:g} "
        f"cores, or a drift sentinel (a fixed workload timed at each job's start and after each size) off its "
        f"median by more than {summary.sentinel_tolerance:.0%}"
    )
    if not summary.busy:
        return f"Nothing shared the machine while the study ran: no size or job had {rules}."
    lines = [
        f"- {part.job}"
        + ("" if part.target_gb is None else f", {part.target_gb:g} GB")
        + f": {'; '.join(part.reasons)}"
        for part in summary.busy
    ]
    return (
        f"**Parts of the study shared the machine** ({rules}); their rates are kept above, flagged here - read "
        "them as this minute's, not the machine's:\n\n" + "\n".join(lines)
    )


def _bottleneck_lines(summary: ScaleTable) -> list[str]:
    lines = []
    largest = [b for b in summary.bottlenecks if b.target_gb == summary.largest_gb]
    for b in largest:
        where = f"{b.format}, {reader_label((b.kind, b.workers))}, {b.device}"
        if not b.decided:
            lines.append(
                f"- {where}: reader {b.reader_samples_per_s.point:,.0f} samples/s against the step's "
                f"{b.train_samples_per_s:,.0f}: no measurable difference (ratio {b.slower_by.point:.2f}×, "
                f"{b.slower_by.low:.2f}–{b.slower_by.high:.2f})"
            )
            continue
        slow = {"reader": "the reader", "train": "the training step", "copy": "the host→device copy"}[b.stage]
        lines.append(
            f"- {where}: **{slow} bounds the epoch**, {b.slower_by.point:.2f}× slower ({b.slower_by.low:.2f}–"
            f"{b.slower_by.high:.2f}) than the other: reader {b.reader_samples_per_s.point:,.0f} samples/s, step "
            f"{b.train_samples_per_s:,.0f}"
        )
    return lines


def scale_section(summary: ScaleTable | None, jobs: Sequence[ScaleJob], steps: Sequence[StepRate]) -> str:
    if summary is None:
        return ""
    return (
        _intro(summary, jobs)
        + "\n\nThe training step's own rate at this width (in-memory batches; on a GPU the batches resident and "
        "the host→device copy of pinned batches timed apart, so the copy is what a pinning reader would get):\n\n"
        + table(("device", "threads", "samples/s", "copy GB/s"), [_step_row(s) for s in steps])
        + "\n\nAt the largest size, cold, which stage bounds a streamed epoch (decided by the interval of the ratio "
        "of the two rates):\n\n"
        + "\n".join(_bottleneck_lines(summary))
        + f"\n\n{_bend(summary)} {_memory(summary)}"
        + f"\n\n{_busy(summary)}"
        + "\n\n"
        + _scenario(summary)
        + "\n\n"
        + _moves(summary)
    )


def _step_row(s: StepRate) -> tuple[object, ...]:
    return (s.device, s.threads, _samples(s.train), _gb_s(s.copy) if s.copy else "—")


def _bend(summary: ScaleTable) -> str:
    memory = summary.host_memory_bytes / GB
    if not summary.cold_verified:
        cold = (
            "**The cold reads could not be verified as cold**: some cold pass read less than half its files from "
            "storage (/proc/vmstat pgpgin; 0 where unknown), so its rate may be the page cache's. "
        )
    else:
        cold = "Every cold pass read its files from storage (/proc/vmstat pgpgin). "
    if summary.bend_gb is None:
        return cold + (
            f"Every size fit in the page cache ({memory:.1f} GB of memory): the warm rates show what memory gives "
            "back, and the bend comes only past memory size (docs/scale.md#beyond-memory)."
        )
    if summary.bend_by == "storage":
        return cold + (
            f"The page cache ran out at {summary.bend_gb:g} GB: there a warm pass read most of its files from "
            f"storage again (this machine has {memory:.1f} GB of memory)."
        )
    return cold + (
        f"By timing alone, the warm read was no faster than the cold one from {summary.bend_gb:g} GB on "
        f"({memory:.1f} GB of memory): a bend, or cold reads that were not cold."
    )


def _memory(summary: ScaleTable) -> str:
    added = summary.peak_rss_added_bytes / 2**20
    words = f"{summary.peak_rss_growth:.2f}× ({added:+,.0f} MiB)"
    if summary.peak_rss_growth <= FLAT_RSS and added <= FLAT_RSS_MIB:
        return (
            f"Peak RSS stayed flat while the data grew: the largest size's over the size's before it {words} in "
            "the format that grew most (a reader holds the units in flight and a few prefetched batches, whatever "
            "the file's size; the stage table gives every size's)."
        )
    return (
        f"**Peak RSS grew with the data**: the largest size's over the size's before it {words} in the format "
        "that grew most."
    )


def _scenario(summary: ScaleTable) -> str:
    rows = [
        (
            s.device,
            f"{s.compute_s:,.1f} ({s.source})",
            f"{s.copy_s:,.1f}",
            _interval(s.storage_s, ",.1f"),
            f"{s.epoch_s:,.1f}",
            f"**{s.bound}**",
        )
        for s in summary.scenario
    ]
    overlapped = summary.best_workers > 0
    how = (
        "Its reader runs beside the step, so an epoch takes its slowest part (on the CPU the reader's workers "
        "share the cores the step computes on: there the overlap is the best case)"
        if overlapped
        else "Its reader has no workers, so reading happens between steps and an epoch is the sum of its parts"
    )
    return (
        f"**The scale scenario with measured storage.** Its {summary.scenario_bytes / GB:,.1f} GB read at the "
        f"best sustained reader rate ({summary.best_format}, {reader_label((summary.best_kind, summary.best_workers))}, "
        f"cold, at {summary.largest_gb:g} GB: {summary.sustained_gb_per_s.point:.3f} GB/s, "
        f"{summary.sustained_gb_per_s.low:.3f}–{summary.sustained_gb_per_s.high:.3f})"
        + ("" if summary.beyond_page_cache else ", a size that still fit in the page cache")
        + f". {how}:\n\n"
        + table(("device", "compute s", "host→device copy s", "storage s", "epoch s", "bound"), rows)
    )


def _intro(summary: ScaleTable, jobs: Sequence[ScaleJob]) -> str:
    first = jobs[0]
    return (
        "## Streaming data beyond memory (measured)\n\n"
        f"Seeded datasets of {first.features} fp32 features and a 0/1 target, grown to "
        f"{', '.join(f'{s.target_gb:g}' for s in first.sizes)} GB and streamed from disk in each format "
        f"(`scale`; Parquet row groups of {first.row_group_rows:,} rows, {first.compression}; raw .npy windows of "
        f"as many rows through numpy.memmap), batches of {first.batch_size}. Cold reads with "
        f"{COLD[summary.cache_drop]}. Rates are a whole pass's, with the percentile interval of its chunks; "
        "decode and warm reader passes only where the files fit in the page cache (beyond it they would time the "
        "disk again). The reader yields torch batches as a training loop takes them, from DataLoader worker "
        f"processes or a thread pool (`measure/streaming.py`). Every job's stages are in `{paths.SCALE_JOB}`; decode and "
        "convert count decoded bytes (fp32 rows), storage counts the files' bytes.\n\n" + stage_table(jobs)
    )


def _moves(summary: ScaleTable) -> str:
    """What would move the bottleneck, in the measured numbers."""
    gpu = next(s for s in summary.scenario if s.device == "gpu")
    if gpu.bound != "storage-bound":
        return f"The GPU's epoch is {gpu.bound} at this storage rate: storage is not what holds a GPU back here."
    other = max(gpu.compute_s, gpu.copy_s)
    needed = summary.scenario_bytes / other / GB if other > 0 else float("inf")
    workers = (
        f"more readers: {reader_label((summary.best_kind, summary.best_workers))} read {summary.workers_gain:.2f}× "
        "as fast as none"
        if summary.workers_gain
        else "more readers (none read faster than the training process itself here)"
    )
    return (
        f"A GPU waits on storage here: its compute and copy take {other:,.1f} s, reading {gpu.storage_s.point:,.1f} s. "
        f"To move the bottleneck: a reader sustaining {needed:.2f} GB/s ({needed / summary.sustained_gb_per_s.point:.1f}× "
        f"the measured - a faster disk or fewer bytes per row); fp16 or int8 storage (fp16 halves the bytes: "
        f"about {summary.fp16_storage_s:,.1f} s, if the reader's rate per byte holds); reading only the columns "
        f"the model uses; {workers}."
    )


def scale_figure(
    jobs: Sequence[ScaleJob], steps: Sequence[StepRate], png: str | os.PathLike[str], svg: str | os.PathLike[str]
) -> None:
    """Plot samples per second against dataset size.

    Samples per second against dataset size: the raw storage read, the reader cold and warm at its
    best worker count, per format; the training step's rate per device; memory size marked."""
    figure, axes = plt.subplots(figsize=(8, 5))
    for job in jobs:
        sizes = [s.file_bytes / GB for s in job.sizes]
        per_row = [s.file_bytes / s.rows for s in job.sizes]
        axes.plot(
            sizes,
            [s.cold_read.per_s.point / r for s, r in zip(job.sizes, per_row)],
            ":",
            label=f"{job.format}: storage, cold",
        )
        for cache, style in (("cold", "-o"), ("warm", "--s")):
            best = [
                max((r.samples.per_s.point for r in s.readers if r.cache == cache), default=math.nan) for s in job.sizes
            ]
            axes.plot(sizes, best, style, label=f"{job.format}: reader, {cache} (best workers)")
    for step in steps:
        axes.axhline(
            step.train.per_s.point,
            color="black",
            linestyle="-." if step.device == "cpu" else "--",
            linewidth=1,
            label=f"training step, {step.device}",
        )
    axes.axvline(jobs[0].environment.host_memory_bytes / GB, color="grey", linewidth=1, label="memory size")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("dataset size on disk (GB)")
    axes.set_ylabel("samples per second")
    axes.set_title("streaming a dataset from disk: what each stage sustains", fontsize=9)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False, ncol=2)
    figure.tight_layout()
    save_figure(figure, png, svg)
