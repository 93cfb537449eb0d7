"""The device-generic code of the GPU path, run on device "cpu": variants, non-finite detector, transfers.

Nothing here fakes CUDA: precisions (autocast, GradScaler) and placements (resident, streamed)
run on the CPU, where the same code paths execute and the results are deterministic.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time

import pytest
import torch

from accel_choice import records as record_files
from accel_choice.analyze import aggregate, theory
from accel_choice.io import atomic
from accel_choice.measure import datagen, loaders, steps, training, transfer
from accel_choice.measure import job as measure_job
from accel_choice.measure.job import Envelope
from accel_choice.measure.placement import Prefetched
from accel_choice.records.loads import TransferJob
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import Variant
from builders_data import data_environment

SEED = 20261020
ROWS, FEATURES, HIDDEN, LR, WARMUP, BATCH = 100, 4, 6, 1e-2, 3, 32  # 4 steps: 3 full batches and one of 4
PRECISIONS = ["fp32", "fp16", "bf16"]
PLACEMENTS = ["resident", "streamed", "prefetched"]


@pytest.fixture(scope="module")
def data():
    d = datagen.make_benchmark(ROWS, FEATURES, 0.2, SEED)
    return torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())


def _job(x, y, variants, repeat=0, seed=SEED, grad_scaler=True):
    return training.measure_training_job(
        x,
        y,
        variants,
        repeat=repeat,
        grad_scaler=grad_scaler,
        seed=seed,
        spec=ModelSpec(hidden=HIDDEN, lr=LR),
        warmup_steps=WARMUP,
    )[0]


def _gpu_variants(precisions, placements):
    """A GPU job's variants at BATCH, run on the CPU."""
    return steps.gpu_variants(precisions, placements, batch_size=BATCH, device="cpu")


def _variant(loader, precision, placement):
    (variant,) = steps.gpu_variants([precision], [placement], batch_size=BATCH, device="cpu")
    return dataclasses.replace(variant, loader=loader)


@pytest.fixture(scope="module")
def gpu_job(data):
    return _job(*data, _gpu_variants(PRECISIONS, PLACEMENTS))


def _by(records, precision, placement):
    (record,) = [r for r in records if (r.precision, r.placement) == (precision, placement)]
    return record


# --- variants ---------------------------------------------------------------------------------


def test_gpu_variants_cover_every_precision_and_placement():
    variants = steps.gpu_variants(PRECISIONS, PLACEMENTS, batch_size=BATCH)
    assert [(v.device, v.loader, v.precision, v.placement) for v in variants] == [
        ("cuda", "fastpath", precision, placement) for precision in PRECISIONS for placement in PLACEMENTS
    ]
    assert {(v.batch_size, v.threads, v.compiled) for v in variants} == {(BATCH, torch.get_num_threads(), False)}
    assert [steps.step_of(v, grad_scaler=True).scaler for v in variants] == [False] * 3 + [True] * 3 + [False] * 3
    assert not any(steps.step_of(v, grad_scaler=False).scaler for v in variants)


def test_cpu_variants_are_fp32_on_host():
    assert steps.cpu_variants(["dataloader", "fastpath"], batch_size=BATCH, threads=2) == [
        Variant(
            device="cpu",
            precision="fp32",
            placement="host",
            loader=loader,
            batch_size=BATCH,
            threads=2,
            compiled=False,
        )
        for loader in ("dataloader", "fastpath")
    ]
    # the default update (the profile's, the scaling curve's) is a CPU variant's: eager fp32, no GradScaler
    assert steps.Step() == steps.step_of(steps.cpu_variants(["fastpath"], batch_size=BATCH)[0], grad_scaler=True)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"precision": "fp8"}, "unknown precision 'fp8'; allowed: fp32, fp16, bf16"),
        ({"precision": "float16"}, "unknown precision 'float16'"),
        ({"placement": "pinned"}, "unknown placement 'pinned'; allowed: host, resident, streamed"),
        ({"placement": "device"}, "unknown placement 'device'"),
    ],
)
def test_variant_validation(fields, message):
    (valid,) = _gpu_variants(["fp32"], ["resident"])
    with pytest.raises(ValueError, match=message):
        steps.step_of(dataclasses.replace(valid, **fields), grad_scaler=True)
    with pytest.raises(ValueError, match=message.split(";")[0]):
        _gpu_variants([fields.get("precision", "fp32")], [fields.get("placement", "resident")])


