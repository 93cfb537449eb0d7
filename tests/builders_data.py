"""Builders of the data family's records (datasets, load/convert, transfers, the device probe, resources).

Each returns a valid record with plain defaults; keyword overrides replace fields. Derived fields
follow the overrides unless given: a load record's single pass is its stages, a copy's GB/s is its
bytes over its seconds.
"""

from __future__ import annotations

from typing import Any

from accel_choice.records.data import (
    BenchmarkGenerator,
    DatasetExport,
    DatasetMeta,
    ExportedFile,
    NorthstarGenerator,
)
from accel_choice.records.environment import Environment, Library, Workflow
from accel_choice.records.estimate import Estimate, PositiveEstimate
from accel_choice.analyze import bootstrap, job_intervals
from accel_choice.records.loads import (
    CopyCell,
    CopyTiming,
    CudaDevice,
    DeviceProbe,
    LoadCell,
    FileLoad,
    LoadConvertJob,
    LoadTable,
    PassStages,
    SecondsSpread,
    TransferJob,
    TransferTable,
    VisibleDevices,
)
from accel_choice.records.resources import JobResources, ResourceTable, RuleResources

SHA_A, SHA_B, SHA_C, SHA_D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def data_environment(**overrides: Any) -> Environment:
    fields: dict[str, Any] = {
        "torch_version": "2.13.0+cpu",
        "torch_loaded": False,
        "cuda_compiled_version": None,
        "is_cuda_available": None,
        "nvidia_gpu_models": (),
        "cpu_model": "Test CPU 9000",
        "logical_cores": 8,
        "affinity_cores": 2,
        "host_memory_bytes": 16 << 30,
        "torch_threads": None,
        "torch_interop_threads": None,
        "omp_num_threads_env": None,
        "python_version": "3.11.9",
        "python_platform": "Linux-6.1-x86_64",
        "os": "Linux 6.1",
        "machine": "x86_64",
        "packages": {"torch": "2.13.0", "numpy": "2.4.6"},
        "seed": 20261020,
        "workflow": Workflow(commit="0123456789abcdef", dirty=False, library=library()),
    }
    return Environment(**(fields | overrides))


def library(**overrides: Any) -> Library:
    """The library a job imported (records.environment.Library), as io.library.identity() reports it."""
    fields: dict[str, Any] = {
        "folder": "/checkout/workflow/scripts",
        "files": ("accel_choice/__init__.py", "accel_choice/io/__init__.py", "accel_choice/io/envinfo.py"),
        "sha256": "5" * 64,
    }
    return Library(**(fields | overrides))


# --- datasets --------------------------------------------------------------------------------------


def benchmark_generator(**overrides: Any) -> BenchmarkGenerator:
    return BenchmarkGenerator(**({"rows": 8192, "features": 32, "noise": 0.2, "seed": 20261020} | overrides))


def northstar_generator(**overrides: Any) -> NorthstarGenerator:
    return NorthstarGenerator(**({"rows": 2400, "late_rate": 0.18, "seed": 20261020} | overrides))


def dataset_meta(**overrides: Any) -> DatasetMeta:
    """The benchmark's metadata; `rows` and `feature_columns` set the generator's rows and features too."""
    rows = overrides.get("rows", 8192)
    columns = overrides.get("feature_columns", tuple(f"x{i:02d}" for i in range(32)))
    fields: dict[str, Any] = {
        "name": "benchmark",
        "rows": rows,
        "feature_columns": columns,
        "target_column": "y",
        "sample_shape": (len(columns),),
        "dtype": "float32",
        "positive_rate": 0.5,
        "matrix_sha256": SHA_A,
        "file_sha256": SHA_B,
        "file_bytes": 128 + rows * (len(columns) + 1) * 4,
        "warnings": (),
        "environment": data_environment(),
    }
    fields["generator"] = overrides.get("generator") or benchmark_generator(rows=rows, features=len(columns))
    return DatasetMeta(**(fields | overrides))


def exported_file(fmt: str = "parquet", **overrides: Any) -> ExportedFile:
    columns = overrides.get("columns", (*(f"x{i:02d}" for i in range(32)), "y"))
    fields: dict[str, Any] = {
        "format": fmt,
        "file": f"benchmark.{fmt}",
        "bytes": 1_100_000 if fmt == "parquet" else 2_000_000,
        "sha256": SHA_C if fmt == "parquet" else SHA_D,
        "rows": 8192,
        "columns": columns,
        "schema": {name: "int8" if name == columns[-1] else "float" for name in columns},
    }
    return ExportedFile(**(fields | overrides))


def dataset_export(**overrides: Any) -> DatasetExport:
    fields: dict[str, Any] = {
        "name": "benchmark",
        "matrix_sha256": SHA_A,
        "roundtrip_exact": {"parquet": True, "csv": True},
        "files": {"parquet": exported_file("parquet"), "csv": exported_file("csv")},
        "parquet_compression": "zstd",
        "environment": data_environment(),
    }
    return DatasetExport(**(fields | overrides))


