"""A GPU job's eager fp32 resident variant checked as the CPU cells are (issue 42 item 5): its plain-loop
reference interleaved with its epochs, then its launch floor (the step replayed as a CUDA graph), its eager
step timed the same way and the kernels one step launches (measure.gpu_checks, records.launch).

Every test has a `cpu` twin that runs in every CI run (the GPU code path on the CPU, as tests/test_gpu.py
runs it); `python -m pytest -m gpu` runs the `cuda` half, skipped where torch sees no CUDA. This module needs
torch, numpy, pytest and pydantic only, as a bare GPU machine has them (docs/gpu.md).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from accel_choice import records
from accel_choice.measure import datagen, gpu_checks, reference, sentinel, steps, training
from accel_choice.records.launch import LaunchChecks
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import TrainingRecord

NO_CUDA = "needs a CUDA device (torch.cuda.is_available() is False)"
CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)])
DEVICES = ["cpu", CUDA]  # the CPU twin first: it runs everywhere

SEED, FEATURES, EPOCHS, BATCH = 20261206, 32, 3, 64
ROWS = {"cpu": 512, "cuda": 8192}  # the CPU twin runs the same code on fewer rows
SPEC = ModelSpec(hidden=48, lr=1e-3)


@pytest.fixture(scope="module", params=DEVICES)
def device(request) -> torch.device:
    return torch.device(request.param)


@pytest.fixture(scope="module")
def check_data(device):
    d = datagen.make_benchmark(ROWS[device.type], FEATURES, 0.2, SEED)
    x, y = torch.from_numpy(d.features.copy()), torch.from_numpy(d.target.copy())
    return x, training.targets(SPEC, y)


def _variants(device, precisions=("fp32", "bf16"), placements=("resident", "streamed")):
    return steps.gpu_variants(list(precisions), list(placements), batch_size=BATCH, device=device.type)


def _job(x, y, variants):
    return training.measure_training_job(
        x, y, variants, repeat=0, grad_scaler=True, seed=SEED, spec=SPEC, warmup_steps=3, epochs=EPOCHS
    )[0]


@pytest.fixture(scope="module")
def watched_job(check_data, device):
    """One GPU job of fp32 and bf16, resident and streamed, with every epoch, reference, sentinel tick and
    launch check noted in the order they ran: (records, log)."""
    log: list[str] = []
    patch = pytest.MonkeyPatch()
    epoch, timed, tick, checks = (
        training.time_epoch,
        reference.Reference.time,
        sentinel.Sentinel.tick,
        training.launch_checks,
    )

    def noted_epoch(p):
        log.append(f"epoch {p.variant.precision} {p.variant.placement}")
        return epoch(p)

    def noted_reference(self):
        seconds = timed(self)
        log.append(f"reference {seconds!r}")
        return seconds

    def noted_tick(self):
        log.append("tick")
        return tick(self)

    def noted_checks(variant, *args):
        log.append(f"launch {variant.precision} {variant.placement}")
        return checks(variant, *args)

    patch.setattr(training, "time_epoch", noted_epoch)
    patch.setattr(reference.Reference, "time", noted_reference)
    patch.setattr(sentinel.Sentinel, "tick", noted_tick)
    patch.setattr(training, "launch_checks", noted_checks)
    try:
        made = _job(*check_data, _variants(device))
    finally:
        patch.undo()
    return made, log


def _resident_fp32(made):
    (found,) = [r for r in made if (r.precision, r.placement) == ("fp32", "resident")]
    return found


def test_the_resident_fp32_variant_is_timed_against_its_plain_loop_in_its_middle_round(watched_job):
    """The GPU job times the plain loop once, right after the resident fp32 variant's middle epoch, as a CPU job
    does for each of its cells, and keeps it in that record alone. Fails if the reference were not timed, not
    interleaved (timed before or after the epochs), or not recorded."""
    made, log = watched_job
    epochs = [i for i, said in enumerate(log) if said == "epoch fp32 resident"]
    (at,) = [i for i, said in enumerate(log) if said.startswith("reference")]
    assert len(epochs) == EPOCHS and at == epochs[EPOCHS // 2] + 1, log
    assert log[0] == "tick" and epochs[0] < at < epochs[-1]
    resident = _resident_fp32(made)
    assert resident.reference_epoch_s is not None and log[at] == f"reference {resident.reference_epoch_s!r}"
    assert [r.reference_epoch_s is None for r in made if r is not resident] == [True] * (len(made) - 1)


def test_the_launch_checks_run_after_every_epoch_and_tick_and_are_recorded(watched_job, device):
    made, log = watched_job
    last_timed = max(i for i, said in enumerate(log) if said.startswith(("epoch", "reference", "tick")))
    (at,) = [i for i, said in enumerate(log) if said.startswith("launch")]
    assert log[at] == "launch fp32 resident" and at > last_timed, log
    launch = _resident_fp32(made).launch
    assert [r.launch is None for r in made if r.placement != "resident" or r.precision != "fp32"] == [True] * 3
    assert launch.eager_step_s > 0 and launch.replay_steps == ROWS[device.type] // BATCH
    assert launch.step_kernels > 0 and launch.step_kernels_device_s > 0
    if device.type == "cpu":  # no CUDA graphs: no floor, and the record says why; the CPU's ops counted
        assert (launch.status, launch.launch_floor_step_s, launch.counted) == ("no_cuda_graphs", None, "cpu_ops")
        return
    assert (launch.status, launch.counted) == ("replayed", "cuda_kernels")
    # the floor is a floor: the replay launches every kernel at once, the eager step one by one from Python
    assert 0 < launch.launch_floor_step_s < launch.eager_step_s


def test_a_gpu_jobs_records_round_trip_through_json(watched_job):
    for made in watched_job[0]:
        assert records.from_json(TrainingRecord, records.to_json(made), "a record") == made


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_a_step_is_timed_with_the_clock_read_only_around_its_rounds(device, monkeypatch):
    """seconds_per_step: one untimed round, then each round between two synchronised clock reads; nothing
    synchronises inside a round."""
    log: list[str] = []
    monkeypatch.setattr(gpu_checks, "synchronize", lambda d: log.append("sync"))
    clock = iter(float(t) for t in range(100))
    monkeypatch.setattr(gpu_checks.time, "perf_counter", lambda: log.append("clock") or next(clock))
    seconds = gpu_checks.seconds_per_step(lambda: log.append("step"), device, steps=4, rounds=3)
    timed_round = ["sync", "clock", "step", "step", "step", "step", "sync", "clock"]
    assert log == ["step"] * 4 + timed_round * 3
    assert seconds == pytest.approx(1 / 4)  # the fake clock moved by 1 over each round's 4 steps


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_profiler_counts_what_one_step_launches(check_data, device):
    """Two steps launch twice what one does (a count per step, not per profiler session), and the device
    time they sum to grows with them."""
    (variant,) = _variants(device, ["fp32"], ["resident"])
    step = gpu_checks.StaticStep(variant, *check_data, SPEC, SEED)
    for _ in range(3):
        step.eager()  # warmed: the optimizer's lazy state made
    one, one_s = gpu_checks.count_kernels(step.eager, device)
    two, two_s = gpu_checks.count_kernels(lambda: (step.eager(), step.eager()), device)
    assert one and one > 3 and two == 2 * one and two_s > 0 and one_s > 0


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_the_replayed_graph_trains_as_the_eager_step_does(check_data, device):
    """The captured step updates the weights as the same number of eager steps does: the floor times the
    training step, not an empty graph. (The CPU twin builds and runs the same static step eagerly.)"""
    (variant,) = _variants(device, ["fp32"], ["resident"])
    graphed, eager = (gpu_checks.StaticStep(variant, *check_data, SPEC, SEED) for _ in range(2))
    assert torch.equal(graphed.x, eager.x) and graphed.x.device.type == device.type
    replays = 5
    if device.type == "cuda":
        graph = gpu_checks.capture(graphed)  # CAPTURE_WARMUP eager steps, then the capture
        for _ in range(replays):
            graph.replay()
        torch.cuda.synchronize(device)
    else:
        for _ in range(gpu_checks.CAPTURE_WARMUP + replays):
            graphed.eager()
    for _ in range(gpu_checks.CAPTURE_WARMUP + replays):
        eager.eager()
    seeded = gpu_checks.StaticStep(variant, *check_data, SPEC, SEED).model.parameters()
    for a, b, start in zip(graphed.model.parameters(), eager.model.parameters(), seeded):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6) and not torch.equal(a, start)


@pytest.mark.parametrize("device", DEVICES, indirect=True)
def test_a_step_that_cannot_be_captured_is_recorded_and_the_job_goes_on(check_data, device, monkeypatch):
    """A capture that fails (a host sync in the user's model) leaves the floor null with its status; the eager
    step and the kernels are still recorded. The CPU twin never tries a capture."""
    tried = []

    def failing(step, warmup=gpu_checks.CAPTURE_WARMUP):
        tried.append(step)
        raise RuntimeError("operation not permitted when stream is capturing (planted)")

    monkeypatch.setattr(gpu_checks, "capture", failing)
    (variant,) = _variants(device, ["fp32"], ["resident"])
    launch = gpu_checks.launch_checks(variant, *check_data, SPEC, SEED)
    assert launch.launch_floor_step_s is None and launch.eager_step_s > 0 and launch.step_kernels > 0
    assert (launch.status, len(tried)) == (("capture_failed", 1) if device.type == "cuda" else ("no_cuda_graphs", 0))


def test_only_the_eager_fp32_resident_variant_is_checked(check_data):
    x, y = check_data
    for variant in _variants(torch.device("cpu"), ["fp32", "bf16"], ["resident", "streamed", "prefetched"])[1:]:
        with pytest.raises(ValueError, match="only eager fp32 resident variants"):
            gpu_checks.launch_checks(variant, x, y, SPEC, SEED)


def test_a_records_launch_checks_must_fit_its_variant_and_device(watched_job):
    made = watched_job[0]
    resident, streamed = _resident_fp32(made), next(r for r in made if r.placement == "streamed")
    with pytest.raises(ValueError, match="must both be set exactly for an eager fp32 resident variant"):
        dataclasses.replace(resident, launch=None)
    with pytest.raises(ValueError, match="must both be set exactly"):
        dataclasses.replace(resident, reference_epoch_s=None)
    with pytest.raises(ValueError, match="and launch null otherwise"):
        dataclasses.replace(streamed, launch=resident.launch)
    cuda = LaunchChecks(
        status="replayed",
        launch_floor_step_s=1e-5,
        eager_step_s=1e-4,
        replay_steps=8,
        counted="cuda_kernels",
        step_kernels=12,
        step_kernels_device_s=5e-6,
    )
    with pytest.raises(ValueError, match="counted cuda_kernels: a damaged record"):
        dataclasses.replace(dataclasses.replace(resident, device="cpu"), launch=cuda)
    with pytest.raises(ValueError, match="must be set exactly when the step was replayed"):
        dataclasses.replace(cuda, launch_floor_step_s=None)
    with pytest.raises(ValueError, match="counts CUDA kernels exactly where CUDA graphs exist"):
        dataclasses.replace(cuda, counted="cpu_ops")
    with pytest.raises(ValueError, match="null together"):
        dataclasses.replace(cuda, step_kernels=None)
