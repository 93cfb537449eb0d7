"""The GPU acceptance: on a real CUDA device, everything the GPU jobs measure; every test whose code
can run on the CPU runs there too (its `cpu` twin, in every CI run), so a renamed function or a
missing import fails CI instead of the first GPU machine.

Run the CUDA half with `python -m pytest -m gpu` (a few minutes with the machine's own torch,
docs/gpu.md); it is skipped where torch sees no CUDA. Thresholds are sanity floors and the formulas'
bounds, not performance claims.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import math
import re
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
import torch

from accel_choice.analyze import theory
from accel_choice.io import envinfo
from accel_choice.measure import (
    acceptance,
    compile_counts,
    datagen,
    devices,
    loaders,
    placement,
    sentinel,
    steps,
    training,
    transfer,
)
from accel_choice.measure import model as models
from accel_choice.measure.job import Envelope
from accel_choice.records.model import ModelSpec

NO_CUDA = "needs a CUDA device (torch.cuda.is_available() is False)"
CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)])
DEVICES = ["cpu", CUDA]  # the CPU twin first: it runs everywhere

SEED = 20261020
FEATURES, HIDDEN, LR, WARMUP, EPOCHS = 32, 48, 1e-3, 10, 2
ROWS = {"cpu": 512, "cuda": 8192}  # the CPU twin checks the same code on fewer rows
SPEC = ModelSpec(hidden=HIDDEN, lr=LR)
SMALL, LARGE = 32, 512
WIDTHS = (FEATURES, HIDDEN, 1)
REPO = Path(__file__).resolve().parents[1]
PRECISIONS, PLACEMENTS = ("fp32", "fp16", "bf16"), ("resident", "streamed", "prefetched")


@pytest.fixture(scope="module", params=DEVICES)
def device(request) -> torch.device:
    return torch.device(request.param)


@pytest.fixture(scope="module")
def bench_data(device):
    d = datagen.make_benchmark(ROWS[device.type], FEATURES, 0.2, SEED)
    return torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())


def _job(x, y, variants, repeat=0, grad_scaler=True, compile_mode="default"):
    return training.measure_training_job(
        x,
        y,
        variants,
        repeat=repeat,
        grad_scaler=grad_scaler,
        seed=SEED,
        spec=ModelSpec(hidden=HIDDEN, lr=LR),
        warmup_steps=WARMUP,
        epochs=EPOCHS,
        compile_mode=compile_mode,
    )


@pytest.fixture(scope="module")
def gpu_jobs(bench_data, device):
    """Every precision × placement at a small and a large batch size: {B: (records, sentinel)}."""
    return {
        b: _job(*bench_data, steps.gpu_variants(PRECISIONS, PLACEMENTS, batch_size=b, device=device.type))
        for b in (SMALL, LARGE)
    }


# --- the probe ----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_probe_lists_the_device_with_its_uuid_and_the_fingerprint_names_the_one_the_jobs_use(device):
    if device.type == "cpu":  # no CUDA here: the probe says so, and a GPU job would refuse to start
        probed = devices.probe()
        assert devices.fingerprint(devices.probe()) == devices.fingerprint(probed)
        if not probed.cuda_available:
            assert probed.cuda_devices == () and devices.planned_device("auto")[0] in (None, "mps")
            with pytest.raises(devices.DeviceUnavailable, match="this job needs a CUDA device"):
                devices.require("cuda")
        return
    probed = devices.probe()
    assert probed.cuda_available is True
    assert len(probed.cuda_devices) == torch.cuda.device_count() >= 1
    for index, d in enumerate(probed.cuda_devices):
        assert d.index == index
        assert d.name
        assert re.fullmatch(r"\d+\.\d+", d.capability)
        assert d.total_memory_bytes > 2**30
        assert d.multiprocessors > 0
        assert d.uuid is not None and re.fullmatch(r"GPU-[0-9a-f-]{36}", d.uuid), d.uuid
    fingerprint = devices.fingerprint(probed)
    first = probed.cuda_devices[0]
    assert first.uuid in fingerprint and first.name in fingerprint
    assert all(d.uuid not in fingerprint for d in probed.cuda_devices[1:])
    if devices.nvml_library() is None:  # nvidia-ml-py is optional: the driver version is then marked absent
        assert probed.nvidia_driver is None
    else:
        assert probed.nvidia_driver and re.fullmatch(r"\d+(\.\d+)+", probed.nvidia_driver)  # through NVML
    assert devices.fingerprint(devices.probe()) == fingerprint  # stable from one ask to the next
    assert devices.measurable_device(probed) == "cuda"
    assert devices.planned_device("auto") == ("cuda", fingerprint)
    assert devices.require("cuda") == torch.device("cuda")


# --- every variant, its invariants, and what it costs ------------------------------------------


@pytest.mark.parametrize("batch_size", [SMALL, LARGE])
def test_every_precision_and_placement_trains_finite_with_the_invariants(gpu_jobs, batch_size, device):
    records, sentinel = gpu_jobs[batch_size]
    rows, cuda = ROWS[device.type], device.type == "cuda"
    assert {(r.precision, r.placement) for r in records} == {(p, q) for p in PRECISIONS for q in PLACEMENTS}
    assert {r.device for r in records} == {device.type}
    assert len({r.initial_weights_sha256 for r in records}) == 1
    for r in records:
        label = (r.precision, r.placement, batch_size)
        assert r.finite is True and r.nonfinite_step is None, label
        assert all(dataclasses.asdict(r.invariants).values()), label
        assert r.samples == r.eval_samples == rows
        assert r.steps == theory.steps_per_epoch(rows, batch_size)
        assert len(r.epoch_s_each) == len(r.eval_s_each) == EPOCHS
        assert r.epoch_s > 0 and r.eval_s > 0
        assert math.isfinite(r.final_loss) and math.isfinite(r.eval_loss)
        assert r.grad_scaler is (r.precision == "fp16")
        assert (r.context_startup_s is not None and r.context_startup_s > 0) is cuda  # no runtime to start on a CPU
    assert (
        sentinel.workload.startswith(device.type) and len(sentinel.seconds) == EPOCHS + 1
    )  # the start, then after every round
    # NVML's clocks and throttle reasons on a GPU (absent, None, where nvidia-ml-py is not installed)
    assert (sentinel.gpu_start is not None and sentinel.gpu_end is not None) is (
        cuda and devices.nvml_library() is not None
    )


@pytest.mark.parametrize("precision", PRECISIONS)
def test_no_host_sync_inside_a_resident_training_step(bench_data, precision, device):
    """The timed loop of a resident variant must not wait on the GPU (measure.acceptance, whose check
    this is: torch raises on any synchronising call in sync debug mode "error"; on the CPU twin the
    same loop runs, with nothing to synchronise)."""
    losses = acceptance.steps_without_host_sync(*bench_data, precision, LARGE, device)
    assert losses.device.type == device.type and torch.isfinite(losses).all()


def test_adam_is_fused_on_both_sides_and_every_record_names_it(device, gpu_jobs):
    """The same optimizer implementation on the CPU and the GPU (issue 26), in every record."""
    trainer = steps.Trainer(models.build(SPEC, (FEATURES,), SEED).to(device), SPEC, device)  # an fp32 step
    assert trainer.optimizer.defaults["fused"] is True
    records = [r for records, _ in gpu_jobs.values() for r in records]
    assert {r.optimizer_impl for r in records} == {"Adam fused"}
    assert {r.matmul_precision for r in records} == {"highest"}  # the default, set explicitly


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_matmul_precision_is_set_for_the_job_recorded_and_restored(bench_data, device, monkeypatch):
    """timing.matmul_precision holds for the whole job (TF32 on CUDA with "high"), every record says
    which ran, the sentinel's fixed work stays fp32, and the process's setting is restored after."""
    seen = {"step": set(), "sentinel": set()}
    step, tick = steps.Trainer.step, sentinel.Sentinel._run

    def watched_step(self, xb, yb):
        seen["step"].add((torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32))
        return step(self, xb, yb)

    def watched_tick(self, iterations):
        seen["sentinel"].add(torch.get_float32_matmul_precision())
        return tick(self, iterations)

    monkeypatch.setattr(steps.Trainer, "step", watched_step)
    monkeypatch.setattr(sentinel.Sentinel, "_run", watched_tick)
    before = torch.get_float32_matmul_precision()
    records, _ = training.measure_training_job(
        *bench_data,
        steps.gpu_variants(["fp32"], ["resident"], batch_size=LARGE, device=device.type),
        repeat=0,
        seed=SEED,
        spec=SPEC,
        warmup_steps=2,
        precision="high",
    )
    assert [r.matmul_precision for r in records] == ["high"]
    assert seen["step"] == {("high", True)} and seen["sentinel"] == {"highest"}
    assert torch.get_float32_matmul_precision() == before == "highest"


def test_the_timed_evaluation_is_warm(gpu_jobs, device):
    """Evaluation is warmed up with training: the first variant's first timed evaluation (where lazy
    kernel loading would land) is no slower than its later ones beyond noise. (On the CPU twin the
    same records, without the comparison: a CPU shared with other tests is no place for a timing claim.)"""
    for records, _ in gpu_jobs.values():
        first = next(r for r in records if r.position_in_job == 0)
        later = [s for r in records for s in r.eval_s_each if r.precision == first.precision]
        assert len(first.eval_s_each) == EPOCHS and all(s > 0 for s in later)
        if device.type == "cuda":
            assert first.eval_s_each[0] < 3 * sorted(later)[len(later) // 2], (first.eval_s_each, later)


def test_the_epochs_own_memory_is_what_the_formulas_bound(gpu_jobs, device):
    """Peak less the baseline: at least the parameters, gradients, Adam's moments (and the resident
    data), at most the bound plus the allocator's rounding. Either side can fail. (The CPU has no
    allocator to ask: its records hold no memory figures.)"""
    rows = ROWS[device.type]
    assert WIDTHS == acceptance.WIDTHS  # the bound is computed for the acceptance's model: this one
    for batch_size, (records, _) in gpu_jobs.items():
        if device.type == "cpu":
            assert all(r.peak_memory_bytes is None and r.epoch_memory_bytes is None for r in records)
            continue
        for r in records:
            label = (r.precision, r.placement, batch_size, r.epoch_memory_bytes, r.peak_memory_bytes)
            assert r.epoch_memory_bytes is not None and 0 < r.epoch_memory_bytes <= r.peak_memory_bytes, label
        # the acceptance's check (floor and bound of each variant, the allocator's rounding allowed)
        assert acceptance.memory_problems([acceptance.variant_run(r, rows) for r in records], rows) == []


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_an_epoch_keeps_no_tensor_of_a_step_past_the_next(bench_data, device):
    """Each step's loss is copied into a slot of one buffer made before the clock: the tensor a step
    returned is gone when the next step starts. (Kept in a list, each took a 512-byte block of CUDA's
    allocator, 1 MiB of a 2,048-step epoch, and the first GPU run's memory check failed on it.) More
    batches than the epoch's steps is an error, not an overrun. The losses recorded are the steps'."""
    x, y = bench_data
    xd, yd = x.to(device), y.reshape(-1, 1).to(device)
    trainer = steps.Trainer(models.build(SPEC, (FEATURES,), SEED).to(device), SPEC, device)
    returned, alive, step = [], [], trainer.step

    def watched(xb, yb):
        alive.append(sum(ref() is not None for ref, _ in returned))
        loss = step(xb, yb)
        returned.append((weakref.ref(loss), float(loss)))  # float: a host sync, fine outside a timing
        return loss

    trainer.step = watched
    batches = list(placement.batches("resident", "fastpath", x, y, SMALL, True, SEED, device, xd, yd))
    result = steps.train_epoch(trainer, batches, len(batches))
    assert result.finite and result.steps == len(batches) == len(alive) > 2
    assert set(alive) == {0}, alive
    assert result.last_loss == returned[-1][1]
    with pytest.raises(ValueError, match=f"more than the {len(batches) - 1} steps it may take"):
        steps.train_epoch(trainer, batches, len(batches) - 1)


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_loss_record_benchmark_runs_the_librarys_step(device, capsys):
    """benchmarks/loss_record.py, whose per-step figures docs/gpu.md quotes, runs here on a few rows."""
    spec = importlib.util.spec_from_file_location("loss_record", REPO / "benchmarks" / "loss_record.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    us = bench.main(["--device", device.type, "--rows", "256", "--rounds", "2"])
    assert set(us) == {"none", "list", "slot"} and all(len(v) == 2 and min(v) > 0 for v in us.values())
    assert "8 steps of B=32" in capsys.readouterr().out


# Fixtures of pytest plugins a GPU machine's Python brings (pytest-benchmark, pytest-mock, pytest-cov,
# pytest-xdist): a fixture of ours with one of these names breaks the run there.
PLUGINS_FIXTURES = {"benchmark", "benchmark_weave", "mocker", "module_mocker", "session_mocker", "cov", "worker_id"}


def test_no_fixture_of_ours_takes_a_name_a_plugin_owns():
    """pytest-benchmark, installed on the H200 machine, owns `benchmark`: a module fixture of that name
    here stopped its first `pytest -m gpu` with an INTERNALERROR before any CUDA test ran."""
    ours = set()
    for module in sorted((REPO / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in (d for d in node.decorator_list if "fixture" in ast.unparse(d)):
                named = [k.value for k in getattr(decorator, "keywords", []) if k.arg == "name"]
                ours.add(named[0].value if named and isinstance(named[0], ast.Constant) else node.name)
    assert {"device", "bench_data", "gpu_jobs"} <= ours
    assert not ours & PLUGINS_FIXTURES


def test_fp16_without_grad_scaler(bench_data, device):
    variants = steps.gpu_variants(["fp16"], PLACEMENTS, batch_size=LARGE, device=device.type)
    records, _ = _job(*bench_data, variants, grad_scaler=False)
    assert len(records) == len(PLACEMENTS)
    for r in records:
        assert r.grad_scaler is False and r.precision == "fp16"
        assert (r.nonfinite_step is None) is r.finite
        if not r.finite:
            assert 0 <= r.nonfinite_step < r.steps
        assert all(dataclasses.asdict(r.invariants).values())


def test_cuda_graphs_are_captured_and_replayed_in_the_timed_epochs(bench_data, device):
    """timing.compile_mode reduce-overhead: on CUDA every compiled graph runs as a CUDA graph (inductor
    skipped none: no CPU tensor, no mutated input, each update marked as a new iteration) and trains finite,
    the fp16 one under its GradScaler too; the record names the mode, with no graph break. The CPU twin runs
    the same job, where inductor counts every graph as run without CUDA graphs."""
    precisions = ["fp32", "fp16"] if device.type == "cuda" else ["fp32"]  # the CPU twin: the compile is the cost
    variants = steps.gpu_variants(precisions, ["resident"], [True], batch_size=LARGE, device=device.type)
    skipped = compile_counts.cudagraph_skips()
    records, _ = _job(*bench_data, variants, compile_mode="reduce-overhead")
    skipped = compile_counts.cudagraph_skips() - skipped
    assert [(r.precision, r.compile_mode, r.graph_breaks, r.finite) for r in records] == [
        (p, "reduce-overhead", 0, True) for p in precisions
    ]
    assert skipped == 0 if device.type == "cuda" else skipped > 0


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_streamed_peak_does_not_include_the_resident_matrix(device):
    rows = 262_144 if device.type == "cuda" else 8192  # 32 MiB of features: far above any allocator noise
    d = datagen.make_benchmark(rows, FEATURES, 0.2, SEED)
    x, y = torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())

    def streamed_peak(placements):
        records, _ = _job(x, y, steps.gpu_variants(["fp32"], placements, batch_size=4096, device=device.type))
        return next(r.peak_memory_bytes for r in records if r.placement == "streamed")

    streamed_peak(["streamed"])  # first-call allocations (cuBLAS workspace) out of the way
    alone = streamed_peak(["streamed"])
    with_resident = streamed_peak(["resident", "streamed"])
    if device.type == "cpu":  # no allocator to ask on the CPU: no peak, on either side
        assert alone is None and with_resident is None
        return
    assert with_resident - alone < theory.input_bytes(rows, FEATURES) // 2


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_start_up_is_timed_from_a_cold_process(device):
    """In a fresh process (this one's CUDA is long warm): the availability check leaves the driver
    cold (NVML), so the first CUDA call holds driver and context start-up, and the first step's
    excess (cuBLAS, kernel loading) comes on top of it. On the CPU twin the same script, with no
    runtime to start."""
    code = f"""
import json, sys, torch
sys.path.insert(0, {str(REPO / "workflow" / "scripts")!r})
from accel_choice.measure import datagen, devices, steps, training
from accel_choice.records.model import ModelSpec
if {device.type!r} == "cuda":
    device = devices.require("cuda")
    assert not torch.cuda.is_initialized(), "asking for the GPU initialised CUDA"
    # torch's flag alone would not tell: had NVML failed, torch would have counted the devices with the
    # CUDA runtime, starting the driver without setting it
    assert torch.cuda._device_count_nvml() >= 1, "NVML did not count the devices"
else:
    device = torch.device("cpu")
d = datagen.make_benchmark(4096, 32, 0.2, 1)
records, _ = training.measure_training_job(
    torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy()),
    steps.gpu_variants(["fp32"], ["resident"], batch_size=512, device=device.type), repeat=0, grad_scaler=True,
    seed=1, spec=ModelSpec(hidden=48, lr=1e-3), warmup_steps=5)
r = records[0]
print(json.dumps({{"context": r.context_startup_s, "startup": r.startup_s, "first": r.warmup_first_step_s,
                  "steady": r.warmup_steady_step_s}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if device.type == "cpu":
        assert found["context"] is None and found["startup"] >= 0 and found["first"] > 0 and found["steady"] > 0
        return
    assert found["context"] > 0.001  # driver initialisation and a context: milliseconds at the least
    assert found["first"] > found["steady"]  # the first step paid something a steady one does not
    # from before the first CUDA call to the end of the first step, less a steady step
    assert found["startup"] >= found["context"] + found["first"] - 2 * found["steady"]


def test_prefetched_batches_arrive_intact_through_the_copy_stream(bench_data, device):
    x, y = bench_data
    y = y.reshape(-1, 1)
    cuda = device.type == "cuda"  # pinned memory and the copy stream are CUDA's; elsewhere the same order
    host_x, host_y = (x.pin_memory(), y.pin_memory()) if cuda else (x, y)
    first = next(iter(loaders.make_loader("fastpath", host_x, host_y, LARGE, True, SEED, pin=cuda)))[0]
    assert first.is_pinned() is cuda
    direct = [(a.to(device), b.to(device)) for a, b in loaders.make_loader("fastpath", x, y, LARGE, True, SEED)]
    fetched = list(
        placement.Prefetched(loaders.make_loader("fastpath", host_x, host_y, LARGE, True, SEED, pin=cuda), device)
    )
    devices.synchronize(device)
    assert len(fetched) == len(direct) == ROWS[device.type] // LARGE
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(direct, fetched))


# --- copies ---------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)
def test_transfers_on_cuda_and_pinned_memory_is_faster_than_pageable():
    # CUDA only: copies to a device are what it measures; measure.transfer's CPU path is tests/test_gpu_paths.py's.
    rows = 262_144  # a 32 MiB matrix: large enough that bandwidth, not latency, decides
    x = torch.from_numpy(datagen.make_benchmark(rows, FEATURES, 0.2, SEED).features.copy())
    t = transfer.measure_transfers(x, [SMALL, LARGE], "cuda", passes=5, repeat=0, envelope=Envelope(seed=SEED))
    assert t.device == "cuda"
    assert t.context_startup_s is not None and t.context_startup_s > 0
    assert t.pin_memory_s is not None and t.pin_memory_s > 0
    copies = {(c.what, c.memory): c for c in t.copies}
    assert set(copies) == {
        ("matrix", "pageable"),
        (f"batch B={SMALL}", "pageable"),
        (f"batch B={LARGE}", "pageable"),
        ("matrix", "pinned"),
        (f"batch B={SMALL}", "pinned"),
        (f"batch B={LARGE}", "pinned"),
        ("target", "pageable"),
        ("predictions", "pageable"),
    }
    assert copies[("matrix", "pinned")].bytes == rows * FEATURES * 4
    assert copies[(f"batch B={LARGE}", "pinned")].bytes == LARGE * FEATURES * 4
    assert copies[("predictions", "pageable")].bytes == rows * 4
    assert copies[("predictions", "pageable")].direction == "device_to_host"
    for c in t.copies:
        assert c.seconds > 0 and c.gb_per_s is not None and c.gb_per_s > 0
    assert copies[("matrix", "pinned")].gb_per_s > copies[("matrix", "pageable")].gb_per_s


# --- the verdict from real GPU records ----------------------------------------------------------------


@pytest.mark.parametrize("device", [CUDA], indirect=True)
def test_a_verdict_is_computed_from_real_cpu_and_gpu_records(bench_data, tmp_path, device):
    # The analysis and the file formats need what a bare GPU machine may lack (docs/gpu.md): imported here,
    # so the module and every other test collect with torch, numpy and pydantic alone.
    for package in ("pandas", "pyarrow", "scipy", "matplotlib"):
        pytest.importorskip(package)
    from accel_choice.analyze import aggregate, decision, fullpath, loads
    from accel_choice.analyze.figures import Figures
    from accel_choice.io import dataio
    from accel_choice.measure import loadconv

    x, y = bench_data
    cpu = [r for repeat in range(2) for r in _job(x, y, steps.cpu_variants(["fastpath"], batch_size=LARGE), repeat)[0]]
    gpu = [
        r
        for repeat in range(2)
        for r in _job(x, y, steps.gpu_variants(["fp32"], ["resident"], batch_size=LARGE), repeat)[0]
    ]
    cells = aggregate.aggregate_training(cpu + gpu, ROWS["cuda"])
    dataset = datagen.make_benchmark(ROWS["cuda"], FEATURES, 0.2, SEED)
    parquet, csv = tmp_path / "benchmark.parquet", tmp_path / "benchmark.csv"
    export = dataio.export_dataset(dataset, parquet, csv, "zstd", envinfo.quick_environment(SEED))
    spec = loadconv.FileToLoad(
        parquet, "benchmark", "parquet", dataset.feature_columns, dataset.target_column, export.matrix_sha256
    )
    load_jobs = [
        loadconv.measure_load_convert([spec], passes=3, repeat=r, envelope=Envelope(seed=SEED)) for r in range(2)
    ]
    transfers = loads.aggregate_transfers(
        [
            transfer.measure_transfers(x, [LARGE], "cuda", passes=3, y=y, repeat=r, envelope=Envelope(seed=SEED))
            for r in range(2)
        ]
    )
    rows = fullpath.full_path(cells, loads.aggregate_load_convert(load_jobs), transfers)
    assert {r.device for r in rows} == {"cpu", "cuda"}
    comparison = decision.compare_devices(rows, 1.5, cells)
    assert comparison is not None
    assert comparison.speedup.low <= comparison.speedup.point <= comparison.speedup.high
    outcome = decision.verdict(
        cells,
        rows,
        envinfo.quick_environment(SEED),
        Figures(WIDTHS),
        rows=ROWS["cuda"],
        probe=devices.probe(),
        threshold=1.5,
    )
    assert outcome.outcome in ("GPU", "CPU", "undecided") and outcome.reason


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_cpu_timed_beside_the_gpu_is_interleaved_and_pairs_with_it_job_by_job(bench_data, device):
    pytest.importorskip("scipy")  # the pairing's t quantiles; torch, numpy and pydantic alone time the job
    from accel_choice.analyze import aggregate, decision_intervals, same_jobs

    x, y = bench_data
    on_device = steps.gpu_variants(["fp32"], ["resident"], batch_size=LARGE, device=device.type, threads=1)
    beside = steps.cpu_variants(["fastpath"], batch_size=LARGE, threads=1)
    jobs = [
        training.measure_training_job(
            x, y, on_device, repeat=r, seed=SEED, spec=SPEC, warmup_steps=WARMUP, epochs=EPOCHS, beside=beside
        )[0]
        for r in range(2)
    ]
    for records in jobs:
        own, cpu = records[:1], records[1:]
        assert [r.device for r in own] == [device.type] and [r.device for r in cpu] == ["cpu"]
        assert sorted(r.position_in_job for r in records) == [0, 1]  # one job, its rounds interleaved
        # Each device's weights against its own only: fp32 on a GPU and on the CPU round differently.
        assert all(r.finite and r.same_final_weights_across_variants for r in records)
        assert cpu[0].reference_epoch_s is not None  # beside its plain loop, as in a CPU job
    gpu_cells, cpu_cells = (
        aggregate.aggregate_training([r for job in jobs for r in part(job)], ROWS[device.type], table="gpu")
        for part in (lambda job: job[:1], lambda job: job[1:])
    )
    ratio = decision_intervals.per_epoch_speedup(cpu_cells[0], gpu_cells[0], 0.95, cpu_cells)
    assert ratio.method == same_jobs.ALONE and ratio.jobs == 2 and ratio.low <= ratio.point <= ratio.high


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_gpu_jobs_script_writes_the_cpu_timed_beside_the_gpu(device, tmp_path, monkeypatch):
    """workflow/scripts/time_gpu_training.py on this device; the CPU twin stands the CPU in for the GPU."""
    pytest.importorskip("pyarrow")  # the job reads the exported Parquet
    import runpy
    from types import SimpleNamespace

    from accel_choice import records
    from accel_choice.io import atomic, dataio, runtime
    from accel_choice.records.data import BenchmarkGenerator
    from accel_choice.records.training_job import TrainingJob

    if device.type == "cpu":
        monkeypatch.setattr(devices, "require", lambda device_type, *args, **kwargs: torch.device("cpu"))
    rows, data = ROWS["cpu"], tmp_path / "data"
    data.mkdir()
    with runtime.job(data / "made.log", 1):  # its records vouched for, as a job's
        dataset = datagen.make_benchmark(rows, FEATURES, 0.2, SEED)
        made = BenchmarkGenerator(rows=rows, features=FEATURES, noise=0.2, seed=SEED)
        dataio.save_dataset(dataset, data / "b.npy", data / "b.meta.json", made, envinfo.quick_environment(SEED))
        export = dataio.export_dataset(
            dataset, data / "b.parquet", data / "b.csv", "zstd", envinfo.quick_environment(SEED)
        )
        atomic.write_record(data / "b.export.json", export)
    params = dict(
        device=device.type,
        gpu_threads=1,
        thread_counts=[1, 2],
        seed=SEED,
        model=dict(hidden=HIDDEN, lr=LR),
        precisions=["fp32"],
        placements=["resident"],
        grad_scaler=True,
        warmup_steps=2,
        epochs_per_job=2,
        compile=[False],
        compile_mode=None,
        matmul_precision="highest",
    )
    job = SimpleNamespace(
        input=SimpleNamespace(data=data / "b.parquet", meta=data / "b.meta.json", export=data / "b.export.json"),
        wildcards=SimpleNamespace(batch_size=str(LARGE), repeat="1"),
        params=SimpleNamespace(**params),
        threads=2,
        log=[str(tmp_path / "job.log")],
        output=[str(tmp_path / "bs512.rep1.json")],
        config={"aggregate": {}},
    )
    runpy.run_path(str(REPO / "workflow/scripts/time_gpu_training.py"), init_globals={"snakemake": job})
    written = records.read(TrainingJob, job.output[0])
    assert [(r.device, r.placement, r.threads) for r in written.records] == [(device.type, "resident", 1)]
    assert sorted((r.device, r.loader, r.threads) for r in written.beside) == [
        ("cpu", "fastpath", 1),
        ("cpu", "fastpath", 2),
    ]
    assert {r.batch_size for r in (*written.records, *written.beside)} == {LARGE}
    assert sorted(r.position_in_job for r in (*written.records, *written.beside)) == [0, 1, 2]
    # Given fewer threads than its largest CPU count, the job stops before it times anything, naming the key.
    job.threads = 1
    with pytest.raises(SystemExit, match="config key timing.threads: this job times cells at up to 2 torch threads"):
        runpy.run_path(str(REPO / "workflow/scripts/time_gpu_training.py"), init_globals={"snakemake": job})


# --- fair measurements (issue 26 item 3) --------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_sentinel_holds_no_device_memory_between_ticks(device):
    """Its operands are copied to the device for a tick and dropped after: what is allocated after a
    tick is what was before it, so no timed epoch carries the sentinel's 2 x 64 MiB in its peak."""
    sentinel.Sentinel(device).tick()  # first-call allocations (cuBLAS's workspaces) out of the way
    devices.synchronize(device)
    before = devices.allocated_memory_bytes(device)
    probe = sentinel.Sentinel(device)
    probe.tick()
    devices.synchronize(device)
    assert probe.held_on_device() == () and probe.a.device.type == "cpu"
    assert devices.allocated_memory_bytes(device) == before  # None == None on the CPU: no allocator to ask


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_a_planted_over_allocation_fails_the_memory_check(bench_data, device, monkeypatch):
    """An update that also holds 32 MiB for the whole epoch: its epoch's own memory exceeds the
    formulas' bound, and the acceptance's memory check names every such variant. (The CPU twin runs
    the same planted job; its records carry no memory figure, which the check fails as well.)"""
    planted, step = 32 * 2**20, steps.Trainer.step
    held = []

    def hoarding_step(self, xb, yb):
        if not hasattr(self, "hoard"):
            self.hoard = torch.empty(planted, dtype=torch.uint8, device=self.device)
            held.append(self.hoard.numel())
        return step(self, xb, yb)

    monkeypatch.setattr(steps.Trainer, "step", hoarding_step)
    x, y = bench_data
    records, _ = _job(
        x, y, steps.gpu_variants(["fp32"], ["resident", "streamed"], batch_size=LARGE, device=device.type)
    )
    assert len(held) >= len(records) * EPOCHS  # every timed epoch's trainer held it
    rows = ROWS[device.type]
    runs = [acceptance.variant_run(r, rows) for r in records]
    problems = acceptance.memory_problems(runs, rows)
    assert len(problems) == len(records), problems
    if device.type == "cuda":
        assert all(r.epoch_memory_bytes >= planted > r.memory_bound_bytes for r in runs), runs
    else:
        assert all(r.epoch_memory_bytes is None for r in runs) and all("None not in" in p for p in problems)


def test_skipped_grad_scaler_steps_are_counted_and_recorded(bench_data, device, gpu_jobs):
    """A GradScaler skips an update whose gradient overflowed: a scale far too large overflows every
    fp16 gradient, so every step of the epoch is skipped (the weights do not move) and counted, with
    no host sync inside the loop; the default scale skips none here. Every fp16 record counts them,
    no other record has a count."""
    x, y = bench_data
    xd, yd = x.to(device), y.reshape(-1, 1).to(device)

    def epoch(init_scale, spec):
        update = steps.Step(precision="fp16", scaler=True)
        trainer = steps.Trainer(models.build(spec, (FEATURES,), SEED).to(device), spec, device, update)
        trainer.scaler = torch.amp.GradScaler(device.type, init_scale=init_scale)
        trainer.prime()
        assert (steps.optimizer_steps(trainer.optimizer) == 0) is (spec.optimizer == "adam")  # which way counts
        before = models.state_sha256(trainer.model)
        batches = list(placement.batches("resident", "fastpath", x, y, LARGE, True, SEED, device, xd, yd))
        result = steps.train_epoch(trainer, batches, len(batches))
        return result, before == models.state_sha256(trainer.model)

    # Adam counts its steps (no work in the loop); SGD keeps no count (the scale after each update)
    for spec in (SPEC, dataclasses.replace(SPEC, optimizer="sgd")):
        overflowing, unmoved = epoch(2.0**100, spec)
        assert overflowing.skipped_steps == overflowing.steps > 0 and unmoved, spec
        taken, unmoved = epoch(2.0**8, spec)
        assert taken.skipped_steps == 0 and not unmoved, spec
    eager = steps.train_epoch(steps.Trainer(models.build(SPEC, (FEATURES,), SEED).to(device), SPEC, device), [], 1)
    assert eager.skipped_steps is None  # no scaler, no count
    for records, _ in gpu_jobs.values():
        for r in records:
            assert (r.scaler_skipped_steps is None) is (r.precision != "fp16"), r
            assert r.scaler_skipped_steps is None or 0 <= r.scaler_skipped_steps <= r.steps


def test_skipped_updates_are_the_scales_decreases():
    scales = torch.tensor([2.0**16, 2.0**15, 2.0**15, 2.0**16, 2.0**15, 2.0**14])
    assert steps.skipped_updates(scales, 0.5) == 3
    assert steps.skipped_updates(torch.tensor([8.0]), 0.5) == 0
    with pytest.raises(ValueError, match="backs off"):
        steps.skipped_updates(scales, 1.0)
