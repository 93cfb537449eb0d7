"""The streaming study's analysis and report (analyze.scale, render.scale) on records built here, and
one measured size of a tiny dataset (measure.scale) - in seconds."""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import builders_planner
import numpy as np
import pytest

from accel_choice.analyze import scale
from accel_choice.io import envinfo
from accel_choice.io import streaming_data as sd
from accel_choice.measure import scale as measure
from accel_choice.measure import scale_step
from accel_choice.records.planner import ScenarioModelled
from accel_choice.analyze.stats import NoiseRules
from accel_choice.measure import contention
from accel_choice.measure.contention import ForeignUserCpuMeter
from accel_choice.records.estimate import PositiveEstimate
from accel_choice.records.scale import Rate, ReaderPass, ScaleJob, SizeMeasurement, StepRate
from accel_choice.records.sentinel import SentinelReadings
from accel_choice.render import scale as words

GB = 1e9
ENV = dataclasses.replace(envinfo.quick_environment(seed=7), host_memory_bytes=24 * 10**9)


def estimate(point: float, low: float, high: float) -> PositiveEstimate:
    return PositiveEstimate(point=point, low=low, high=high, level=0.95, method=scale.CHUNKS, jobs=1)


def rate(per_s: float, spread: float = 0.05) -> Rate:
    return Rate(
        amount=per_s * 10, seconds=10.0, per_s=estimate(per_s, per_s * (1 - spread), per_s * (1 + spread)), chunks=20
    )


def size(target_gb: float, reader: float, *, warm_storage: float = 0.0, fits: bool = True) -> SizeMeasurement:
    """A size whose file holds 1,000 bytes per row; the reader's cold rate `reader` samples/s at 2 workers,
    half of it without workers."""
    rows = int(target_gb * GB / 1000)
    readers = tuple(
        ReaderPass(
            workers=w,
            cache=cache,
            kind="processes",
            samples=rate(reader * (0.5 if w == 0 else 1.0) * (4 if cache == "warm" else 1)),
            storage_bytes=0,
        )
        for cache in ("cold", "warm")
        for w in (0, 2)
    )
    return SizeMeasurement(
        target_gb=target_gb,
        rows=rows,
        file_bytes=rows * 1000,
        parts=1,
        generate_s=1.0,
        fits_page_cache=fits,
        cold_read=rate(0.6 * GB),
        cold_storage_bytes=rows * 1000,
        warm_read=rate(5 * GB if not warm_storage else 0.6 * GB),
        warm_storage_bytes=int(warm_storage * rows * 1000),
        decode=rate(1 * GB) if fits else None,
        convert=rate(3 * GB) if fits else None,
        readers=readers,
        peak_rss_bytes=400 * 2**20,
        workers_peak_rss_bytes=300 * 2**20,
        foreign_cpu_share=0.02,
        steal_share=0.01,
    )


def ticks(n: int, median_s: float = 0.05) -> SentinelReadings:
    """A quiet sentinel of `n` timings around `median_s`."""
    seconds = tuple(median_s * (1 + 0.01 * ((i % 3) - 1)) for i in range(n))
    return builders_planner.sentinel_readings(seconds=seconds, median_s=statistics.median(seconds))


def job(fmt: str, sizes: tuple[SizeMeasurement, ...], sentinel: SentinelReadings | None = None) -> ScaleJob:
    return ScaleJob(
        format=fmt,
        features=255,
        batch_size=512,
        row_group_rows=65536,
        compression="snappy" if fmt == "parquet" else "none",
        cache_drop="drop_caches",
        sizes=sizes,
        environment=ENV,
        sentinel=sentinel or ticks(len(sizes) + 1),
    )


def step(device: str, per_s: float) -> StepRate:
    return StepRate(
        device=device,
        features=255,
        hidden=128,
        batch_size=512,
        threads=1,
        train=rate(per_s),
        copy=None,
        environment=ENV,
        foreign_cpu_share=0.01,
        sentinel=ticks(2),
    )


def scenario():
    plan = builders_planner.scenario()
    modelled = ScenarioModelled(
        cpu_epoch_s=138.0,
        gpu_epoch_s_resident=16.0,
        gpu_epoch_s_streamed=22.4,
        gpu_model_source="assumed",
        host_to_device_copy_s=6.4,
    )
    return dataclasses.replace(plan, modelled=modelled)


