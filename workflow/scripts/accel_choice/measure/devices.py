"""Which accelerators torch can see, and whether the workflow should measure one.

`probe()` is what torch sees (a VisibleDevices record); the probe rule records it with its
fingerprint (`probe_record`, a DeviceProbe). `fingerprint()` is the part of it that identifies
the device the GPU jobs run on; it becomes a `params:` value of the probe rule, so when that
device is swapped (even for an identical-looking one: its UUID), or the CUDA build or driver
changes, Snakemake re-runs the probe and everything that depends on it without the user deleting
anything. A second GPU the jobs never use changes nothing.

The driver's version comes from NVML (nvidia-ml-py, an in-process library call), not from a
`nvidia-smi` subprocess that can time out; CUDA availability is asked the NVML way
(PYTORCH_NVML_BASED_CUDA_CHECK, set only around the question: `cuda_available`) so that asking
does not initialise the CUDA driver, whose cost belongs to the GPU's start-up, timed in the job.
Set for the whole process it would cost every CPU Adam step an NVML device count (the optimizer's
graph-capture health check asks `torch.cuda.is_available()`, and torch caches that count only once
CUDA is initialised, which a CPU job never does).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from accel_choice.records.environment import Environment
from accel_choice.records.loads import CudaDevice, DeviceProbe, VisibleDevices

MODES = ("auto", "require", "off")
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


@contextlib.contextmanager
def _nvml_based_check() -> Iterator[None]:
    """torch.cuda.is_available() inside counts devices through NVML and leaves the CUDA driver
    uninitialised (torch/cuda/__init__.py, _nvml_based_avail); the variable is restored after."""
    before = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ[NVML_CHECK]
        else:
            os.environ[NVML_CHECK] = before


def cuda_available() -> bool:
    """Say whether torch sees a CUDA device, asked without initialising the CUDA driver."""
    with _nvml_based_check():
        return torch.cuda.is_available()


class DeviceUnavailable(RuntimeError):
    """A GPU job started where no GPU is visible."""


def nvml_library() -> Any | None:
    """pynvml, initialised; None where the package, the library or the driver is missing."""
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver, no library: NVML is optional
        return None
    return pynvml


def nvml_answer(call: Callable[[], Any]) -> Any | None:
    """Return one NVML query's answer; None where the device does not support it (NVMLError_NotSupported and kin)."""
    try:
        return call()
    except Exception:
        return None


def _nvidia_driver() -> str | None:
    nvml = nvml_library()
    if nvml is None:
        return None
    version = nvml_answer(nvml.nvmlSystemGetDriverVersion)
    return version.decode() if isinstance(version, bytes) else version


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
                uuid=device_uuid(props),
            )
        )
    return tuple(devices)


def device_uuid(props: Any) -> str | None:
    """Return the device's UUID as nvidia-smi writes it (GPU-<uuid>); None where torch does not say."""
    uuid = getattr(props, "uuid", None)
    return f"GPU-{uuid}" if uuid is not None and str(uuid) else None


def _other_accelerator() -> str | None:
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None or not accelerator.is_available():
        return None
    current = accelerator.current_accelerator()
    return current.type if current is not None else None


def probe() -> VisibleDevices:
    cuda = cuda_available()
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
    """Return a stable one-line identity of the device the GPU jobs run on.

    A stable one-line identity of the device the GPU jobs run on ("none" without any): the first
    CUDA device (the one `torch.device("cuda")` means; CUDA_VISIBLE_DEVICES chooses it) by UUID,
    model, capability and memory, the CUDA build, and the driver where NVML tells it."""
    parts = []
    if probed.cuda_devices:
        d = probed.cuda_devices[0]
        parts.append(f"cuda{probed.cuda_version}:{d.uuid or 'no-uuid'}:{d.name}:{d.capability}:{d.total_memory_bytes}")
    if probed.cuda_devices and probed.nvidia_driver:
        parts.append(f"driver{probed.nvidia_driver}")
    if probed.mps_available:
        parts.append("mps")
    return ";".join(parts) or "none"


def probe_record(mode: str, planned_fingerprint: str, environment: Environment) -> DeviceProbe:
    """Return the probe rule's record: what this job sees, its fingerprint, and the plan's fingerprint."""
    probed = probe()
    return DeviceProbe(
        **{field.name: getattr(probed, field.name) for field in dataclasses.fields(probed)},
        mode=mode,
        planned_fingerprint=planned_fingerprint,
        fingerprint=fingerprint(probed),
        environment=environment,
    )


def measurable_device(probed: VisibleDevices) -> str | None:
    """Return the device type this workflow measures when one is visible: CUDA first, then MPS."""
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


# What a workflow job without its device says to do (the acceptance says its own: measure.acceptance).
JOB_ADVICE = (
    "With accelerator: require, GPU jobs must run on a GPU node (SLURM: the rule asks for gpu=1); use "
    "accelerator: auto to measure the GPU only where one is visible, or off for none."
)


def require(device_type: str, who: str = "this job", advice: str = JOB_ADVICE) -> torch.device:
    """Return the device a GPU job (or `who`) runs on; a clear error, ending in `advice`, if this machine has none."""
    available = {"cuda": cuda_available, "mps": torch.backends.mps.is_available}.get(device_type, lambda: False)()
    if not available:
        raise DeviceUnavailable(
            f"{who} needs a {device_type.upper()} device, but none is visible on {_hostname()} "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}). {advice}"
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


def context_startup_seconds(device: torch.device) -> float | None:
    """Time the device runtime's first call.

    The device runtime's first call (CUDA: driver initialisation and context creation; the
    availability check before it asks NVML, measure.devices), a fixed cost kept out of the epoch."""
    if device.type == "cpu":
        return None
    t0 = time.perf_counter()
    torch.zeros(1, device=device)
    synchronize(device)
    return time.perf_counter() - t0


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def allocated_memory_bytes(device: torch.device) -> int | None:
    """torch.cuda.memory_allocated now: what live tensors hold (a baseline for a peak); None off CUDA."""
    if device.type == "cuda":
        return int(torch.cuda.memory_allocated(device))
    return None


def peak_memory_bytes(device: torch.device) -> int | None:
    """torch.cuda.max_memory_allocated since the last reset; None where torch keeps no such count."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return None


@contextlib.contextmanager
def matmul_precision(precision: str) -> Iterator[None]:
    """Set torch's float32 matmul precision for the block.

    torch's float32 matmul precision (timing.matmul_precision) for the block, restored after it:
    set explicitly for every job, so neither side runs on whatever the process started with
    ("high" lets a GPU use TF32; "highest", the default, keeps fp32 on both sides)."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)
