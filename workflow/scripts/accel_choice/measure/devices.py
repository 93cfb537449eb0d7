"""Which accelerators torch can see, and whether the workflow should measure one.

`probe()` is what torch sees (a VisibleDevices record); the probe rule records it with its
fingerprint (`probe_record`, a DeviceProbe). `fingerprint()` is the part of it that identifies
the visible devices; it becomes a `params:` value of the probe rule, so when a machine
gains (or loses, or swaps) a GPU, Snakemake re-runs the probe and everything that depends
on it without the user deleting anything.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import torch

from accel_choice.records.environment import Environment
from accel_choice.records.loads import CudaDevice, DeviceProbe, VisibleDevices

MODES = ("auto", "require", "off")


class DeviceUnavailable(RuntimeError):
    """A GPU job started where no GPU is visible."""


def _nvidia_driver() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def _cuda_devices() -> tuple[CudaDevice, ...]:
    devices = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        devices.append(
            CudaDevice(
                index=index,
                name=props.name,
                capability=f"{props.major}.{props.minor}",
                total_memory_bytes=int(props.total_memory),
                multiprocessors=int(props.multi_processor_count),
            )
        )
    return tuple(devices)


def _other_accelerator() -> str | None:
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None or not accelerator.is_available():
        return None
    current = accelerator.current_accelerator()
    return current.type if current is not None else None


def probe() -> VisibleDevices:
    cuda = torch.cuda.is_available()
    return VisibleDevices(
        torch_version=str(torch.__version__),
        cuda_available=cuda,
        cuda_version=torch.version.cuda,
        cuda_devices=_cuda_devices() if cuda else (),
        nvidia_driver=_nvidia_driver() if cuda else None,
        mps_available=bool(torch.backends.mps.is_available()),
        accelerator=_other_accelerator(),
    )


def fingerprint(probed: VisibleDevices) -> str:
    """A stable one-line identity of the visible accelerators ("none" without any)."""
    parts = [f"cuda{probed.cuda_version}:{d.name}:{d.capability}:{d.total_memory_bytes}" for d in probed.cuda_devices]
    if probed.cuda_devices and probed.nvidia_driver:
        parts.append(f"driver{probed.nvidia_driver}")
    if probed.mps_available:
        parts.append("mps")
    return ";".join(parts) or "none"


def probe_record(mode: str, planned_fingerprint: str, environment: Environment) -> DeviceProbe:
    """The probe rule's record: what this job sees, its fingerprint, and the fingerprint the plan was made with."""
    probed = probe()
    return DeviceProbe(
        **{field.name: getattr(probed, field.name) for field in dataclasses.fields(probed)},
        mode=mode,
        planned_fingerprint=planned_fingerprint,
        fingerprint=fingerprint(probed),
        environment=environment,
    )


def measurable_device(probed: VisibleDevices) -> str | None:
    """The device type this workflow measures when one is visible: CUDA first, then MPS."""
    if probed.cuda_available:
        return "cuda"
    if probed.mps_available:
        return "mps"
    return None


def planned_device(mode: str) -> tuple[str | None, str]:
    """At parse time: which device the GPU jobs target (None: no GPU jobs) and the fingerprint.

    `off` never imports a GPU runtime; `require` plans CUDA jobs even where the submitting
    machine has no GPU (the job's node may have one); `auto` plans them where one is visible.
    """
    if mode not in MODES:
        raise ValueError(f"accelerator must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "off":
        return None, "off"
    probed = probe()
    if mode == "require":
        return "cuda", f"require;{fingerprint(probed)}"
    return measurable_device(probed), fingerprint(probed)


def require(device_type: str) -> torch.device:
    """The device a GPU job runs on; a clear error if this machine has none of that type."""
    available = {"cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}.get(device_type, False)
    if not available:
        raise DeviceUnavailable(
            f"this job needs a {device_type.upper()} device, but none is visible on {_hostname()} "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}). With accelerator: require, "
            "GPU jobs must run on a GPU node (SLURM: the rule asks for gpu=1); use accelerator: auto to measure "
            "the GPU only where one is visible, or off for none."
        )
    return torch.device(device_type)


def _hostname() -> str:
    import platform

    return platform.node() or "this machine"


def synchronize(device: torch.device) -> None:
    """Wait for queued device work before a clock is read; a no-op on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_bytes(device: torch.device) -> int | None:
    """torch.cuda.max_memory_allocated since the last reset; None where torch keeps no such count."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None