# --- load and convert ----------------------------------------------------------------------------


def file_load(**overrides: Any) -> FileLoad:
    """One file of a load/convert job; without `pass_stages`, one pass equal to the stages (total: their sum)."""
    stages: dict[str, Any] = {"read_s": 0.004, "to_pandas_s": 0.001, "to_numpy_s": 0.001, "to_torch_s": 0.00001}
    stages = {name: overrides.get(name, value) for name, value in stages.items()}
    stages["total_s"] = overrides.get("total_s", sum(stages.values()))
    fmt = overrides.get("format", "parquet")
    dataset = overrides.get("dataset", "benchmark")
    fields: dict[str, Any] = {
        "dataset": dataset,
        "format": fmt,
        "file": f"{dataset}.{fmt}",
        "file_bytes": 1_000_000,
        "rows": 8192,
        "features": 32,
        "tensor_bytes": 8192 * 33 * 4,
        "tensor_dtype": "torch.float32",
        "torch_shares_numpy_buffer": True,
        **stages,
        "matches_generated_data": True,
    }
    fields = fields | overrides
    if "pass_stages" not in fields:
        fields["pass_stages"] = (PassStages(**stages),)
    fields.setdefault("passes", len(fields["pass_stages"]))
    return FileLoad(**fields)


def load_job(**overrides: Any) -> LoadConvertJob:
    """One repeat of the load/convert job: the overrides naming FileLoad fields build its one file
    (see file_load), the rest the job; `loads` replaces the file outright."""
    file_fields = {name for name in FileLoad.__dataclass_fields__}
    fields: dict[str, Any] = {
        "threads": 1,
        "loadavg_before": (0.3, 0.3, 0.3),
        "loadavg_after": (0.3, 0.3, 0.3),
        "foreign_cpu_share": 0.0,
        "repeat": 0,
        "wall_interval": (1000.0, 1001.0),
        "environment": data_environment(),
    }
    fields |= {name: value for name, value in overrides.items() if name not in file_fields}
    fields.setdefault("loads", (file_load(**{k: v for k, v in overrides.items() if k in file_fields}),))
    return LoadConvertJob(**fields)


def load_cell(**overrides: Any) -> LoadCell:
    fields: dict[str, Any] = {
        "dataset": "benchmark",
        "format": "parquet",
        "repeats": 3,
        "rows": 8192,
        "file_bytes": 1_000_000,
        "tensor_bytes": 8192 * 33 * 4,
        "read_s_median": 0.004,
        "to_pandas_s_median": 0.001,
        "to_numpy_s_median": 0.001,
        "to_torch_s_median": 0.00001,
        "load_s_jobs": (0.005, 0.005, 0.005),
        "convert_s_jobs": (0.00101, 0.00101, 0.00101),
        "total_s": PositiveEstimate(
            point=0.00601, low=0.006, high=0.0062, level=0.95, method=job_intervals.METHOD, jobs=3
        ),
        "total_s_min": 0.006,
        "total_s_max": 0.0062,
        "total_s_iqr": 0.0001,
        "noisy": False,
        "noise_reasons": (),
        "contaminated": (),
    }
    fields = fields | overrides
    fields.setdefault("mb_per_s", fields["file_bytes"] / fields["total_s"].point / 1e6)
    return LoadCell(**fields)


def load_table(**overrides: Any) -> LoadTable:
    return LoadTable(
        **({"table": (load_cell(format="csv"), load_cell()), "environment": data_environment()} | overrides)
    )


# --- host <-> device copies ------------------------------------------------------------------------


def copy_timing(
    what: str = "matrix", direction: str = "host_to_device", memory: str = "pageable", **overrides: Any
) -> CopyTiming:
    """A copy timed 5 times at the same seconds; GB/s from its bytes and seconds unless given."""
    fields: dict[str, Any] = {"what": what, "direction": direction, "memory": memory, "bytes": 1 << 20, "seconds": 1e-4}
    fields = fields | overrides
    fields.setdefault("passes", (fields["seconds"],) * 5)
    fields.setdefault("gb_per_s", fields["bytes"] / fields["seconds"] / 1e9 if fields["seconds"] > 0 else None)
    return CopyTiming(**fields)


def transfer_job(**overrides: Any) -> TransferJob:
    """One transfer repeat on CUDA: the matrix and the target host-to-device, the predictions back."""
    fields: dict[str, Any] = {
        "device": "cuda",
        "context_startup_s": 0.2,
        "pin_memory_s": None,
        "matrix_bytes": 1 << 20,
        "copies": (
            copy_timing("matrix"),
            copy_timing("target", bytes=1 << 15),
            copy_timing("predictions", "device_to_host", bytes=1 << 15),
        ),
        "loadavg_before": (0.1, 0.1, 0.1),
        "loadavg_after": (0.2, 0.1, 0.1),
        "repeat": 0,
        "wall_interval": (1000.0, 1001.0),
        "environment": data_environment(),
    }
    return TransferJob(**(fields | overrides))