# --- a GPU-shaped job on the CPU -----------------------------------------------------------


def test_one_record_per_variant(gpu_job):
    assert len(gpu_job) == 9
    assert [(r.precision, r.placement) for r in gpu_job] == [
        (v.precision, v.placement) for v in _gpu_variants(PRECISIONS, PLACEMENTS)
    ]
    assert [r.position_in_job for r in gpu_job] == list(range(9))
    assert {r.device for r in gpu_job} == {"cpu"}
    assert {r.loader for r in gpu_job} == {"fastpath"}
    assert {r.repeat for r in gpu_job} == {0}


def test_records_finite_and_invariants_hold(gpu_job):
    for r in gpu_job:
        assert r.finite is True
        assert r.nonfinite_step is None
        for key in ("epoch_s", "samples_per_s", "eval_s", "eval_loss", "final_loss", "mean_train_loss"):
            assert math.isfinite(getattr(r, key)), key
        assert record_files.to_json(r.invariants) == training.check_invariants(record_files.to_json(r), ROWS)
        assert all(record_files.to_json(r.invariants).values())
        assert r.samples == r.eval_samples == ROWS
        assert r.steps == theory.steps_per_epoch(ROWS, BATCH) == 4
        assert r.warmup_steps == WARMUP
        assert 0.0 <= r.eval_accuracy <= 1.0


def test_same_start_and_same_work_per_precision(gpu_job):
    assert len({r.initial_weights_sha256 for r in gpu_job}) == 1
    # every placement feeds identical batches: bitwise identical weights at one precision
    for precision in PRECISIONS:
        resident = _by(gpu_job, precision, "resident")
        for placement in ("streamed", "prefetched"):
            other = _by(gpu_job, precision, placement)
            assert resident.final_weights_sha256 == other.final_weights_sha256, (precision, placement)
            assert other.same_final_weights_across_variants is True
            assert resident.final_loss == other.final_loss
        assert resident.same_final_weights_across_variants is True
    # ... and the precision really changed the arithmetic
    assert len({_by(gpu_job, p, "resident").final_weights_sha256 for p in PRECISIONS}) == 3


def test_fp32_resident_matches_the_cpu_job(data, gpu_job):
    """Resident/streamed on the CPU is the host path: same batches, same weights as the CPU job."""
    (host,) = _job(*data, steps.cpu_variants(["fastpath"], batch_size=BATCH))
    assert host.placement == "host"
    assert _by(gpu_job, "fp32", "resident").final_weights_sha256 == host.final_weights_sha256


def test_grad_scaler_recorded(data, gpu_job):
    assert _by(gpu_job, "fp16", "resident").grad_scaler is True
    assert _by(gpu_job, "fp16", "streamed").grad_scaler is True
    assert all(not r.grad_scaler for r in gpu_job if r.precision != "fp16")
    without = _job(*data, _gpu_variants(["fp16"], PLACEMENTS), grad_scaler=False)
    assert [r.grad_scaler for r in without] == [False, False, False]
    assert all(r.finite for r in without)
    # the scaler really ran: scaled fp16 gradients round differently, so the weights differ
    assert without[0].final_weights_sha256 != _by(gpu_job, "fp16", "resident").final_weights_sha256


def test_no_peak_memory_nor_context_startup_on_cpu(gpu_job):
    for r in gpu_job:
        assert r.peak_memory_bytes is None
        assert r.context_startup_s is None


def test_prefetched_batches_are_the_loaders_batches_copied_one_ahead(data):
    x, y = data
    loader = loaders.make_loader("fastpath", x, y.reshape(-1, 1), BATCH, True, SEED)
    direct = list(loader)
    fetched = list(
        Prefetched(loaders.make_loader("fastpath", x, y.reshape(-1, 1), BATCH, True, SEED), torch.device("cpu"))
    )
    assert len(fetched) == len(direct) == 4
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(direct, fetched))
    assert list(Prefetched([], torch.device("cpu"))) == []

    handed_out, copied = [], []

    class Spy(Prefetched):
        def _copy(self, batch):
            copied.append(batch)
            return super()._copy(batch)

    for _ in Spy(direct, torch.device("cpu")):
        handed_out.append(len(copied))
    # batch k is handed out only after batch k+1's copy was queued (the last has none after it)
    assert handed_out == [2, 3, 4, 4]