def test_a_rate_is_the_pass_sustained_with_its_chunks_interval() -> None:
    r = scale.rate([100.0] * 9 + [100.0], [1.0] * 9 + [3.0])
    assert r.per_s.point == pytest.approx(1000 / 12) and r.chunks == 10 and r.per_s.low < r.per_s.point < r.per_s.high
    assert (r.per_s.level, r.per_s.method, r.per_s.jobs) == (0.95, "percentile bootstrap: the pass's chunks, paired", 1)
    assert scale.rate([5.0], [2.0]) == Rate(amount=5.0, seconds=2.0, per_s=estimate(2.5, 2.5, 2.5), chunks=1)
    steady = scale.rate([10.0] * 5, [1.0] * 5)
    assert steady.per_s.low == steady.per_s.point == steady.per_s.high == 10.0
    with pytest.raises(ValueError, match="positive amount and seconds"):
        scale.rate([1.0, 0.0], [1.0, 1.0])


def test_the_slower_stage_is_named_only_where_the_intervals_decide_it() -> None:
    jobs = [job("parquet", (size(0.1, 50_000.0), size(1.0, 9_000.0)))]
    found = scale.bottlenecks(jobs, [step("cpu", 20_000.0)])
    by = {(b.target_gb, b.workers): b for b in found}
    slow = by[(1.0, 2)]
    assert slow.stage == "reader" and slow.decided and slow.slower_by.point == pytest.approx(20_000 / 9_000)
    assert slow.slower_by.low == pytest.approx(19_000 / 9_450) and slow.slower_by.high == pytest.approx(21_000 / 8_550)
    assert slow.reader_samples_per_s == rate(9_000.0).per_s and slow.train_samples_per_s == 20_000.0
    assert by[(0.1, 2)].stage == "train" and by[(0.1, 2)].slower_by.point == pytest.approx(2.5)
    # tables/scale.csv: each estimate as its columns, where the flattened fields were
    row = slow.table_row()
    assert list(row)[6:12] == [
        "reader_samples_per_s",
        "reader_samples_per_s_ci_low",
        "reader_samples_per_s_ci_high",
        "train_samples_per_s",
        "stage",
        "slower_by",
    ]
    b = slow.slower_by
    assert (row["slower_by"], row["slower_by_ci_low"], row["slower_by_ci_high"]) == (b.point, b.low, b.high)
    close = scale.bottlenecks([job("npy", (size(0.1, 21_000.0),))], [step("cpu", 20_000.0)])
    assert [(b.workers, b.decided) for b in close] == [(0, True), (2, False)]  # 1.05× apart: no measurable difference


def test_the_bend_is_where_a_warm_pass_reads_from_storage_again() -> None:
    grown = job("npy", (size(0.1, 1e5), size(10, 1e5), size(40, 1e5, warm_storage=0.9, fits=False)))
    assert scale.cold_verified(grown) and scale.bend(grown) == (40, "storage")
    assert scale.bend(job("npy", (size(0.1, 1e5), size(10, 1e5)))) == (None, "storage")
    # Cold reads not seen reading from storage (or the bytes unknown, recorded as 0): timings alone.
    unknown = dataclasses.replace(size(40, 1e5), cold_storage_bytes=0, warm_read=rate(0.62 * GB))
    timed = job("npy", (size(0.1, 1e5), dataclasses.replace(size(1, 1e5), cold_storage_bytes=0), unknown))
    assert not scale.cold_verified(timed) and scale.bend(timed) == (40, "timing")


def test_peak_rss_growth_is_per_format() -> None:
    steady = job("npy", (size(0.1, 1e5), size(40, 1e5)))
    # Only the top matters: a single-row-group dataset does not reach the reader's ceiling.
    growing = job(
        "parquet",
        (
            dataclasses.replace(size(0.1, 1e5), peak_rss_bytes=100 * 2**20),
            size(10, 1e5),
            dataclasses.replace(size(40, 1e5), peak_rss_bytes=900 * 2**20),
        ),
    )
    assert scale.rss_growth(steady) == (1.0, 0) and scale.rss_growth(growing) == (2.25, 500 * 2**20)
    table = scale.scale_table([steady, growing], [step("cpu", 40_000.0)], scenario())
    assert table.peak_rss_growth == 2.25 and table.peak_rss_added_bytes == 500 * 2**20
    assert "**Peak RSS grew with the data**: the largest size's over the size's before it 2.25× (+500 MiB)" in (
        words.scale_section(table, [steady, growing], [step("cpu", 40_000.0)])
    )


