"""The environment a measurement was taken in.

`torch.utils.collect_env.get_env_info()` is the complete record, but it spawns
subprocesses (pip, lscpu, nvidia-smi) and costs about 1.2 s, so it runs once per
workflow (`full_environment`). Every job also embeds `quick_environment()`: the same
field names where collect_env has them, read in-process in milliseconds. A job that does not
use torch does not import it for this record either (about a second of start-up): its torch
fields then say so (`torch_loaded: false`, CUDA and thread fields null, the version from the
installed package's metadata).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from accel_choice.io import library
from accel_choice.io.provenance import current_invocation
from accel_choice.records.environment import Environment, EnvironmentReport, Workflow

KEY_PACKAGES = ("torch", "numpy", "pandas", "pyarrow", "matplotlib", "snakemake")
MEMINFO = "/proc/meminfo"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def host_memory_bytes() -> int | None:
    """Return the total physical memory of this node.

    The total physical memory of this node: MemTotal of /proc/meminfo, else psutil's count (other
    systems); None where neither can tell. Read once per process."""
    try:
        with open(MEMINFO) as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil

        return int(psutil.virtual_memory().total) or None
    except (ImportError, OSError, NotImplementedError):  # psutil missing, or no count on this system
        return None


def _package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in KEY_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.lru_cache(maxsize=1)
def workflow_commit() -> dict[str, Any]:
    """Return the git commit of the workflow source this library was loaded from.

    The git commit of the workflow source this library was loaded from, and whether it was dirty.

    In a job that is the checkout being run (io/library.py puts its library first)."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(dirty)}


def _gpu_names(torch: ModuleType) -> list[str]:
    if not torch.cuda.is_available():
        return []
    return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def _torch_fields() -> dict[str, Any]:
    """torch's part of the record, from the torch this job already imported; none is imported here."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {
            "torch_version": _package_versions()["torch"],
            "torch_loaded": False,
            "cuda_compiled_version": None,
            "is_cuda_available": None,
            "nvidia_gpu_models": [],
            "torch_threads": None,
            "torch_interop_threads": None,
        }
    return {
        "torch_version": torch.__version__,
        "torch_loaded": True,
        "cuda_compiled_version": torch.version.cuda,
        "is_cuda_available": torch.cuda.is_available(),
        "nvidia_gpu_models": _gpu_names(torch),
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
    }


def quick_environment(seed: int | None = None) -> Environment:
    """Return a small, fast environment record for embedding in every output."""
    uname = platform.uname()
    torch_fields = _torch_fields()
    return Environment(
        **{
            key: torch_fields[key]
            for key in (
                "torch_version",
                "torch_loaded",
                "cuda_compiled_version",
                "is_cuda_available",
                "torch_threads",
                "torch_interop_threads",
            )
        },
        nvidia_gpu_models=tuple(torch_fields["nvidia_gpu_models"]),
        cpu_model=_cpu_model(),
        logical_cores=os.cpu_count(),
        affinity_cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        host_memory_bytes=host_memory_bytes(),
        omp_num_threads_env=os.environ.get("OMP_NUM_THREADS"),
        python_version=platform.python_version(),
        python_platform=platform.platform(),
        os=f"{uname.system} {uname.release}",
        machine=uname.machine,
        packages=_package_versions(),
        seed=seed,
        workflow=Workflow(**workflow_commit(), library=library.identity(), command_line=_command_line()),
    )


def _command_line() -> str | None:
    """The snakemake command this job belongs to (None outside the workflow)."""
    return current_invocation().get("command_line")


def full_environment() -> EnvironmentReport:
    """Everything torch's own collect_env gathers, plus the quick record."""
    from torch.utils import collect_env

    info = collect_env.get_env_info()
    return EnvironmentReport(
        collect_env=info._asdict(), collect_env_pretty=collect_env.pretty_str(info), quick=quick_environment()
    )


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def differences(records: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Keys whose values differ between environment records, with the distinct values seen."""
    flat = [flatten(r) for r in records]
    keys = sorted(set().union(*flat)) if flat else []
    differing = {}
    for key in keys:
        values = [json_value(f.get(key)) for f in flat]
        distinct = list(dict.fromkeys(values))
        if len(distinct) > 1:
            differing[key] = distinct
    return differing


def json_value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
