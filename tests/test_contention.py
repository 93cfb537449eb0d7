"""Contaminated measurements: a busy neighbour during one repeat is seen and flagged."""

from __future__ import annotations

import subprocess
import sys
import time

import dataclasses

import pytest
import torch

from accel_choice.analyze import aggregate, stats
from accel_choice.analyze.stats import NoiseRules
from builders_training import training_record
from accel_choice.measure import contention, datagen, steps, training
from accel_choice.records.model import ModelSpec

BUSY = "import time\nend = time.time() + 30\nwhile time.time() < end: pass\n"


@pytest.fixture()
def busy_neighbours():
    """Two spinning processes (they stop by themselves after 30 s at the latest)."""
    processes = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    time.sleep(0.3)
    yield processes
    for process in processes:
        process.kill()
        process.wait()


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_machine_busy_seconds_counts_up():
    first = contention.machine_busy_seconds()
    _spin(0.2)
    assert contention.machine_busy_seconds() >= first + 0.1


def test_own_work_is_counted_as_own():
    meter = contention.ForeignCpuMeter().start()
    # 1 s of this process's own CPU, however long that takes on a busy machine (the suite runs in parallel)
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass
    reading = meter.stop()
    assert reading.own_cpu_s == pytest.approx(1.0, abs=0.2)
    assert reading.wall_s >= reading.own_cpu_s - 0.05  # one thread cannot use more CPU than the wall allows


def test_busy_neighbours_are_foreign_cpu(busy_neighbours):
    meter = contention.ForeignCpuMeter().start()
    _spin(1.0)
    assert meter.stop().share > 0.5


ROWS = 512  # 16 steps of 32, one epoch: long enough for the meter, short beside two spinning neighbours


def _job(repeat: int):
    dataset = datagen.make_benchmark(ROWS, 16, 0.2, 3)
    x, y = torch.from_numpy(dataset.features.copy()), torch.from_numpy(dataset.target.copy())
    return training.measure_training_job(
        x,
        y,
        steps.cpu_variants(["dataloader", "fastpath"], batch_size=32),
        repeat=repeat,
        seed=3,
        spec=ModelSpec(hidden=16, lr=1e-3),
        warmup_steps=5,
        epochs=1,
    )[0]


def test_a_repeat_with_a_busy_neighbour_is_flagged(busy_neighbours):
    contaminated = _job(1)
    assert all(r.foreign_cpu_share > NoiseRules().foreign_cpu_share for r in contaminated)
    # Two clean repeats, shaped by the real record, with the share a quiet machine shows.
    clean = [
        dataclasses.replace(r, repeat=repeat, foreign_cpu_share=0.01, loadavg_after=r.loadavg_before)
        for repeat in (0, 2)
        for r in contaminated
    ]
    table = aggregate.aggregate_training(clean + contaminated, ROWS)
    for row in table:
        assert [c.repeat for c in row.contaminated] == [1]
        assert "other processes used" in row.contaminated[0].reasons[0]


@pytest.mark.parametrize(
    ("share", "before", "after", "expected"),
    [
        (0.1, 0.5, 0.6, []),
        (0.6, 0.5, 0.6, ["other processes used 0.60 cores during the job (> 0.25)"]),
        (None, 0.5, 1.2, ["1-min load average rose by 0.70 (> 0.5)"]),
        (
            0.3,
            0.1,
            0.9,
            ["other processes used 0.30 cores during the job (> 0.25)", "1-min load average rose by 0.80 (> 0.5)"],
        ),
    ],
)
def test_contamination_reasons(share, before, after, expected):
    record = training_record(foreign_cpu_share=share, loadavg_before=(before, 0, 0), loadavg_after=(after, 0, 0))
    assert stats.contamination(record) == expected


# --- where /proc/stat is missing (macOS, Windows): psutil's CPU times, or an honest None -------


def test_without_proc_stat_the_meters_read_psutil(tmp_path, monkeypatch):
    missing = str(tmp_path / "no-proc-stat")
    real = contention.cpu_ticks
    monkeypatch.setattr(contention, "cpu_ticks", lambda stat="/proc/stat": real(missing))
    busy = contention.machine_busy_seconds()
    assert busy is not None and busy > 0
    _spin(0.2)
    assert contention.machine_busy_seconds() >= busy + 0.1  # this process's spin counts as busy
    assert contention.machine_user_seconds() > 0
    meter = contention.ForeignCpuMeter().start()
    _spin(0.3)
    assert meter.stop().share is not None  # contamination detection stays on


def test_without_proc_stat_or_psutil_the_meters_say_they_cannot_tell(tmp_path, monkeypatch):
    missing = str(tmp_path / "no-proc-stat")
    real = contention.cpu_ticks
    monkeypatch.setattr(contention, "cpu_ticks", lambda stat="/proc/stat": real(missing))
    monkeypatch.setitem(sys.modules, "psutil", None)  # `import psutil` fails, as on a bare GPU machine
    assert contention.machine_busy_seconds() is None and contention.steal_seconds() is None
    assert contention.ForeignCpuMeter().start().stop().share is None