def test_the_scenario_takes_the_best_cold_reader_and_names_each_devices_bound() -> None:
    jobs = [
        job("parquet", (size(0.1, 50_000.0), size(40, 30_000.0, fits=False))),
        job("npy", (size(0.1, 90_000.0), size(40, 60_000.0, fits=False))),
    ]
    table = scale.scale_table(jobs, [step("cpu", 40_000.0)], scenario())
    assert (table.best_format, table.best_workers, table.largest_gb, table.beyond_page_cache) == ("npy", 2, 40, True)
    assert table.sustained_gb_per_s.point == pytest.approx(60_000 * 1000 / GB)  # 1,000 file bytes per row
    assert table.sustained_gb_per_s.interval == pytest.approx((57_000 * 1000 / GB, 63_000 * 1000 / GB))
    # The scenario's rows are 256 features wide, the study's 255: its bytes per row scale with the width.
    assert table.scenario_bytes == round(50_000_000 * 1000 * 257 / 256) and table.workers_gain == pytest.approx(2.0)
    cpu, gpu = table.scenario
    storage = table.scenario_bytes / (60_000 * 1000)
    assert cpu.storage_s.point == pytest.approx(storage) and cpu.bound == "storage-bound"
    assert cpu.storage_s.interval == pytest.approx((storage / 1.05, storage / 0.95))  # the rate's ends, swapped
    assert cpu.epoch_s == pytest.approx(storage)
    assert gpu.compute_s == 16.0 and gpu.copy_s == 6.4 and gpu.bound == "storage-bound" and gpu.source == "assumed"
    assert table.fp16_storage_s == pytest.approx(storage / 2) and table.peak_rss_growth == pytest.approx(1.0)
    fast = [job("npy", (size(0.1, 9e6), size(40, 9e6, fits=False)))]
    quick = scale.scale_table(fast, [step("cpu", 40_000.0)], scenario())
    assert [s.bound for s in quick.scenario] == ["compute-bound", "compute-bound"]
    assert quick.scenario[1].epoch_s == 16.0  # the reader's workers overlap reading with the step
    # A reader without workers reads between steps: the epoch is the sum of its parts.
    alone = [
        job(
            "npy",
            tuple(
                dataclasses.replace(s, readers=tuple(r for r in s.readers if r.workers == 0))
                for s in (size(0.1, 9e6), size(40, 9e6, fits=False))
            ),
        )
    ]
    serial = scale.scale_table(alone, [step("cpu", 40_000.0)], scenario()).scenario[1]
    assert serial.epoch_s == pytest.approx(16.0 + 6.4 + serial.storage_s.point) and serial.bound == "compute-bound"


def test_the_report_names_the_bottleneck_the_bend_and_what_would_move_it(tmp_path) -> None:
    jobs = [job("npy", (size(0.1, 90_000.0), size(40, 60_000.0, warm_storage=0.9, fits=False)))]
    steps = [step("cpu", 40_000.0)]
    table = scale.scale_table(jobs, steps, scenario())
    text = words.scale_section(table, jobs, steps)
    assert text.startswith("## Streaming data beyond memory (measured)\n")
    assert "the page cache dropped first (/proc/sys/vm/drop_caches, as root)" in text
    assert "- npy, 2 worker processes, cpu: **the training step bounds the epoch**, 1.50× slower" in text
    assert "Every cold pass read its files from storage (/proc/vmstat pgpgin). The page cache ran out at 40 GB" in text
    assert (
        "Peak RSS stayed flat while the data grew: the largest size's over the size's before it 1.00× (+0 MiB)" in text
    )
    assert "Its reader runs beside the step, so an epoch takes its slowest part" in text
    storage = table.scenario[1].storage_s
    assert (
        f"| gpu | 16.0 (assumed) | 6.4 | {storage.point:,.1f} ({storage.low:,.1f}–{storage.high:,.1f}) |" in text
        and "| **storage-bound** |" in text
    )
    needed = table.scenario_bytes / 16.0 / GB
    assert f"a reader sustaining {needed:.2f} GB/s ({needed / table.sustained_gb_per_s.point:.1f}×" in text
    assert "more readers: 2 worker processes read 2.00× as fast as none" in text
    assert "Nothing shared the machine while the study ran: no size or job had other processes' user CPU over" in text
    assert "| 0.02 / 0.01 |" in text  # each size's other CPU and steal, in the stage table
    assert words.scale_section(None, jobs, steps) == ""
    unverified = dataclasses.replace(table, cold_verified=False, bend_by="timing")
    text = words.scale_section(unverified, jobs, steps)
    assert "**The cold reads could not be verified as cold**" in text
    assert "By timing alone, the warm read was no faster than the cold one from 40 GB on" in text
    words.scale_figure(jobs, steps, tmp_path / "s.png", tmp_path / "s.svg")
    assert (tmp_path / "s.png").stat().st_size > 0