def test_odd_repeat_reverses_the_order(data):
    variants = _gpu_variants(["fp32", "bf16"], ["resident"])
    records = _job(*data, variants, repeat=1)
    assert [(r.precision, r.position_in_job) for r in records] == [("bf16", 0), ("fp32", 1)]


# --- the non-finite detector ----------------------------------------------------------------


def _timed_step_of_row(row: int, seed: int) -> int:
    """The step of the timed epoch whose batch holds `row`: the fast path's permutation for `seed`."""
    order = torch.randperm(ROWS, generator=torch.Generator().manual_seed(seed))
    return int((order == row).nonzero()) // BATCH


@pytest.fixture(scope="module")
def planted(data):
    """x with NaN in one row that the timed epoch (seed) meets in step 2 of 4 and the warm-up
    permutation (seed + 1) in another step, so the step recorded tells which pass was seen."""
    x, y = data
    order = torch.randperm(ROWS, generator=torch.Generator().manual_seed(SEED))
    row = next(int(r) for r in order[2 * BATCH : 3 * BATCH] if _timed_step_of_row(int(r), SEED + 1) != 2)
    poisoned = x.clone()
    poisoned[row] = float("nan")
    return poisoned, y, row


@pytest.mark.parametrize(
    ("loader", "precision", "placement", "grad_scaler"),
    [
        ("fastpath", "fp32", "host", True),
        ("dataloader", "fp32", "host", True),  # same permutation in its first pass
        ("fastpath", "fp32", "resident", True),
        ("fastpath", "bf16", "streamed", True),
        ("fastpath", "fp16", "resident", False),
        ("fastpath", "fp16", "streamed", True),  # the scaler skips the step: loss caught
    ],
)
def test_planted_nan_is_caught_at_its_step(planted, loader, precision, placement, grad_scaler):
    x, y, row = planted
    variant = _variant(loader, precision, placement)
    scaled = steps.step_of(variant, grad_scaler=grad_scaler).scaler
    assert scaled is (precision == "fp16" and grad_scaler)
    expected = _timed_step_of_row(row, SEED)
    assert expected == 2 and _timed_step_of_row(row, SEED + 1) != expected
    (record,) = _job(x, y, [variant], grad_scaler=grad_scaler)
    assert record.finite is False
    assert record.nonfinite_step == expected
    # without a scaler the NaN gradient poisons the weights; a GradScaler skips that step instead
    assert (record.final_loss is not None) is scaled  # null: not finite
    # the warm-up met the NaN too, but trained a throw-away copy: the timed model started clean
    (clean,) = _job(torch.nan_to_num(x), y, [variant], grad_scaler=grad_scaler)
    assert record.initial_weights_sha256 == clean.initial_weights_sha256
    assert clean.finite is True and clean.nonfinite_step is None
    assert all(record_files.to_json(record.invariants).values())  # a non-finite run is still a complete epoch


def test_planted_nan_in_the_last_partial_batch(data):
    x, y = data
    order = torch.randperm(ROWS, generator=torch.Generator().manual_seed(SEED))
    row = int(order[-1])  # the 4-row last batch
    poisoned = x.clone()
    poisoned[row, 0] = float("inf")
    (record,) = _job(poisoned, y, steps.cpu_variants(["fastpath"], batch_size=BATCH))
    assert record.finite is False
    assert record.nonfinite_step == 3 == _timed_step_of_row(row, SEED)


