"""`accel-choice profile` (issue 42, item 1): a device profile measured in one command, read back checked.

The command runs here with --quick on the CPU (a few seconds) and, marked gpu, on CUDA; the pieces it
times (a step model's loop, the rounds, the calibration, the CUDA-graph kernel floor, the copies) are
tested on their CPU twins. A subprocess with pydantic hidden shows it runs on a bare machine: it writes
the record without pydantic, pandas, scipy, yaml, matplotlib or Snakemake, and the record validates here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from accel_choice import records
from accel_choice.cli import main as cli
from accel_choice.cli import profile as profile_cli
from accel_choice.measure import device_profile as dp
from accel_choice.measure import device_rates as rates
from accel_choice.measure import devices
from accel_choice.records.device_profile import Copy, DeviceProfile, figures

REPO = Path(__file__).resolve().parents[1]
NO_CUDA = "needs a CUDA device (torch.cuda.is_available() is False)"
CUDA = pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA)])
DEVICES = ["cpu", CUDA]  # the CPU twin first: it runs everywhere
HEAVY = ("pydantic", "pandas", "scipy", "yaml", "matplotlib", "snakemake", "pyarrow", "jsonschema")


def _run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module", params=DEVICES)
def quick(request, tmp_path_factory) -> tuple[DeviceProfile, str, Path]:
    """A --quick profile of the device made by the command, read back with pydantic; its printed table."""
    path = tmp_path_factory.mktemp(request.param) / "profile.json"
    threads = torch.get_num_threads()
    code, out, err = _run_main(["profile", "--device", request.param, "--quick", "--out", str(path)])
    assert code == 0, err
    assert torch.get_num_threads() == threads  # the profile's threads are restored
    return records.read(DeviceProfile, path), out, path


def test_the_command_writes_a_profile_that_reads_back_and_round_trips(quick):
    profile, _, path = quick
    assert records.from_json(DeviceProfile, records.to_json(profile), "again") == profile
    assert json.loads(path.read_text())["schema"] == "device-profile"
    assert (profile.machines, profile.runs) == (1, 1) and profile.timed_s > 0
    assert profile.command.endswith(f"profile --device {profile.device_type} --quick --out {path}")
    assert profile.threads == (1 if profile.device_type == "cpu" else torch.get_num_threads()) and profile.host_cores
    assert profile.torch_version == torch.__version__ and profile.name
    assert {f.source for f in figures(profile)} == {"measured"}
    assert "--quick" in profile.note


def test_every_figure_holds_one_value_a_round_and_start_up_one_a_run(quick):
    profile, _, _ = quick
    rounds = dp.plan_for(profile.device_type, quick=True).rounds
    singles = {id(profile.context_startup_s), id(profile.first_step_s)}
    for fig in figures(profile):
        (machine,) = fig.machines
        assert len(machine.values) == (1 if id(fig) in singles else rounds)
        assert fig.estimate.low <= fig.estimate.point <= fig.estimate.high
        assert fig.reference.startswith(f"accel-choice profile --device {profile.device_type}, on ")


def test_the_ladder_grows_in_ops_and_the_textbook_is_the_reference(quick):
    profile, _, _ = quick
    ops = [s.ops for s in profile.ladder]
    assert [s.model for s in profile.ladder] == [f"ladder depth {d}" for d in (1, 2, 4, 8)]
    assert ops == sorted(ops) and len(set(ops)) == len(ops)
    assert all(0 < s.kernels <= s.ops and s.batch_size == dp.LADDER_BATCH for s in profile.ladder)
    assert [(s.model, s.batch_size) for s in profile.reference_steps] == [
        ("textbook 32-48-1", 32),
        ("textbook 32-48-1", 512),
    ]
    # The same layers (Linear, ReLU, Linear) dispatch the same ops at any width and batch size.
    assert profile.reference_steps[0].ops == profile.ladder[0].ops


def test_rates_name_their_sizes_and_precisions(quick):
    profile, _, _ = quick
    plan = dp.plan_for(profile.device_type, quick=True)
    assert profile.precisions()[0] == "fp32"
    assert {(r.size, r.precision) for r in profile.matmul} == {
        (n, p) for p in profile.precisions() for n in plan.matmul_sizes
    }
    assert [r.size for r in profile.memory_bandwidth] == list(plan.bandwidth_bytes)
    assert all(r.rate.unit == "FLOP/s" for r in profile.matmul)


def test_a_cpu_profile_has_no_copies_no_kernel_floor_and_refuses_them(quick):
    profile, _, _ = quick
    if profile.device_type != "cpu":
        pytest.skip("the CPU profile's own check")
    assert profile.copies == () and profile.kernel_floor_s is None
    assert profile.capability is None and profile.cuda is None and "tf32" not in profile.precisions()
    copy = Copy(direction="host_to_device", memory="pageable", bytes=4096, rate=profile.memory_bandwidth[0].rate)
    with pytest.raises(ValueError, match="no CUDA-graph floor and no host-device copies"):
        dataclasses.replace(profile, copies=(copy,))


def test_a_cuda_profile_names_its_device_and_holds_copies_and_a_kernel_floor(quick):
    profile, _, _ = quick
    if profile.device_type != "cuda":
        pytest.skip("the CUDA profile's own check")
    plan = dp.plan_for("cuda", quick=True)
    assert profile.capability and profile.device_memory_bytes and profile.cuda == torch.version.cuda
    assert profile.kernel_floor_s is not None
    assert {(c.direction, c.memory, c.bytes) for c in profile.copies} == {
        (d, m, b) for d in ("host_to_device", "device_to_host") for m in ("pageable", "pinned") for b in plan.copy_bytes
    }
    if torch.cuda.get_device_capability() >= (8, 0):
        assert profile.precisions() == ("fp32", "tf32", "bf16")


def test_the_summary_table_has_a_line_per_figure(quick):
    profile, out, _ = quick
    lines = out.splitlines()
    assert lines[0].startswith(f"{profile.name} ({profile.device_type}), 3 rounds")
    assert lines[1].split() == ["figure", "point", "95%", "interval", "unit"]
    assert len(lines) == 3 + len(figures(profile))
    assert lines[-1].startswith("While the rounds ran: ") and lines[-1] in profile.note
    assert any(line.startswith("step textbook 32-48-1 B=512") for line in lines)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_is_one_line_and_exit_2(tmp_path):
    code, out, err = _run_main(["profile", "--device", "cuda", "--out", str(tmp_path / "p.json")])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "needs a CUDA device" in err and "--device cpu" in err
    assert not (tmp_path / "p.json").exists()


def test_an_out_that_cannot_be_written_is_exit_3_before_measuring(tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(dp, "measure", lambda *args: pytest.fail("measured before checking --out"))
    code, out, err = _run_main(["profile", "--out", str(tmp_path / "a-file" / "p.json")])
    assert code == 3 and out == "" and err.startswith(f"error: cannot write {tmp_path}")
    assert "nothing measured" in err


@pytest.mark.parametrize("door", ["python -m accel_choice", "accel-choice"])
def test_help_lists_the_exit_codes_and_the_options(door):
    installed = Path(sys.executable).parent / "accel-choice"
    if door == "accel-choice" and not installed.exists():
        pytest.skip("the README's venv installs accel-choice; tests/test_cli.py installs it where it is missing")
    command = [sys.executable, "-m", "accel_choice"] if door.startswith("python") else [str(installed)]
    done = subprocess.run(
        [*command, "profile", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ | {"PYTHONPATH": str(REPO / "workflow" / "scripts")},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {door} profile ")
    for option in ("--device", "--out", "--rounds", "--quick", "--threads"):
        assert option in done.stdout
    codes = done.stdout.split("exit codes:", 1)[1]
    assert all(f"    {code}  " in codes for code in "0123")


# A bare machine: pydantic hidden (a meta-path finder refuses it), the command run as `python -m accel_choice`.
BARE = """
import json, runpy, sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pydantic":
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
sys.meta_path.insert(0, Hide())
sys.argv = ["accel_choice", "profile", "--device", "cpu", "--quick", "--out", sys.argv[1]]
try:
    runpy.run_module("accel_choice", run_name="__main__", alter_sys=True)
