"""Where and by what a record was made: the environment every record embeds, and the full report."""

from __future__ import annotations

from typing import Any

from accel_choice.records import PositiveCount, Sha256, record


@record
class Library:
    """The library a job imported: its folder, the module files it had loaded, and one hash over them.

    `files` are relative to `folder` (accel_choice/...), sorted. `sha256` hashes one line per file, its
    relative path and the sha256 of its bytes (io/library.digest): anyone can recompute it from a checkout.
    """

    folder: str
    files: tuple[str, ...]
    sha256: Sha256


@record
class Workflow:
    """The workflow source a job ran: its git commit (None outside a checkout), the command that started it
    and the library the job imported (io/library.py)."""

    commit: str | None
    dirty: bool | None
    library: Library
    command_line: str | None = None


@record
class Environment:
    """The quick environment record of one job (io/envinfo.quick_environment): read in milliseconds.

    A job that does not use torch does not import it: `torch_loaded` is false, the CUDA and
    thread fields are null and the version comes from the installed package. `host_memory_bytes` is
    the memory of the node the job ran on: the memory judgements read it from the records of the
    jobs that measured, never from the machine that analyses them.
    """

    torch_version: str | None
    torch_loaded: bool
    cuda_compiled_version: str | None
    is_cuda_available: bool | None
    nvidia_gpu_models: tuple[str, ...]
    cpu_model: str
    logical_cores: int | None
    affinity_cores: int | None
    host_memory_bytes: PositiveCount | None  # the node's total physical memory (MemTotal); null: unknown
    torch_threads: int | None
    torch_interop_threads: int | None
    omp_num_threads_env: str | None
    python_version: str
    python_platform: str
    os: str
    machine: str
    packages: dict[str, str | None]
    seed: int | None
    workflow: Workflow


@record(schema="environment-report", version=3)
class EnvironmentReport:
    """env/collect_env.json: torch.utils.collect_env's complete record, its text, and the quick record."""

    collect_env: dict[str, Any]
    collect_env_pretty: str
    quick: Environment