def test_aggregate_excludes_the_planted_run_and_lists_its_step(data, planted):
    x, y = data
    variants = _gpu_variants(["fp32"], PLACEMENTS)
    clean = _job(x, y, variants, repeat=0) + _job(x, y, variants, repeat=1)
    bad = _job(planted[0], y, variants, repeat=2)
    assert [r.finite for r in bad] == [False] * len(PLACEMENTS)
    table = aggregate.aggregate_training(clean + bad, ROWS)
    assert [(r.device, r.precision, r.placement) for r in table] == [
        ("cpu", "fp32", "prefetched"),
        ("cpu", "fp32", "resident"),
        ("cpu", "fp32", "streamed"),
    ]
    for row in table:
        mine = sorted((r for r in clean if r.placement == row.placement), key=lambda r: r.repeat)
        assert row.repeats == 2
        assert row.epoch_s_runs == tuple(r.epoch_s for r in mine)
        assert row.epoch_s.point == pytest.approx(statistics.geometric_mean(r.epoch_s for r in mine))
        assert row.mean_train_loss_median == pytest.approx(statistics.median(r.mean_train_loss for r in mine))
        assert math.isfinite(row.mean_train_loss_median)
        assert row.peak_memory_bytes_max is None and row.context_startup_s_median is None
    listed = aggregate.non_finite_runs(clean + bad)
    assert [(e.placement, e.repeat, e.nonfinite_step) for e in listed] == [
        (r.placement, 2, _timed_step_of_row(planted[2], SEED)) for r in bad
    ]
    assert all(e.precision == "fp32" and e.device == "cpu" and e.grad_scaler is False for e in listed)


# --- transfers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def transfers():
    x = torch.randn(1024, 8, generator=torch.Generator().manual_seed(SEED))
    return transfer.measure_transfers(x, [32, 512], "cpu", passes=3, pin=False, repeat=1, envelope=Envelope(seed=SEED))


def test_transfer_copies_and_bytes(transfers):
    assert [(c.what, c.direction, c.memory, c.bytes) for c in transfers.copies] == [
        ("matrix", "host_to_device", "pageable", 1024 * 8 * 4),
        ("batch B=32", "host_to_device", "pageable", 32 * 8 * 4),
        ("batch B=512", "host_to_device", "pageable", 512 * 8 * 4),
        ("target", "host_to_device", "pageable", 1024 * 1 * 4),
        ("predictions", "device_to_host", "pageable", 1024 * 1 * 4),
    ]
    assert transfers.matrix_bytes == 1024 * 8 * 4
    assert transfers.device == "cpu"
    assert transfers.repeat == 1 and transfers.wall_interval[0] <= transfers.wall_interval[1]


def test_the_transfer_environment_is_described_after_the_copies(monkeypatch):
    """Describing the environment asks torch about the GPU, which would start CUDA before the context
    start-up is timed: the timing job's envelope describes it only once the copies are done."""
    calls = []

    def described(seed):
        calls.append(time.time())
        return data_environment()

    monkeypatch.setattr(measure_job.envinfo, "quick_environment", described)
    job = transfer.measure_transfers(
        torch.ones(64, 4), [8], "cpu", passes=1, pin=False, repeat=0, envelope=Envelope(seed=SEED)
    )
    assert job.environment == data_environment() and len(calls) == 1
    assert calls[0] >= job.wall_interval[1]  # after the last copy


def test_transfer_seconds_and_bandwidth(transfers):
    for c in transfers.copies:
        assert len(c.passes) == 3
        assert all(t > 0 for t in c.passes)
        assert c.seconds == statistics.median(c.passes)
        assert c.seconds > 0
        assert c.gb_per_s == pytest.approx(c.bytes / c.seconds / 1e9, rel=1e-12)


def test_transfer_fixed_costs_none_on_cpu(transfers):
    assert transfers.context_startup_s is None
    assert transfers.pin_memory_s is None
    assert len(transfers.loadavg_before) == len(transfers.loadavg_after) == 3


def test_the_transfer_record_round_trips_through_its_file(transfers, tmp_path):
    atomic.write_record(tmp_path / "transfer.rep1.json", transfers)
    assert record_files.read(TransferJob, tmp_path / "transfer.rep1.json") == transfers


def test_copy_record_on_cpu():
    tensor = torch.arange(4096, dtype=torch.float32)
    record = transfer.copy_record("t", "host_to_device", "pageable", tensor, torch.device("cpu"), 2)
    assert record.bytes == 4096 * 4 and len(record.passes) == 2 and record.seconds > 0