def test_timed_chunks_close_where_asked_and_keep_the_last_partial_chunk() -> None:
    amounts, seconds = measure.timed_chunks([1.0, 2.0, 3.0, 4.0, 5.0], lambda _, steps: steps >= 2)
    assert amounts == [3.0, 7.0, 5.0] and len(seconds) == 3 and all(s >= 0 for s in seconds)
    amounts, _ = measure.timed_chunks([4.0, 4.0, 1.0, 7.0], lambda done, _: done >= 5)
    assert amounts == [8.0, 8.0]
    assert measure.timed_chunks([], lambda *_: True) == ([], [])


def test_timed_chunks_time_the_work_s_own_set_up() -> None:
    """The clock starts before the first step: a reader's workers started inside the generator are timed."""

    def slow_start():
        time.sleep(0.05)
        yield 1.0

    _, seconds = measure.timed_chunks(slow_start(), lambda *_: False)
    assert seconds[0] >= 0.05


def test_the_raw_read_reads_every_byte_in_samples_of_its_chunk_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(measure, "CHUNK", 1024)
    monkeypatch.setattr(measure, "READ_CHUNKS_PER_SAMPLE", 2)
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_bytes(b"x" * 3000)
    second.write_bytes(b"y" * 1100)
    amounts, seconds = measure.raw_read([first, second])
    # 1024-byte reads, a sample closing once it holds 2048 bytes: 1024 + 1024 | 952 + 1024 + 76 (the last file's tail).
    assert amounts == [2048.0, 2052.0] and len(seconds) == 2


def test_one_size_of_a_tiny_dataset_is_measured_stage_by_stage(tmp_path: Path) -> None:
    rows = 8 * 512
    sd.grow(tmp_path, "npy", rows, features=31, row_group_rows=512, part_rows=4 * 512, seed=1)
    m = measure.measure_size(
        tmp_path,
        target_gb=0.0005,
        rows=rows,
        generate_s=0.1,
        batch_size=128,
        workers=[0, 1],
        method="fadvise",
        available_bytes=measure.available_memory_bytes(),
        seed=1,
    )
    assert m.rows == rows and m.parts == 2 and m.fits_page_cache and m.decode is not None and m.convert is not None
    assert m.decode.amount == rows * 32 * 4 and m.decode.chunks == 8
    assert [(r.kind, r.workers, r.cache) for r in m.readers] == [
        (kind, workers, cache)
        for cache in ("cold", "warm")
        for kind, workers in (("processes", 0), ("processes", 1), ("threads", 1))
    ]
    assert all(r.samples.amount == rows for r in m.readers)
    assert m.cold_read.amount == m.file_bytes == sum(p.stat().st_size for p in tmp_path.glob("part-*"))
    assert m.peak_rss_bytes > 0 and m.workers_peak_rss_bytes > 0  # a worker has run and ended
    if os.path.exists("/proc/stat"):  # metered: the worker's CPU is the job's own, not a neighbour's
        assert m.foreign_cpu_share is not None and m.steal_share is not None
    if measure.storage_bytes_read() is not None:  # Linux: the evicted files were read from storage again
        assert m.cold_storage_bytes >= 0.9 * m.file_bytes


def test_what_shared_the_machine_is_flagged_per_size_and_per_job_and_kept() -> None:
    busy_size = dataclasses.replace(size(4, 60_000.0), foreign_cpu_share=0.6)
    stolen = dataclasses.replace(size(16, 60_000.0), steal_share=0.3)
    slow_after = builders_planner.sentinel_readings(
        seconds=(0.05, 0.05, 0.05, 0.11), median_s=0.05
    )  # timed after the 16 GB size: 2.2× the job's median
    jobs = [
        job("npy", (size(0.1, 90_000.0), busy_size, stolen), sentinel=slow_after),
        job("parquet", (size(0.1, 30_000.0), size(4, 30_000.0), size(16, 30_000.0))),
    ]
    slow_step = dataclasses.replace(
        step("cpu", 40_000.0),
        foreign_cpu_share=0.4,
        sentinel=builders_planner.sentinel_readings(seconds=(0.1, 0.1), median_s=0.1),
    )  # its machine ran at half the study's speed
    table = scale.scale_table(jobs, [slow_step], scenario())
    found = {(b.job, b.target_gb): b.reasons for b in table.busy}
    assert found[("npy", 4)] == ("other processes used 0.60 cores (> 0.25)",)
    assert found[("npy", 16)] == (
        "the hypervisor stole 0.30 cores (> 0.1)",
        "the sentinel timed after it ran 2.20x its job's median",
    )
    assert found[("step cpu", None)][0].startswith("machine speed changed during this job (sentinel 2.00x")
    assert found[("step cpu", None)][1] == "other processes used 0.40 cores (> 0.25)"
    assert ("parquet", None) not in found and ("npy", 0.1) not in found
    assert len(table.bottlenecks) == 2 * 3 * 2  # formats × sizes × cold readers: flagged, never dropped
    text = words.scale_section(table, jobs, [slow_step])
    assert "**Parts of the study shared the machine** (other processes' user CPU over 0.25 cores" in text
    assert "- npy, 4 GB: other processes used 0.60 cores (> 0.25)" in text
    assert "| 0.60 / 0.01 |" in text
    strict = scale.scale_table(jobs, [slow_step], scenario(), NoiseRules(foreign_cpu_share=0.01, steal_share=0.005))
    assert {(b.job, b.target_gb) for b in strict.busy} >= {("npy", 0.1), ("parquet", 0.1)}


