"""The fixed reference step (issue 45 item 2): measure.reference.ReferenceStep timed once per round in every
CPU job, its readings in TrainingJob.reference_step, and the variance components relative to it
(analyze.variance.job_tables with `reference`)."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders_planner import reference_step_readings, sentinel_readings
from builders_training import environment, training_record

from accel_choice import records
from accel_choice.analyze import variance
from accel_choice.io import atomic, paths
from accel_choice.measure import reference, steps, training
from accel_choice.records.model import ModelSpec
from accel_choice.records.sentinel import ReferenceStepReadings
from accel_choice.records.training_job import TrainingJob

SEED = 2
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _job(epochs: int = 3, **fields) -> TrainingJob:
    made = tuple(
        training_record(
            loader=loader, position_in_job=i, epoch_s_each=(0.01,) * epochs, eval_s=0.001, eval_s_each=(0.001,) * epochs
        )
        for i, loader in enumerate(["dataloader", "fastpath"])
    )
    return TrainingJob(
        records=made, wall_interval=(0.0, 10.0), environment=environment(), sentinel=sentinel_readings(), **fields
    )


# --- the record ---------------------------------------------------------------------------------


def test_a_job_keeps_its_reference_step_through_a_round_trip(tmp_path):
    job = _job(reference_step=reference_step_readings())
    path = tmp_path / "t1.rep0.json"
    atomic.write_record(path, job)
    back = records.read(TrainingJob, path)
    assert back == job
    assert back.reference_step.seconds == (0.034, 0.035, 0.036)
    assert _job().reference_step is None  # a GPU job has none


def test_a_reference_step_that_does_not_add_up_is_refused():
    with pytest.raises(ValueError, match="median_s"):
        reference_step_readings(median_s=0.034)
    with pytest.raises(ValueError, match="at least one"):
        reference_step_readings(seconds=(), median_s=0.035)
    with pytest.raises(ValueError, match="reference step timings for rounds"):
        _job(epochs=2, reference_step=reference_step_readings())  # three timings, two rounds
    with pytest.raises(ValueError, match="wall interval"):
        _job(reference_step=reference_step_readings(seconds=(5.0, 6.0, 7.0), median_s=6.0))


# --- the measurement ----------------------------------------------------------------------------


def test_the_reference_step_is_the_same_work_every_time(one_thread):
    step = reference.ReferenceStep()
    with pytest.raises(ValueError, match="after prepare"):
        step.time()  # not prepared: no reading
    step.prepare()
    assert step.seconds == []  # the warm-up pass is not a reading
    assert step.time() > 0 and step.time() > 0
    found = step.readings()
    assert isinstance(found, ReferenceStepReadings)
    assert (found.threads, len(found.seconds), found.median_s) == (1, 2, statistics.median(step.seconds))
    assert found.workload == "mlp 32-48-1 adam bce: 64 steps of B=32"


class _Noted:
    """A stand-in for the sentinel or the reference step: notes when it was timed."""

    threads = 1  # the reference step's: one thread, torch's count in these tests (nothing to settle)
    ticks_on_one_cpu_thread = True  # the sentinel's: its work on the CPU's one thread

    def __init__(self, log: list[str], name: str):
        self.log, self.name = log, name

    def tick(self) -> float:
        self.log.append(self.name)
        return 0.001

    time = tick

    def rehearse(self) -> None:
        self.log.append(f"{self.name} rehearsed")


def test_the_reference_step_is_timed_once_per_round_after_the_tick_outside_every_epoch(monkeypatch, one_thread):
    generator = torch.Generator().manual_seed(SEED)
    x, y = torch.randn(64, 5, generator=generator), (torch.rand(64, 1, generator=generator) > 0.5).float()
    spec = ModelSpec(hidden=4, lr=1e-3)
    variants = steps.cpu_variants(["dataloader", "fastpath"], batch_size=16)
    prepared = [
        training.prepare_variant(v, x, y, grad_scaler=False, seed=SEED, spec=spec, warmup_steps=1) for v in variants
    ]
    log: list[str] = []
    real = training.time_epoch

    def noted(p):
        log.append(f"{p.variant.loader} starts")
        result = real(p)
        log.append(f"{p.variant.loader} ends")
        return result

    monkeypatch.setattr(training, "time_epoch", noted)
    training.measure_interleaved(prepared, 3, 0, _Noted(log, "tick"), reference_step=_Noted(log, "reference"))
    epoch = ["{} starts", "{} ends"]
    forward = [e.format("dataloader") for e in epoch] + [e.format("fastpath") for e in epoch]
    backward = forward[2:] + forward[:2]
    assert log == ["tick", *forward, "tick", "reference", *backward, "tick", "reference", *forward, "tick", "reference"]


def test_a_variant_at_more_threads_settles_after_each_tick_of_the_sentinel_on_one_thread(monkeypatch, one_thread):
    """A GPU job has no reference step: after the sentinel's one-thread work, its CPU variant at two threads
    (timed first in the next, reversed round) still settles at its own count before its epoch."""
    from accel_choice.measure.sentinel import Sentinel

    generator = torch.Generator().manual_seed(SEED)
    x, y = torch.randn(64, 5, generator=generator), (torch.rand(64, 1, generator=generator) > 0.5).float()
    spec = ModelSpec(hidden=4, lr=1e-3)
    variants = [v for t in (1, 2) for v in steps.cpu_variants(["fastpath"], batch_size=16, threads=t)]
    prepared = [
        training.prepare_variant(v, x, y, grad_scaler=False, seed=SEED, spec=spec, warmup_steps=1) for v in variants
    ]
    real, calls = training.switch_to, []
    monkeypatch.setattr(
        training, "switch_to", lambda threads, settle: calls.append((threads, real(threads, settle, 0.0)))
    )
    training.measure_interleaved(prepared, 2, 0, Sentinel(torch.device("cpu")))
    # Round 0: 1 thread (torch's already), then 2 (settled); the tick; round 1 backwards: 2 (settled again), then 1.
    assert calls == [(1, 0), (2, 1), (2, 1), (1, 1)]


def test_a_cpu_job_records_one_reference_step_timing_a_round(one_thread):
    generator = torch.Generator().manual_seed(SEED)
    x, y = torch.randn(64, 5, generator=generator), (torch.rand(64, generator=generator) > 0.5).float()
    step = reference.ReferenceStep()
    made, sentinel = training.measure_training_job(
        x,
        y,
        steps.cpu_variants(["fastpath"], batch_size=32),
        repeat=0,
        seed=SEED,
        spec=ModelSpec(hidden=4, lr=1e-3),
        warmup_steps=1,
        epochs=3,
        reference_step=step,
    )
    readings = step.readings()
    assert len(readings.seconds) == 3 and readings.threads == 1
    job = TrainingJob(
        records=tuple(made),
        wall_interval=(0.0, 60.0),
        environment=environment(),
        sentinel=sentinel,
        reference_step=readings,
    )
    assert job.reference_step.median_s == statistics.median(readings.seconds)


# --- relative variance components ---------------------------------------------------------------

LOADERS = ("dataloader", "fastpath")
SIZES = (32, 512)


def _synthetic(rng: np.random.Generator, jobs: int, tracking: float):
    """CPU records of `jobs` jobs (2 thread counts) with a job effect of sd 0.10 on the log scale, and each
    job's reference median: the job's effect times `tracking` plus 1 % of its own noise."""
    made, references = [], {}
    for threads in (1, 2):
        for repeat in range(jobs):
            shift = rng.normal(0.0, 0.10)
            references[threads, repeat] = float(np.exp(tracking * shift + rng.normal(0.0, 0.01))) * 0.035
            for v, (size, loader) in enumerate((s, lo) for s in SIZES for lo in LOADERS):
                base = 0.1 / (1 + v)
                each = tuple(float(base * np.exp(shift + e)) for e in rng.normal(0.0, 0.03, 5))
                made.append(
                    training_record(
                        batch_size=size,
                        loader=loader,
                        threads=threads,
                        repeat=repeat,
                        position_in_job=v,
                        epoch_s=statistics.median(each),
                        epoch_s_each=each,
                    )
                )
    return made, references


def test_dividing_by_a_reference_that_tracks_the_job_removes_the_job_effect():
    made, references = _synthetic(np.random.default_rng(5), 12, tracking=1.0)
    raw = variance.components(variance.job_tables(made)).job.sd
    relative = variance.components(variance.job_tables(made, references)).job.sd
    assert raw == pytest.approx(0.10, rel=0.35)
    assert relative < 0.03
    # the other components do not change: the reference is one number a job
    found, divided = (
        variance.components(variance.job_tables(made)),
        variance.components(variance.job_tables(made, references)),
    )
    assert divided.epoch.sd == pytest.approx(found.epoch.sd, rel=1e-9)
    assert divided.interaction.sd == pytest.approx(found.interaction.sd, rel=1e-9)


def test_a_reference_that_does_not_track_the_job_leaves_it_and_a_job_without_one_is_left_out():
    made, references = _synthetic(np.random.default_rng(6), 12, tracking=0.0)
    raw = variance.components(variance.job_tables(made)).job.sd
    relative = variance.components(variance.job_tables(made, references)).job.sd
    assert relative == pytest.approx(raw, rel=0.2)
    del references[1, 0]
    tables = variance.job_tables(made, references)
    assert [t.shape[0] for t in tables] == [11, 12]


def test_the_command_states_the_job_effect_relative_to_the_reference_step_and_across_runs(tmp_path):
    folders = []
    for run in range(2):
        made, references = _synthetic(np.random.default_rng(7 + run), 3, tracking=1.0)
        folder = tmp_path / f"run{run}"
        for (threads, repeat), median in references.items():
            mine = tuple(r for r in made if (r.threads, r.repeat) == (threads, repeat))
            step = reference_step_readings(threads=threads, seconds=(median,) * 5, median_s=median)
            job = TrainingJob(
                records=mine,
                wall_interval=(0.0, 100.0),
                environment=environment(),
                sentinel=sentinel_readings(),
                reference_step=step,
            )
            atomic.write_record(folder / paths.training_record("cpu", f"t{threads}.rep{repeat}"), job)
        folders.append(str(folder))
    shown = subprocess.run(
        [sys.executable, "benchmarks/variance_components.py", *folders, "--relative", "--across-runs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| across runs | 2 | 12 | 240 |" in shown  # two thread counts, each the 6 jobs of both runs
    assert "log(epoch / the job's reference step)" in shown