def copy_cell(
    what: str = "matrix", direction: str = "host_to_device", memory: str = "pageable", **overrides: Any
) -> CopyCell:
    fields: dict[str, Any] = {
        "what": what,
        "direction": direction,
        "memory": memory,
        "bytes": 1 << 20,
        "repeats": 3,
        "seconds_jobs": (0.9e-4, 1e-4, 1.2e-4),
        "seconds": Estimate(point=1e-4, low=0.9e-4, high=1.2e-4, level=0.95, method=bootstrap.METHOD, jobs=3),
        "noisy": False,
    }
    fields = fields | overrides
    if "gb_per_s" not in fields:
        fields["gb_per_s"] = fields["bytes"] / fields["seconds"].point / 1e9
    return CopyCell(**fields)


def transfer_table(**overrides: Any) -> TransferTable:
    fields: dict[str, Any] = {
        "device": "cuda",
        "copies": (copy_cell("predictions", "device_to_host", bytes=1 << 15), copy_cell()),
        "context_startup_s": SecondsSpread(median=0.2, min=0.19, max=0.22),
        "pin_memory_s_jobs": (),
    }
    return TransferTable(**(fields | overrides))


# --- the device probe ----------------------------------------------------------------------------


def cuda_device(**overrides: Any) -> CudaDevice:
    fields = {
        "index": 0,
        "name": "NVIDIA H200",
        "capability": "9.0",
        "total_memory_bytes": 150_020_390_912,
        "multiprocessors": 132,
        "uuid": "GPU-5a7a0c2d-91d4-4b1e-8f7b-2c9d3e4f5a6b",
    }
    return CudaDevice(**(fields | overrides))


def visible_devices(**overrides: Any) -> VisibleDevices:
    """One H200 by default; `cuda_available=False` (alone) gives a CPU build that sees nothing."""
    if overrides.get("cuda_available") is False:
        fields: dict[str, Any] = {
            "torch_version": "2.13.0+cpu",
            "cuda_version": None,
            "cuda_devices": (),
            "nvidia_driver": None,
            "mps_available": False,
            "accelerator": None,
        }
    else:
        fields = {
            "torch_version": "2.13.0+cu128",
            "cuda_available": True,
            "cuda_version": "12.8",
            "cuda_devices": (cuda_device(),),
            "nvidia_driver": "570.86.15",
            "mps_available": False,
            "accelerator": "cuda",
        }
    return VisibleDevices(**(fields | overrides))


def device_probe(**overrides: Any) -> DeviceProbe:
    """The probe file of a machine that sees nothing (mode auto); VisibleDevices fields may be overridden."""
    fields: dict[str, Any] = {
        "torch_version": "2.13.0+cpu",
        "cuda_available": False,
        "cuda_version": None,
        "cuda_devices": (),
        "nvidia_driver": None,
        "mps_available": False,
        "accelerator": None,
        "mode": "auto",
        "planned_fingerprint": "none",
        "fingerprint": "none",
        "environment": data_environment(),
    }
    return DeviceProbe(**(fields | overrides))


# --- resources -----------------------------------------------------------------------------------


def job_resources(**overrides: Any) -> JobResources:
    """A job both timed: process 2 s, body 1.5 s, an RSS sample of 300 MiB; derived fields follow the overrides."""
    fields: dict[str, Any] = {
        "rule": "time_cpu_training",
        "job": "time_cpu_training/bs32.rep0",
        "process_wall_s": 2.0,
        "max_rss_mb": 300.0,
        "process_cpu_s": 1.8,
        "mean_load": 90.0,
        "body_wall_s": 1.5,
        "body_cpu_s": 1.4,
        "peak_rss_mb": 310.0,
    }
    fields = fields | overrides
    wall, body = fields["process_wall_s"], fields["body_wall_s"]
    fields.setdefault("outside_body_s", None if wall is None or body is None else wall - body)
    fields.setdefault("rss_sampled", fields["max_rss_mb"] is not None and fields["max_rss_mb"] > 0)
    return JobResources(**fields)


def rule_resources(**overrides: Any) -> RuleResources:
    fields: dict[str, Any] = {
        "rule": "time_cpu_training",
        "jobs": 1,
        "process_wall_total_s": 2.0,
        "process_wall_median_s": 2.0,
        "body_wall_median_s": 1.5,
        "outside_body_median_s": 0.5,
        "max_rss_mb_sampled": 300.0,
        "jobs_without_rss_sample": 0,
        "peak_rss_mb_kernel": 310.0,
    }
    return RuleResources(**(fields | overrides))


def resource_table(**overrides: Any) -> ResourceTable:
    fields = {"rules": (rule_resources(),), "jobs": (job_resources(),), "environment": data_environment()}
    return ResourceTable(**(fields | overrides))