def test_a_scale_job_has_a_sentinel_timing_at_its_start_and_after_each_size() -> None:
    with pytest.raises(ValueError, match="timed at the start and after each of the 2 sizes, found 2 timings"):
        job("npy", (size(0.1, 1.0), size(1, 1.0)), sentinel=ticks(2))


def test_a_child_process_waited_for_is_the_jobs_own_cpu_not_a_neighbours(tmp_path) -> None:
    burn = (
        # 0.4 s of its own CPU, however busy the machine is (the suite runs in parallel)
        "import os\nwhile os.times().user < 0.4: sum(i * i for i in range(1000))\nprint(os.times().user)"
    )
    meter = ForeignUserCpuMeter().start()
    child_cpu = float(subprocess.run([sys.executable, "-c", burn], capture_output=True, text=True, check=True).stdout)
    used = meter.stop()
    assert used.own_cpu_s >= 0.9 * child_cpu >= 0.3  # the child's user CPU, counted once it was waited for
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 20 50 1000 10 0 5 300 0 0\n", encoding="ascii")
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    assert contention.machine_user_seconds(str(stat)) == pytest.approx(120 / ticks_per_s)  # user + nice only


def test_the_training_step_rate_is_measured_in_blocks() -> None:
    import torch

    r = scale_step.step_rate(torch.device("cpu"), 16, 8, 64, steps=5, blocks=3, seed=0)
    assert r.chunks == 3 and r.amount == 3 * 5 * 64 and r.per_s.low <= r.per_s.point <= r.per_s.high
    assert np.isfinite(r.per_s.point)


def test_on_a_gpu_the_slower_of_step_and_copy_is_what_the_reader_must_feed() -> None:
    jobs = [job("npy", (size(0.1, 90_000.0),))]
    gpu = dataclasses.replace(step("cuda", 5e6), copy=rate(256 * 4 * 1e6))  # 1e6 rows/s of 255 features and a target
    found = {(b.workers, b.device): b for b in scale.bottlenecks(jobs, [gpu])}
    assert found[(2, "cuda")].stage == "reader" and found[(2, "cuda")].train_samples_per_s == pytest.approx(1e6)
    fast = [job("npy", (size(0.1, 9e6),))]
    copy_bound = {b.workers: b for b in scale.bottlenecks(fast, [gpu])}[2]
    assert copy_bound.stage == "copy" and copy_bound.slower_by.point == pytest.approx(9.0)


def test_the_break_even_figure_gains_the_measured_storage_line(tmp_path) -> None:
    from accel_choice.analyze import costmodel, planner
    from accel_choice.records.grid import Workload
    from accel_choice.render.break_even_figure import break_even_figure

    cpu, gpu = costmodel.assumed("cpu", 1e-5, 5e10, 2e10), costmodel.assumed("gpu", 1.5e-4, 1e13, 1e12)
    base = Workload(rows=8192, features=32, hidden=48, batch_size=512)
    curves = planner.break_even_curves(cpu, gpu, base, {"rows": (1000, 10**8)}, 8e9, 0.3, 10)
    resident = [c for c in curves if c.placement == "resident"]
    plain, with_storage = tmp_path / "a.svg", tmp_path / "b.svg"
    break_even_figure(resident, [], tmp_path / "a.png", plain, gpu_label="GPU")
    label = "reading from disk (npy, 2 worker processes, measured)"
    break_even_figure(resident, [], tmp_path / "b.png", with_storage, gpu_label="GPU", storage=(6e8, label))
    assert label not in plain.read_text() and label in with_storage.read_text()
