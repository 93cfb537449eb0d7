"""Time what a device profile rates: one eager op, one graphed kernel, matmuls, memory copies, host copies.

Each function returns a `Timed`: a callable `run(reps)` that performs `reps` units of work and returns the
seconds they took, and how much work one unit is. measure.device_profile calibrates `reps` once, warms
every Timed and interleaves them in rounds; a round's value is work over seconds (a rate) or seconds
over work (a time per op or kernel). The clock discipline is the same everywhere: the device is
synchronised before each clock read and never inside a timed loop, except for host copies, which are
timed one copy per clock read with both ends synchronised (measure.transfer's rule: a copy may return
before it has finished).

Needs torch alone (no numpy, pandas, pydantic): `accel-choice profile` runs on a bare GPU machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from accel_choice.measure.devices import matmul_precision, synchronize

# float32 matmul precision per rated precision (devices.matmul_precision): "highest" keeps fp32 on
# every device; "high" lets CUDA use TF32; bf16 tensors are bf16 whatever the setting.
MATMUL_PRECISION = {"fp32": "highest", "tf32": "high", "bf16": "highest"}
MATMUL_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16}
# /proc/cpuinfo flags of a CPU with native bf16 arithmetic (x86 AVX-512 BF16 or AMX, Arm's BF16)
CPU_BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}


@dataclass
class Timed:
    """Hold one figure's measurement: `run(reps)` does `reps` units of `work` and returns its seconds."""

    key: tuple[object, ...]
    run: Callable[[int], float]
    work: float  # per unit: FLOP, bytes, or ops (kernels) whose time is wanted
    rate: bool  # True: the value is work / seconds; False: seconds / work
    reps: int = 1

    def value(self) -> float:
        """Time the calibrated reps once; return the round's value (a rate, or seconds per unit of work)."""
        seconds = self.run(self.reps)
        total = self.work * self.reps
        return total / seconds if self.rate else seconds / total


def timed_calls(call: Callable[[], object], device: torch.device) -> Callable[[int], float]:
    """Return `run(reps)`: `call` made `reps` times, the device synchronised around the loop only."""

    def run(reps: int) -> float:
        synchronize(device)
        start = time.perf_counter()
        for _ in range(reps):
            call()
        synchronize(device)
        return time.perf_counter() - start

    return run


def op_dispatch(device: torch.device) -> Timed:
    """Time one tiny eager op (`x.add_(1.0)`, 4 elements): the host's cost to dispatch it.

    On a GPU each op launches a kernel; the loop runs ahead of the device."""
    x = torch.zeros(4, device=device)
    return Timed(("op_dispatch",), timed_calls(lambda: x.add_(1.0), device), work=1, rate=False)


def chain(x: torch.Tensor, kernels: int) -> None:
    """Add 1 to `x` in place `kernels` times: one tiny kernel each on a GPU."""
    for _ in range(kernels):
        x.add_(1.0)


def capture_chain(device: torch.device, kernels: int) -> Callable[[], None] | None:
    """Capture `kernels` tiny kernels in a CUDA graph and return its replay; None off CUDA.

    As PyTorch's CUDA-graph notes say: warm up on a side stream, then capture on it."""
    if device.type != "cuda":
        return None
    x = torch.zeros(4, device=device)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            chain(x, kernels)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        chain(x, kernels)
    synchronize(device)
    return graph.replay


def kernel_floor(device: torch.device, kernels: int) -> Timed | None:
    """Time the device's own floor per kernel, a CUDA graph of `kernels` replayed; None off CUDA.

    The host launches one graph, not `kernels` ops: the seconds per kernel are the device's."""
    replay = capture_chain(device, kernels)
    if replay is None:
        return None
    return Timed(("kernel_floor",), timed_calls(replay, device), work=kernels, rate=False)


def matmul_precisions(device: torch.device) -> tuple[str, ...]:
    """Return the matmul precisions the device is rated at.

    fp32 always; TF32 and bf16 on CUDA capability 8.0 and later; bf16 on a CPU with native bf16
    instructions (CPU_BF16_FLAGS). MPS: fp32 only."""
    if device.type == "cuda":
        return ("fp32", "tf32", "bf16") if torch.cuda.get_device_capability(device) >= (8, 0) else ("fp32",)
    if device.type == "cpu" and cpu_flags() & CPU_BF16_FLAGS:
        return ("fp32", "bf16")
    return ("fp32",)


def cpu_flags() -> set[str]:
    """Return the host CPU's feature flags (/proc/cpuinfo `flags` or `Features`); empty where unreadable."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


def matmul(device: torch.device, n: int, precision: str) -> Timed:
    """Time n×n @ n×n at `precision` into a buffer made before the clock: 2n³ FLOP a product."""
    dtype = MATMUL_DTYPE[precision]
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    timed = timed_calls(lambda: torch.mm(a, b, out=out), device)

    def run(reps: int) -> float:
        with matmul_precision(MATMUL_PRECISION[precision]):  # set and restored outside the clock
            return timed(reps)

    return Timed(("matmul", n, precision), run, work=2.0 * n**3, rate=True)


def bandwidth(device: torch.device, size: int) -> Timed:
    """Time `dst.copy_(src)` of `size` bytes within the device: 2 × size bytes moved (read and write)."""
    src = torch.ones(size // 4, device=device)
    dst = torch.empty_like(src)
    return Timed(("bandwidth", size), timed_calls(lambda: dst.copy_(src), device), work=2.0 * size, rate=True)


def copy_memories(device: torch.device) -> tuple[str, ...]:
    """Return the host memories a copy is rated from or into: pinned (page-locked) on CUDA only."""
    return ("pageable", "pinned") if device.type == "cuda" else ("pageable",)


class HostBuffers:
    """Make each copy's buffers once: one on the device and one per host memory a size, both directions'."""

    def __init__(self, device: torch.device):
        self.device = device
        self.made: dict[tuple[int, str], torch.Tensor] = {}

    def get(self, size: int, where: str) -> torch.Tensor:
        """Return the buffer of `size` bytes in `where` (device, pageable or pinned), made on first use."""
        if (size, where) not in self.made:
            on = self.device if where == "device" else torch.device("cpu")
            self.made[size, where] = torch.ones(size, dtype=torch.uint8, device=on, pin_memory=where == "pinned")
        return self.made[size, where]


def host_copy(buffers: HostBuffers, direction: str, memory: str, size: int) -> Timed:
    """Time a copy of `size` bytes between the host's `memory` and the device, one copy per clock read.

    The destination is made before the clock; pinned copies are asynchronous (non_blocking); both ends
    are synchronised around each copy."""
    host, on_device = buffers.get(size, memory), buffers.get(size, "device")
    dst, src = (on_device, host) if direction == "host_to_device" else (host, on_device)
    device = buffers.device

    def run(reps: int) -> float:
        total = 0.0
        for _ in range(reps):
            synchronize(device)
            start = time.perf_counter()
            dst.copy_(src, non_blocking=memory == "pinned")
            synchronize(device)
            total += time.perf_counter() - start
        return total

    return Timed(("copy", direction, memory, size), run, work=float(size), rate=True)
