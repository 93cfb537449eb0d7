"""The plain-loop reference a CPU cell is checked against (measure.reference, issue 25 item 6): timed in
the same job, in the middle round beside its variant's epoch, kept in the record, aggregated as the
cell's epoch over it with a paired interval, judged against ±10 % and shown in the report."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from builders_planner import sentinel_readings
from builders_training import environment, estimate, training_cell, training_record

from accel_choice.analyze import accuracy
from accel_choice.analyze.aggregate import aggregate_training
from accel_choice.measure import datagen, reference, steps, training
from accel_choice.records.estimate import Estimate
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import Variant
from accel_choice.records.training_job import TrainingJob
from accel_choice.render import noise

SEED = 11
SPEC = ModelSpec(hidden=8, lr=0.01)


@pytest.fixture(scope="module")
def data():
    made = datagen.make_benchmark(512, 6, 0.2, SEED)
    return torch.from_numpy(made.features.copy()), training.targets(SPEC, torch.from_numpy(made.target.copy()))


def _variant(**changes) -> Variant:
    base = steps.cpu_variants(["fastpath"], batch_size=64, threads=torch.get_num_threads())[0]
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    "changes, has",
    [
        ({}, True),
        ({"loader": "dataloader"}, True),
        ({"compiled": True}, False),
        ({"device": "cuda", "placement": "resident"}, True),  # a GPU job's, batches sliced on the device
        ({"device": "cpu", "placement": "resident"}, True),  # its CPU twin
        ({"device": "cuda", "placement": "resident", "compiled": True}, False),
        ({"device": "cuda", "placement": "resident", "precision": "bf16"}, False),
        ({"device": "cuda", "placement": "streamed"}, False),
        ({"device": "cuda", "placement": "prefetched"}, False),
        ({"precision": "bf16"}, False),
    ],
)
def test_only_eager_fp32_host_or_resident_variants_have_a_reference(changes, has):
    assert reference.has_reference(_variant(**changes)) is has


def test_a_variant_without_a_reference_is_refused(data):
    x, y = data
    with pytest.raises(ValueError, match="only eager fp32 host or resident variants"):
        reference.Reference(_variant(compiled=True), x, y, SPEC, SEED)


@pytest.mark.parametrize("loader", ["fastpath", "dataloader"])
def test_the_plain_loop_is_timed_per_epoch(data, loader):
    x, y = data
    assert reference.Reference(_variant(loader=loader), x, y, SPEC, SEED).time() > 0


def test_the_timers_warm_up_runs_are_short_passes_and_its_timed_runs_whole_epochs(data):
    # Timer.timeit warms up max(number // 100, 2) times: were that to change, a timed run would be short.
    x, y = data
    ref = reference.Reference(_variant(), x, y, SPEC, SEED)
    ref.time()
    ref.time()
    once = [reference.WARM_BATCHES] * reference.TIMER_WARMUPS + [None] * reference.EPOCHS
    assert ref.passes == once + once


@pytest.mark.parametrize("warmups", [0, 1, 3])
def test_a_timer_with_another_warm_up_count_stops_the_job(data, monkeypatch, warmups):
    """Were torch to warm up another number of times, a timed run would be a short pass: the job stops instead."""
    from torch.utils.benchmark.utils import common

    def timeit(self, number):
        for _ in range(warmups + number):
            self._timer.timeit(number=1)
        return common.Measurement(number_per_run=number, raw_times=[1.0], task_spec=self._task_spec)

    monkeypatch.setattr(torch.utils.benchmark.Timer, "timeit", timeit)
    x, y = data
    with pytest.raises(RuntimeError, match="TIMER_WARMUPS no longer matches torch"):
        reference.Reference(_variant(), x, y, SPEC, SEED).time()


@pytest.mark.parametrize("batches, steps", [(2, 2), (None, 512 // 64)])
def test_a_plain_pass_runs_its_batches_or_the_whole_epoch(data, batches, steps):
    x, y = data
    variant = _variant()
    optimizer_steps = []
    original = torch.optim.Adam.step

    def counted(self, *args, **kwargs):
        optimizer_steps.append(1)
        return original(self, *args, **kwargs)

    loop = reference.plain_epoch(variant, x, y, SPEC, SEED)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.optim.Adam, "step", counted)
        loop(batches)
    assert len(optimizer_steps) == steps


class _Clock:
    """A stand-in for a Reference that notes when it was timed, between which epochs."""

    def __init__(self, log: list[str], name: str):
        self.log, self.name = log, name

    def time(self) -> float:
        self.log.append(f"reference {self.name}")
        return 0.001


def test_each_reference_is_timed_once_right_after_its_variants_middle_epoch(data, monkeypatch):
    x, y = data
    variants = steps.cpu_variants(["dataloader", "fastpath"], batch_size=64)
    prepared = [
        training.prepare_variant(v, x, y, grad_scaler=False, seed=SEED, spec=SPEC, warmup_steps=1) for v in variants
    ]
    log: list[str] = []
    real = training.time_epoch

    def noted(p):
        log.append(p.variant.loader)
        return real(p)

    monkeypatch.setattr(training, "time_epoch", noted)
    clocks = [_Clock(log, "dataloader"), None]  # the fast path without one: its record says null
    measured = training.measure_interleaved(prepared, 5, 0, references=clocks)
    assert log == [
        "dataloader",
        "fastpath",
        "fastpath",
        "dataloader",
        "dataloader",  # the middle (third) round
        "reference dataloader",
        "fastpath",
        "fastpath",
        "dataloader",
        "dataloader",
        "fastpath",
    ]
    assert [m["reference_epoch_s"] for m in measured] == [0.001, None]


def test_a_timing_job_records_each_cpu_variants_reference(data):
    x, y = data
    records, _ = training.measure_training_job(
        x,
        y,
        steps.cpu_variants(["dataloader", "fastpath"], batch_size=64),
        repeat=0,
        seed=SEED,
        spec=SPEC,
        warmup_steps=1,
    )
    assert all(r.reference_epoch_s is not None and r.reference_epoch_s > 0 for r in records)


def test_a_gpu_job_records_the_reference_of_its_eager_fp32_resident_variant_alone(data):
    """The GPU path on the CPU (tests/test_gpu.py's twin): of fp32 and bf16, resident and streamed, only the eager
    fp32 resident variant has a plain loop, its model and batches on the variant's device."""
    x, y = data
    variants = steps.gpu_variants(["fp32", "bf16"], ["resident", "streamed"], batch_size=64, device="cpu")
    records, _ = training.measure_training_job(x, y, variants, repeat=0, seed=SEED, spec=SPEC, warmup_steps=1)
    timed = [(r.precision, r.placement) for r in records if r.reference_epoch_s is not None]
    assert timed == [("fp32", "resident")] and all(
        r.reference_epoch_s is None or r.reference_epoch_s > 0 for r in records
    )


def test_the_reference_clock_synchronises_the_variants_device_before_each_read(monkeypatch):
    """The Timer reads reference.clock: the variant's own device synchronised, then time.perf_counter (torch's
    default timer synchronises any accelerator it sees, and would start CUDA in a CPU job on a GPU machine)."""
    seen = []
    monkeypatch.setattr(reference, "synchronize", lambda device: seen.append(device))
    read = reference.clock(torch.device("cpu"))
    assert read() <= read() and seen == [torch.device("cpu")] * 2


def test_the_wall_interval_counts_the_reference():
    """A reference epoch longer than the job took is a damaged record, like an epoch would be."""
    records = (training_record(reference_epoch_s=5.0),)
    with pytest.raises(ValueError, match="more than the job's wall interval"):
        TrainingJob(records=records, wall_interval=(0.0, 1.0), environment=environment(), sentinel=sentinel_readings())
    TrainingJob(records=records, wall_interval=(0.0, 6.0), environment=environment(), sentinel=sentinel_readings())


def test_a_cell_is_its_epoch_over_its_reference_paired_by_job():
    group = [
        training_record(repeat=r, epoch_s=e, epoch_s_each=(e,), reference_epoch_s=ref)
        for r, (e, ref) in enumerate([(0.011, 0.010), (0.022, 0.020), (0.0165, 0.015)])
    ]
    (cell,) = aggregate_training(group, group[0].samples)
    assert cell.reference_s_jobs == (0.010, 0.020, 0.015)
    # Each job 1.1x its reference: the paired ratio is 1.1 with no spread, whatever the jobs' drift.
    assert cell.epoch_s_over_reference.point == pytest.approx(1.1)
    assert cell.epoch_s_over_reference.high - cell.epoch_s_over_reference.low == pytest.approx(0, abs=1e-9)


def test_a_cell_with_a_job_that_timed_no_reference_has_none():
    group = [training_record(repeat=0, reference_epoch_s=0.01), training_record(repeat=1)]
    (cell,) = aggregate_training(group, group[0].samples)
    assert cell.reference_s_jobs is None and cell.epoch_s_over_reference is None


def test_a_cell_refuses_a_reference_without_its_ratio_or_of_the_wrong_length():
    with pytest.raises(ValueError, match="null together"):
        training_cell(reference_s_jobs=(0.01, 0.01, 0.01))
    ratio = estimate(1.0, 0.9, 1.1)
    with pytest.raises(ValueError, match="reference_s_jobs for 3 repeats"):
        training_cell(reference_s_jobs=(0.01,), epoch_s_over_reference=ratio)


@pytest.mark.parametrize(
    "low, high, said",
    [(0.95, 1.08, "within"), (1.12, 1.4, "outside"), (0.5, 0.85, "outside"), (0.95, 1.2, "unsettled")],
)
def test_a_ratio_is_within_outside_or_unsettled_against_the_tolerance(low, high, said):
    ratio = Estimate(point=(low + high) / 2, low=low, high=high, level=0.95, method="m", jobs=3)
    assert accuracy.judge(ratio) == said


def _cell(threads: int, epochs: tuple[float, ...], references: tuple[float, ...]):
    group = [
        training_record(repeat=r, epoch_s=e, epoch_s_each=(e,), reference_epoch_s=ref, threads=threads)
        for r, (e, ref) in enumerate(zip(epochs, references))
    ]
    (cell,) = aggregate_training(group, group[0].samples)
    return cell


def test_a_thread_count_whose_jobs_disagree_with_their_plain_loop_cannot_be_measured():
    steady = _cell(1, (0.0101, 0.0203, 0.0152), (0.010, 0.020, 0.015))  # each job within 1.5 % of its loop
    shaky = _cell(2, (0.008, 0.026, 0.015), (0.010, 0.020, 0.015))  # 0.8x, 1.3x, 1.0x
    one, two = accuracy.by_threads([steady, shaky], cores=2)
    assert (one.threads, one.every_core, one.measurable, one.jobs_outside) == (1, False, True, 0)
    assert (two.threads, two.every_core, two.measurable, two.jobs_outside) == (2, True, False, 2)
    assert one.pooled.point == pytest.approx((1.01 * 1.015 * 1.0133333) ** (1 / 3), rel=1e-3)
    text = noise.accuracy_section([steady, shaky], cores=2)
    assert "| 1 | 0.01" not in text  # a row per cell, with the batch size first
    assert "1.01× (" in text and "within ±10%" in text and "unsettled (reaches ±10%)" in text
    assert "in this run these cells were timed to ±10%" in text
    assert "**in this run these cells could not be timed to ±10%: its 2 threads took every core" in text
    assert "2 of 3 jobs beyond ±10%" in text
    first = noise.accuracy_line([steady, shaky], cores=2)
    assert first == (
        "**Accuracy:** same-work timings spread 24% at 2 threads, over ±10%: smaller differences are not measured "
        "there (see Accuracy)."
    )
    assert noise.accuracy_line([steady], cores=2) == ""


def test_the_section_says_how_the_pipelines_epochs_began():
    """After untimed updates of their own variant (measure.rehearsal), or cold in a run from before it."""
    warm = _cell(1, (0.0101, 0.0203, 0.0152), (0.010, 0.020, 0.015))
    assert "began after up to 8 untimed updates of its own variant" in noise.accuracy_section([warm], cores=2)
    cold = dataclasses.replace(warm, rehearsal_steps=0)
    assert "epochs started cold" in noise.accuracy_section([cold], cores=2)


def test_no_reference_no_section():
    assert noise.accuracy_section([training_cell()], cores=2) == ""


def test_the_warm_up_benchmark_times_both_ways_and_restores_the_short_passes(data):
    """benchmarks/reference_warmups.py, whose figures docs/statistics.md quotes, on small data."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "reference_warmups.py"
    spec = importlib.util.spec_from_file_location("reference_warmups", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, y = data
    kept = reference.WARM_BATCHES
    logs = module.short_over_whole(x, y, "fastpath", 64, pairs=2)
    assert len(logs) == 2 and np.isfinite(logs).all()
    assert reference.WARM_BATCHES == kept is not None  # the short passes again, after whole warm-up epochs
