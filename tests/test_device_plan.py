"""The parse-time device plan is cached per machine state, so a no-op run does not import torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from accel_choice.measure import device_plan


def _asker(calls: list[str], answer=(None, "none")):
    def ask(mode: str):
        calls.append(mode)
        return answer

    return ask


def test_the_second_plan_in_the_same_machine_state_comes_from_the_cache(tmp_path: Path) -> None:
    calls: list[str] = []
    cache = tmp_path / "plan.json"
    assert device_plan.planned_device("auto", cache, _asker(calls)) == (None, "none")
    assert device_plan.planned_device("auto", cache, _asker(calls)) == (None, "none")
    assert calls == ["auto"]  # torch was asked once


def test_a_changed_machine_state_asks_torch_again(tmp_path: Path, monkeypatch) -> None:
    """Another mode, hidden devices (CUDA_VISIBLE_DEVICES) or another GPU: another key."""
    calls: list[str] = []
    cache = tmp_path / "plan.json"
    device_plan.planned_device("auto", cache, _asker(calls))
    device_plan.planned_device("require", cache, _asker(calls, ("cuda", "require;none")))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    device_plan.planned_device("auto", cache, _asker(calls))
    assert calls == ["auto", "require", "auto"]


def test_a_gpu_appearing_changes_the_state(tmp_path: Path) -> None:
    dev, proc = tmp_path / "dev", tmp_path / "proc"
    dev.mkdir()
    (proc / "gpus" / "0000:3b:00.0").mkdir(parents=True)
    before = device_plan.state_key(device_plan.machine_state("auto", dev, proc))
    (dev / "nvidia0").touch()
    (proc / "version").write_text("NVRM version: 580.1\n")
    (proc / "gpus" / "0000:3b:00.0" / "information").write_text("Model: NVIDIA H200\n")
    after = device_plan.machine_state("auto", dev, proc)
    assert after["device_nodes"] == ["nvidia0"] and after["gpus"] == {"0000:3b:00.0": "Model: NVIDIA H200\n"}
    assert device_plan.state_key(after) != before


def test_off_never_asks_and_a_damaged_or_unwritable_cache_only_costs_a_probe(tmp_path: Path) -> None:
    calls: list[str] = []
    assert device_plan.planned_device("off", tmp_path / "plan.json", _asker(calls)) == (None, "off")
    assert calls == []
    damaged = tmp_path / "damaged.json"
    damaged.write_text("{not json")
    assert device_plan.planned_device("auto", damaged, _asker(calls)) == (None, "none")
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert device_plan.planned_device("auto", blocked / "plan.json", _asker(calls)) == (None, "none")
    assert calls == ["auto", "auto"]


def test_a_cached_plan_does_not_import_torch(tmp_path: Path) -> None:
    """What the no-op run saves: with the plan cached, the parse never imports torch."""
    library = Path(device_plan.__file__).resolve().parents[2]
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path\n"
        "from accel_choice.measure import device_plan\n"
        "plan = device_plan.planned_device('auto', Path(sys.argv[2]))\n"
        "print(plan, 'torch' in sys.modules)\n"
    )
    cache = tmp_path / "plan.json"
    first = subprocess.run([sys.executable, "-c", script, str(library), str(cache)], capture_output=True, text=True)
    second = subprocess.run([sys.executable, "-c", script, str(library), str(cache)], capture_output=True, text=True)
    assert first.stdout.split()[-1] == "True", first.stderr  # the first plan asked torch
    assert second.stdout.split()[-1] == "False", second.stderr
    assert first.stdout.rsplit(" ", 1)[0] == second.stdout.rsplit(" ", 1)[0]  # the same plan
