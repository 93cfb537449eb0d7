"""On a real CUDA device: the GPU variants, transfers and probe. Skipped where torch sees no CUDA.

Run with `python -m pytest -m gpu`. Thresholds are sanity floors, not performance claims.
"""

from __future__ import annotations

import math
import re

import pytest
import torch

from accel_choice.io import envinfo
from accel_choice.measure import datagen, devices, training, transfer
from accel_choice.analyze import decision, theory

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)"
    ),
]

SEED = 20261020
ROWS, FEATURES, HIDDEN, LR, WARMUP, BATCH, EPOCHS = 8192, 32, 48, 1e-3, 10, 512, 3
WIDTHS = (FEATURES, HIDDEN, 1)


@pytest.fixture(scope="module")
def benchmark():
    d = datagen.make_benchmark(ROWS, FEATURES, 0.2, SEED)
    return torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())


def _job(x, y, variants, repeat=0):
    return training.measure_training_job(
        x,
        y,
        BATCH,
        repeat,
        variants,
        seed=SEED,
        hidden=HIDDEN,
        lr=LR,
        warmup_steps=WARMUP,
        device="cuda",
        epochs=EPOCHS,
    )[0]


@pytest.fixture(scope="module")
def gpu_job(benchmark):
    return _job(*benchmark, training.gpu_variants(["fp32", "fp16", "bf16"], ["resident", "streamed"], True))


def test_probe_lists_the_device():
    probed = devices.probe()
    assert probed.cuda_available is True
    assert len(probed.cuda_devices) == torch.cuda.device_count() >= 1
    for index, d in enumerate(probed.cuda_devices):
        assert d.index == index
        assert d.name
        assert re.fullmatch(r"\d+\.\d+", d.capability)
        assert d.total_memory_bytes > 2**30
        assert d.multiprocessors > 0
    fingerprint = devices.fingerprint(probed)
    assert fingerprint != "none" and probed.cuda_devices[0].name in fingerprint
    assert devices.measurable_device(probed) == "cuda"
    assert devices.planned_device("auto") == ("cuda", fingerprint)
    assert devices.require("cuda") == torch.device("cuda")


def test_gpu_variants_records(gpu_job):
    assert len(gpu_job) == 6
    assert {r["device"] for r in gpu_job} == {"cuda"}
    assert len({r["initial_weights_sha256"] for r in gpu_job}) == 1
    for r in gpu_job:
        assert r["finite"] is True and r["nonfinite_step"] is None, (r["precision"], r["placement"])
        assert all(r["invariants"].values())
        assert r["samples"] == r["eval_samples"] == ROWS
        assert r["steps"] == 16
        assert r["epoch_s"] > 0 and r["eval_s"] > 0
        assert math.isfinite(r["final_loss"]) and math.isfinite(r["eval_loss"])
        assert r["grad_scaler"] is (r["precision"] == "fp16")
        assert r["context_startup_s"] is not None and r["context_startup_s"] > 0
    # fp32 resident vs streamed need not be bitwise identical on a GPU (kernel choice): not asserted


def test_peak_memory_above_what_must_be_allocated(gpu_job):
    adam = theory.adam_fp32_bytes(WIDTHS)
    resident_data = theory.input_bytes(ROWS, FEATURES + 1)  # x and y on the device
    for r in gpu_job:
        peak = r["peak_memory_bytes"]
        assert isinstance(peak, int)
        assert peak > adam  # parameters, gradients and both Adam moments are allocated together
        if r["placement"] == "resident":
            assert peak >= adam + resident_data
    # the report's bound (Adam + 2x forward activations + resident data) is what the peak is compared with;
    # the fp32 resident peak is above it: the allocator's workspace comes on top
    fp32 = next(r for r in gpu_job if (r["precision"], r["placement"]) == ("fp32", "resident"))
    assert fp32["peak_memory_bytes"] >= decision.memory_bound_bytes(WIDTHS, BATCH, ROWS)


def test_fp16_without_grad_scaler(benchmark):
    records = _job(*benchmark, training.gpu_variants(["fp16"], ["resident", "streamed"], False))
    assert len(records) == 2
    for r in records:
        assert r["grad_scaler"] is False
        assert r["precision"] == "fp16"
        assert (r["nonfinite_step"] is None) is r["finite"]
        if not r["finite"]:
            assert 0 <= r["nonfinite_step"] < r["steps"]
        assert all(r["invariants"].values())


def test_transfers_on_cuda(benchmark):
    x, _ = benchmark
    t = transfer.measure_transfers(
        x,
        [32, 512],
        "cuda",
        passes=5,
        repeat=0,  # pins by default on CUDA
        environment=envinfo.quick_environment(SEED),
    )
    assert t.device == "cuda"
    assert t.context_startup_s is not None and t.context_startup_s > 0
    assert t.pin_memory_s is not None and t.pin_memory_s > 0
    copies = {(c.what, c.memory): c for c in t.copies}
    assert set(copies) == {
        ("matrix", "pageable"),
        ("batch B=32", "pageable"),
        ("batch B=512", "pageable"),
        ("matrix", "pinned"),
        ("batch B=32", "pinned"),
        ("batch B=512", "pinned"),
        ("target", "pageable"),
        ("predictions", "pageable"),
    }
    assert copies[("matrix", "pinned")].bytes == ROWS * FEATURES * 4
    assert copies[("batch B=512", "pinned")].bytes == 512 * FEATURES * 4
    assert copies[("predictions", "pageable")].bytes == ROWS * 4
    assert copies[("predictions", "pageable")].direction == "device_to_host"
    for c in t.copies:
        assert c.seconds > 0 and c.gb_per_s is not None and c.gb_per_s > 0
    assert copies[("matrix", "pinned")].gb_per_s > 0.5  # a 1 MiB pinned copy; any PCIe/NVLink link does far more


def test_streamed_peak_does_not_include_the_resident_matrix():
    rows = 262_144  # 32 MiB of features: far above any allocator noise
    d = datagen.make_benchmark(rows, FEATURES, 0.2, SEED)
    x, y = torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())

    def streamed_peak(placements):
        records = training.measure_training_job(
            x,
            y,
            4096,
            0,
            training.gpu_variants(["fp32"], placements, True),
            seed=SEED,
            hidden=HIDDEN,
            lr=LR,
            warmup_steps=WARMUP,
            device="cuda",
        )[0]
        return next(r.peak_memory_bytes for r in records if r.placement == "streamed")

    streamed_peak(["streamed"])  # first-call allocations (cuBLAS workspace) out of the way
    alone = streamed_peak(["streamed"])
    with_resident = streamed_peak(["resident", "streamed"])
    assert with_resident - alone < theory.input_bytes(rows, FEATURES) // 2