except SystemExit as done:
    code = done.code
from accel_choice import records
print(json.dumps({"code": code, "validated": records.VALIDATED, "imported": sorted(
    name for name in HEAVY if name in sys.modules and sys.modules[name] is not None)}))
"""


def test_the_command_writes_a_valid_record_with_pydantic_and_the_heavy_packages_absent(tmp_path):
    path = tmp_path / "bare.json"
    done = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{BARE}", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ | {"PYTHONPATH": str(REPO / "workflow" / "scripts")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = json.loads(done.stdout.splitlines()[-1])
    assert verdict == {"code": 0, "validated": False, "imported": []}, done.stderr[-3000:]
    profile = records.read(DeviceProfile, path)  # written without pydantic, checked with it
    assert profile.device_type == "cpu" and len(profile.ladder) == 4


@pytest.mark.parametrize("device", DEVICES)
def test_the_kernel_floor_replays_a_cuda_graph_and_is_none_elsewhere(device):
    target = torch.device(device)
    floor = rates.kernel_floor(target, 10)
    if device == "cpu":
        assert floor is None and rates.capture_chain(target, 10) is None
        # Its timing loop, on the CPU twin of the graph: the same chain of ops, called eagerly.
        x = torch.zeros(4)
        twin = rates.Timed(("twin",), rates.timed_calls(lambda: rates.chain(x, 10), target), work=10, rate=False)
        twin.reps = 5
        assert 0 < twin.value() < 1e-3 and float(x[0]) == 50
        return
    floor.reps = 50
    assert 0 < floor.value() < rates.op_dispatch(target).value() * 10


def test_timed_calls_synchronises_around_the_loop_only(monkeypatch):
    events: list[str] = []
    monkeypatch.setattr(rates, "synchronize", lambda device: events.append("sync"))
    seconds = rates.timed_calls(lambda: events.append("call"), torch.device("cpu"))(4)
    assert events == ["sync", "call", "call", "call", "call", "sync"] and seconds > 0
    timed = rates.Timed(("t",), lambda reps: 2.0 * reps, work=4, rate=False, reps=3)
    assert timed.value() == 0.5  # seconds per unit of work
    assert dataclasses.replace(timed, rate=True).value() == 2.0  # work per second


@pytest.mark.parametrize("device", DEVICES)
def test_a_step_models_timed_loop_has_no_sync_between_steps(device, monkeypatch):
    target = torch.device(device)
    model = dp.StepModel("ladder depth 2", lambda: dp.ladder_model(2, 1), dp.LADDER_WIDTH, dp.LADDER_BATCH, target)
    model.run(3)  # warm: Adam's state, first kernels
    syncs: list[torch.device] = []
    real = devices.synchronize
    monkeypatch.setattr(devices, "synchronize", syncs.append)
    if target.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")  # any hidden host sync in a step raises
    try:
        seconds = model.run(5)
    finally:
        if target.type == "cuda":
            torch.cuda.set_sync_debug_mode(0)
    real(target)
    assert syncs == [target, target] and seconds > 0
    assert torch.isfinite(model.losses[:5]).all() and model.raw.ops > model.raw.kernels > 0


def test_calibration_fixes_the_reps_that_fill_the_target_from_warm_runs():
    calls: list[int] = []

    def run(reps: int) -> float:  # the first call is cold: a second, then 0.1 ms a rep
        calls.append(reps)
        return 1.0 if len(calls) == 1 else 1e-4 * reps

    timed = rates.Timed(("t",), run, work=1, rate=False)
    dp.calibrate(timed, 0.02, 10**6)
    assert timed.reps == 200 and calls[:3] == [1, 1, 2]
    slow = rates.Timed(("s",), lambda reps: 1.0 * reps, work=1, rate=False)
    dp.calibrate(slow, 0.02, 10**6)
    assert slow.reps == 1  # never below one


def test_rounds_interleave_and_turn_the_order_each_round():
    order: list[tuple[object, ...]] = []

    def timed(key: str) -> rates.Timed:
        return rates.Timed((key,), lambda reps, key=key: order.append((key,)) or 1.0, work=1, rate=False)

    groups = [[timed("a"), timed("b"), timed("c")], [timed("x")]]
    values = dp.run_rounds(groups, 3)
    assert {key: len(v) for key, v in values.items()} == {("a",): 3, ("b",): 3, ("c",): 3, ("x",): 3}
    rounds = [[k[0] for k in order[i * 4 : i * 4 + 4]] for i in range(3)]
    assert rounds == [["a", "b", "c", "x"], ["x", "b", "c", "a"], ["c", "a", "b", "x"]]


def test_matmul_precisions_and_rates_on_the_cpu():
    cpu = torch.device("cpu")
    precisions = rates.matmul_precisions(cpu)
    assert precisions[0] == "fp32" and "tf32" not in precisions
    assert ("bf16" in precisions) == bool(rates.cpu_flags() & rates.CPU_BF16_FLAGS)
    before = torch.get_float32_matmul_precision()
    for precision in ("fp32", "bf16"):  # bf16 runs on any CPU; the profile rates it only where it is native
        timed = rates.matmul(cpu, 32, precision)
        timed.reps = 2
        assert timed.value() > 0 and timed.work == 2 * 32**3
    assert torch.get_float32_matmul_precision() == before


@pytest.mark.parametrize("device", DEVICES)
def test_host_copies_rate_bytes_per_second(device):
    target = torch.device(device)
    buffers = rates.HostBuffers(target)
    memories = rates.copy_memories(target)
    assert memories == (("pageable", "pinned") if device == "cuda" else ("pageable",))
    for memory in memories:
        for direction in ("host_to_device", "device_to_host"):
            timed = rates.host_copy(buffers, direction, memory, 64 * 1024)
            timed.reps = 3
            assert timed.value() > 0 and timed.key == ("copy", direction, memory, 64 * 1024)
    assert len(buffers.made) == 1 + len(memories)  # one device buffer and one per host memory, shared


def test_the_table_scales_units_to_the_point():
    fig = dataclasses.make_dataclass("F", ["unit", "estimate"])
    est = dataclasses.make_dataclass("E", ["point", "low", "high"])
    assert profile_cli.scaled(fig("s", est(2.5e-6, 2e-6, 3e-6))) == ("2.5", "2-3", "µs")
    assert profile_cli.scaled(fig("FLOP/s", est(8.1e10, 8e10, 8.2e10))) == ("81", "80-82", "GFLOP/s")
    assert profile_cli.scaled(fig("B/s", est(5e2, 4e2, 6e2))) == ("500", "400-600", "B/s")
    assert profile_cli.size_label(4096) == "4 KiB" and profile_cli.size_label(256 << 20) == "256 MiB"


def test_the_planner_plans_from_a_profile_the_command_made(quick):
    """Issue 42: a profile straight from `accel-choice profile` models the planner's GPU (a CPU profile here:
    its host and device work add up), its break-evens carry the profile's draws, and the report names it."""
    from accel_choice.analyze import breakeven_interval, gpu_profile, planner, planner_calibration
    from accel_choice.records.grid import Workload
    from accel_choice.render import gpu_profile as render_profile

    profile, _, path = quick
    gpu = gpu_profile.model(profile, str(path), "highest", ops=42, kernels=18)
    assert gpu.overlapped is (profile.device_type != "cpu")
    base = Workload(rows=8192, features=32, hidden=48, batch_size=512)
    host, device = gpu.step_parts(base)
    assert 0 < host[0] < 1 and 0 < device[0] < 1 and gpu.epoch_s(base) > 0
    cpu = planner_calibration.TRUE_CPU
    curves = planner.break_even_curves(cpu, gpu, base, {"hidden": (8, 8192)}, 8e9, 0.0, 10)
    intervals = breakeven_interval.break_even_intervals(
        curves, [], {"cpu": cpu}, gpu, confidence=0.95, resamples=50, seed=1, epochs=10, fallback_bytes_per_s=8e9
    )
    summaries = [planner.break_even_summary(c, i, gpu) for c, i in zip(curves, intervals)]
    assert all(s.gpu_host_step_s_at_end is not None for s in summaries)
    use = gpu_profile.use(gpu, 512)
    assert use.measured_by == profile.command and {f.what for f in use.figures} >= {"host step", "matmul"}
    assert next(f for f in use.figures if f.what == "host step").source == "measured"
    # the first screen names the profile; the planner section says where each figure comes from, and when
    assert render_profile.source_phrase(use) == f"Modelled on an {use.name} (profile `{use.file}`)"
    section = render_profile.profile_section(use)
    assert f"(made {profile.made}, 1 machine(s))" in section and "| measured on 1 machine |" in section
