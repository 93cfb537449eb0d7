"""The drift sentinel: a fixed reference workload timed at the start, between rounds and at the end
of every timing job, and the machine state that could explain a change in it.

These VMs drift: the same script ran 2× apart in back-to-back runs with only ~2.5 % steal and no
foreign process, so the foreign-CPU meter (measure.contention) cannot see it. The same fixed work,
timed in the job itself, can: its time is the machine's speed at that minute. The work is the same
every time on a device (never calibrated to the machine, or it would hide the drift it measures):
- CPU: 96 × (256×256 fp32 matmul, in-place ReLU, sum), ~30–45 ms on one thread of the 2-vCPU VM,
  a mix of arithmetic and per-op dispatch like the training step's;
- CUDA: 20 × a 4096×4096 fp32 matmul (~50 ms on a data-centre GPU), synchronized before each clock
  read, no host sync inside the loop; and after it the CPU's work on the host, whose drift slows a
  launch-bound model with no sign on the GPU (`host_seconds`).
Beside it: the hypervisor's steal time (/proc/stat), the cores' clock and governor where the VM
exposes them, and on a GPU its clocks, temperature, power and throttle reasons (NVML, through the
`nvidia-ml-py` package, where the driver answers).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from accel_choice.measure.contention import steal_seconds
from accel_choice.measure.devices import device_uuid
from accel_choice.measure.devices import nvml_answer as _answer
from accel_choice.measure.devices import nvml_library as _nvml
from accel_choice.measure.devices import matmul_precision, synchronize
from accel_choice.records.sentinel import GpuState, SentinelReadings

WORKLOADS = {"cpu": (256, 96), "cuda": (4096, 20)}  # matrix side, iterations

# NVML's clocks-event (throttle) reason bits; GpuIdle (1) is not a slowdown and is left out.
NVML_REASONS = {
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def workload_name(device: torch.device) -> str:
    side, iterations = WORKLOADS["cpu" if device.type == "cpu" else "cuda"]
    return f"{device.type}: {iterations} x mm({side}x{side}) fp32"


def cpu_mhz(root: str = "/sys/devices/system/cpu", cpuinfo: str = "/proc/cpuinfo") -> float | None:
    """Return the mean current clock of the cores: cpufreq where the VM exposes it, else /proc/cpuinfo."""
    found = []
    for path in sorted(Path(root).glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
        try:
            found.append(int(path.read_text(encoding="ascii")) / 1000)
        except (OSError, ValueError):
            continue
    if not found:
        try:
            lines = Path(cpuinfo).read_text(encoding="ascii", errors="replace").splitlines()
        except OSError:
            return None
        found = []
        for line in lines:
            if line.startswith("cpu MHz"):
                try:
                    found.append(float(line.split(":", 1)[1]))
                except (IndexError, ValueError):
                    continue
    found = [value for value in found if value > 0]
    return sum(found) / len(found) if found else None


def governor(root: str = "/sys/devices/system/cpu") -> str | None:
    try:
        return (Path(root) / "cpu0/cpufreq/scaling_governor").read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def gpu_state(device: torch.device, nvml: Any | None = None) -> GpuState | None:
    """Read the GPU's clocks, temperature, power and throttle reasons; None on a CPU or without NVML."""
    if device.type != "cuda":
        return None
    nvml = nvml or _nvml()
    if nvml is None:
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    handle = _nvml_handle(nvml, index)
    if handle is None:
        return None
    reasons = _answer(lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    if reasons is None:
        reasons = _answer(lambda: nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))
    power = _answer(lambda: nvml.nvmlDeviceGetPowerUsage(handle))
    return GpuState(
        sm_clock_mhz=_answer(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))),
        memory_clock_mhz=_answer(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))),
        temperature_c=_answer(lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))),
        power_w=None if power is None else power / 1000,
        clocks_event_reasons=None if reasons is None else int(reasons),
        reasons=tuple(name for bit, name in NVML_REASONS.items() if reasons and int(reasons) & bit),
    )


def _nvml_handle(nvml: Any, index: int) -> Any | None:
    """NVML's handle of torch's device `index`. NVML numbers every GPU of the machine and ignores
    CUDA_VISIBLE_DEVICES, which renumbers torch's: so by the device's UUID, else its PCI bus id,
    and by index only when torch tells neither."""
    props = _answer(lambda: torch.cuda.get_device_properties(index))
    uuid = device_uuid(props)
    if uuid is not None:
        handle = _answer(lambda: nvml.nvmlDeviceGetHandleByUUID(uuid))
        if handle is not None:
            return handle
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        pci = f"{getattr(props, 'pci_domain_id', 0):08X}:{bus:02X}:{getattr(props, 'pci_device_id', 0):02X}.0"
        handle = _answer(lambda: nvml.nvmlDeviceGetHandleByPciBusId(pci))
        if handle is not None:
            return handle
    return _answer(lambda: nvml.nvmlDeviceGetHandleByIndex(index))


