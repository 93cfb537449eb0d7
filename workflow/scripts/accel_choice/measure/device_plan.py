"""The parse-time device plan without importing torch when nothing about the machine changed.

Every Snakemake invocation parses the workflow, and the plan (which device the GPU jobs target,
and the fingerprint of the visible devices: measure.devices.planned_device) needs torch, whose
import is 1–4 s of a no-op run on the 2-vCPU VM. The plan is cached in the working directory's
`.snakemake/accel-choice/device-plan.json`, under a key made of what torch's answer depends on and
that can be read without torch: the mode, this host, torch's installed version, the NVIDIA and
AMD device nodes, the driver's version and per-GPU information files, the variables that hide
devices (CUDA_VISIBLE_DEVICES and kin) and the platform (MPS). A GPU added, removed or swapped,
another driver, another torch or another host: another key, and torch is asked again. Torch
remains the only judge; the cache only remembers its last answer for the same machine state.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

CACHE = Path(".snakemake") / "accel-choice" / "device-plan.json"
VISIBILITY_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def machine_state(mode: str, dev: Path = Path("/dev"), proc: Path = Path("/proc/driver/nvidia")) -> dict[str, object]:
    """Read what the plan depends on, without importing torch."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    try:
        nodes = sorted(name for name in os.listdir(dev) if name.startswith(("nvidia", "kfd", "dri")))
    except OSError:
        nodes = []
    gpus = {path.parent.name: _read(path) for path in sorted(proc.glob("gpus/*/information"))}
    return {
        "mode": mode,
        "host": socket.gethostname(),
        "torch": torch_version,
        "device_nodes": nodes,
        "driver": _read(proc / "version"),
        "gpus": gpus,
        "visibility": {name: os.environ.get(name) for name in VISIBILITY_VARIABLES},
        "platform": [platform.system(), platform.machine(), platform.release()],
    }


def state_key(state: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def _load(cache: Path) -> dict[str, list[str | None]]:
    try:
        found = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _store(cache: Path, plans: dict[str, list[str | None]]) -> None:
    """Written next to its final name and renamed over it: a reader sees the old file or the new one."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(plans, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(partial, cache)
    except OSError:
        pass  # a read-only working directory only costs the torch import next time


def planned_device(
    mode: str, cache: Path = CACHE, ask: Callable[[str], tuple[str | None, str]] | None = None
) -> tuple[str | None, str]:
    """Return the planned device, cached per machine state.

    measure.devices.planned_device(mode), from the cache when the machine state is the one it
    was computed for; `ask` replaces the torch probe in tests."""
    if mode == "off":
        return None, "off"  # decided without any runtime, as measure.devices does
    key = state_key(machine_state(mode))
    plans = _load(cache)
    found = plans.get(key)
    if isinstance(found, list) and len(found) == 2 and isinstance(found[1], str):
        return found[0], found[1]
    if ask is None:
        from accel_choice.measure.devices import planned_device as ask  # imports torch
    device, fingerprint = ask(mode)
    plans = {key: [device, fingerprint]}  # one machine state per working directory is all a run needs
    _store(cache, plans)
    return device, fingerprint