class Sentinel:
    """`tick()` times the fixed workload once; `readings()` returns them with the job's machine state.

    Construct it at the start of the job (it reads the steal counter and clocks then), tick at the
    start, between rounds and at the end.
    """

    def __init__(self, device: torch.device, host: bool | None = None):
        self.device = device
        side, self.iterations = WORKLOADS["cpu" if device.type == "cpu" else "cuda"]
        generator = torch.Generator().manual_seed(0)
        # Host tensors: the device holds its copies only during a tick (see the module's text).
        self.a = torch.randn(side, side, generator=generator)
        self.b = torch.randn(side, side, generator=generator)
        # A GPU job's host launches its kernels: its drift slows a launch-bound model with no sign on the GPU's
        # clocks, so each tick times the CPU's work too (`host`: default on a non-CPU device; tests set it).
        if host is None:
            host = device.type != "cpu"
        self.host = Sentinel(torch.device("cpu"), host=False) if host else None
        self._operands: tuple[torch.Tensor, torch.Tensor] | None = None
        with self._on_device():
            self._run(2)  # first-call costs (allocator, kernel selection) stay out of every reading
            synchronize(device)
        self.seconds: list[float] = []
        self._steal0, self._wall0 = steal_seconds(), time.perf_counter()
        self._mhz0 = cpu_mhz()
        self._gpu0 = gpu_state(device)

    @contextmanager
    def _on_device(self) -> Iterator[None]:
        """The operands on the device for the block (a copy on a GPU, the host tensors on the CPU);
        nothing of the sentinel's stays allocated there after it. Its matmuls run in fp32 whatever
        timing.matmul_precision says: the same work in every job."""
        self._operands = (self.a.to(self.device), self.b.to(self.device))
        try:
            with matmul_precision("highest"):
                yield
        finally:
            self._operands = None

    def _run(self, iterations: int) -> None:
        if self._operands is None:
            raise RuntimeError("the sentinel's work runs inside _on_device() only")
        a, b = self._operands
        for _ in range(iterations):
            torch.mm(a, b).relu_().sum()

    @property
    def ticks_on_one_cpu_thread(self) -> bool:
        """Whether a tick runs work on the CPU, on one thread: a CPU sentinel's, or a GPU's host part."""
        return self.device.type == "cpu" or self.host is not None

    def tick(self) -> float:
        """Time the fixed work once.

        One timing of the fixed work. On the CPU on one thread, whatever the job's own thread count
        (timing.threads): the same work on the same threads in every job, so jobs of different thread
        counts compare. The operands' copy to a GPU is made before the clock starts."""
        threads = torch.get_num_threads()
        if self.device.type == "cpu":
            torch.set_num_threads(1)
        try:
            with self._on_device():
                synchronize(self.device)
                t0 = time.perf_counter()
                self._run(self.iterations)
                synchronize(self.device)
                seconds = time.perf_counter() - t0
        finally:
            torch.set_num_threads(threads)
        self.seconds.append(seconds)
        if self.host is not None:
            self.host.tick()
        return seconds

    def held_on_device(self) -> tuple[torch.Tensor, ...]:
        """Return the operands the work holds on the device now.

        The operands the work holds on the device now: a tick's own, none between ticks (the host
        tensors `a` and `b` are the only ones kept)."""
        return self._operands or ()

    def readings(self) -> SentinelReadings:
        steal1, wall = steal_seconds(), time.perf_counter() - self._wall0
        steal = None if steal1 is None or self._steal0 is None or wall <= 0 else max(steal1 - self._steal0, 0) / wall
        mhz = (self._mhz0, cpu_mhz())
        return SentinelReadings(
            workload=workload_name(self.device),
            seconds=tuple(self.seconds),
            median_s=statistics.median(self.seconds),
            steal_share=steal,
            cpu_mhz=tuple(mhz) if all(m is not None for m in mhz) else None,
            governor=governor(),
            gpu_start=self._gpu0,
            gpu_end=gpu_state(self.device),
            host_seconds=None if self.host is None else tuple(self.host.seconds),
        )
