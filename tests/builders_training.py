"""Builders of training records for the tests: every field from the record types, sensible defaults.

A test states only what it is about (`training_record(batch_size=512, epoch_s=0.02)`); the rest are
the values a clean CPU run would write. Tests import it (`from builders_training import ...`).
"""

from __future__ import annotations

import dataclasses
import statistics
from types import SimpleNamespace
from typing import Any

from accel_choice.analyze import theory
from accel_choice.analyze.aggregate import job_name
from accel_choice.analyze.bootstrap import METHOD
from accel_choice.records.estimate import Estimate, PositiveEstimate, positive
from accel_choice.records.environment import Environment, EnvironmentReport, Workflow
from accel_choice.records.launch import CellLaunchChecks, LaunchChecks, launch_checked
from accel_choice.records.training import Contamination, Invariants, TrainingCell, TrainingRecord
from accel_choice.records.fullpath import FullPathRow
from builders_data import library

ROWS = 2048
SHA_INITIAL = "a" * 64
SHA_FINAL = "b" * 64


def training_record(
    *,
    batch_size: int = 32,
    loader: str = "fastpath",
    repeat: int = 0,
    epoch_s: float = 0.01,
    rows: int = ROWS,
    finite: bool = True,
    device: str = "cpu",
    precision: str = "fp32",
    placement: str = "host",
    **overrides: Any,
) -> TrainingRecord:
    """One timed epoch as measure_training_job writes it: `epoch_s` and `eval_s` (an override) are the one epoch and
    evaluation it timed, unless `epoch_s_each` or `eval_s_each` give them all."""
    eval_s = overrides.pop("eval_s", 0.005)
    fields: dict[str, Any] = dict(
        device=device,
        precision=precision,
        placement=placement,
        loader=loader,
        batch_size=batch_size,
        grad_scaler=precision == "fp16",
        matmul_precision="highest",
        optimizer_impl="Adam fused",
        param_dtype="fp32",
        output_dtype="fp32" if precision == "fp32" else precision,
        repeat=repeat,
        position_in_job=0 if (repeat % 2 == 0) == (loader == "dataloader") else 1,
        samples=rows,
        steps=theory.steps_per_epoch(rows, batch_size),
        epoch_s_each=(epoch_s,),
        epoch_cpu_s=epoch_s,
        eval_s_each=(eval_s,),
        eval_samples=rows,
        eval_loss=0.4 if finite else None,
        eval_accuracy=0.9,
        final_loss=0.35 if finite else None,
        mean_train_loss=0.45 if finite else None,
        finite=finite,
        nonfinite_step=None if finite else 3,
        peak_memory_bytes=None if device == "cpu" else 1_000_000,
        epoch_memory_bytes=None if device == "cpu" else 400_000,
        warmup_steps=50,
        warmup_first_step_s=0.002,
        warmup_steady_step_s=0.0002,
        rehearsal_steps=8,
        threads=1,
        compiled=False,
        loadavg_before=(0.5, 0.4, 0.3),
        loadavg_after=(0.7, 0.4, 0.3),
        foreign_cpu_share=0.02,
        context_startup_s=None if device == "cpu" else 0.2,
        initial_weights_sha256=SHA_INITIAL,
        final_weights_sha256=SHA_FINAL,
        same_final_weights_across_variants=True,
        startup_s=None,
        invariants=Invariants(
            samples_eq_rows=True,
            eval_samples_eq_rows=True,
            steps_eq_ceil_rows_over_batch=True,
        ),
    )
    fields.update(overrides)
    if "startup_s" not in overrides:  # the context alone: no first-step excess by default
        fields["startup_s"] = fields["context_startup_s"] or 0.0
    if "scaler_skipped_steps" not in overrides:  # a count exactly with a GradScaler: none skipped by default
        fields["scaler_skipped_steps"] = 0 if fields["grad_scaler"] else None
    if fields["compiled"] and "compile_mode" not in overrides:  # compiled: torch's default mode, no break
        fields["compile_mode"], fields["graph_breaks"] = "default", overrides.get("graph_breaks", 0)
    if "epoch_memory_bytes" not in overrides:  # the epoch's own memory: 40 % of its peak by default
        peak = fields["peak_memory_bytes"]
        fields["epoch_memory_bytes"] = None if peak is None else peak * 2 // 5
    for name in ("loadavg_before", "loadavg_after", "epoch_s_each", "eval_s_each"):
        fields[name] = tuple(fields[name])
    epoch = statistics.median(fields["epoch_s_each"])
    checked = launch_checked(SimpleNamespace(**{k: fields[k] for k in ("precision", "placement", "compiled")}))
    if "launch" not in overrides:  # an eager fp32 resident variant's checks: its step 4x its floor on CUDA
        fields["launch"] = launch_checks(fields["device"], epoch / fields["steps"]) if checked else None
    if "reference_epoch_s" not in overrides and checked:  # and its plain loop, as fast as its epoch
        fields["reference_epoch_s"] = epoch
    return TrainingRecord(**fields)


def launch_checks(device: str, step_s: float, **overrides: Any) -> LaunchChecks:
    """One job's launch checks (records.launch) of a step of `step_s` seconds: on CUDA its floor a quarter of
    it, 14 kernels; elsewhere no CUDA graphs and the CPU's ops."""
    cuda = device == "cuda"
    fields: dict[str, Any] = dict(
        status="replayed" if cuda else "no_cuda_graphs",
        launch_floor_step_s=step_s / 4 if cuda else None,
        eager_step_s=step_s * 0.8,
        replay_steps=64,
        counted="cuda_kernels" if cuda else "cpu_ops",
        step_kernels=14 if cuda else 133,
        step_kernels_device_s=step_s / 8,
    )
    return LaunchChecks(**(fields | overrides))


def cell_launch_checks(device: str, step_s: float, jobs: int = 3, **overrides: Any) -> CellLaunchChecks:
    """A cell's launch checks (records.launch) over `jobs` jobs: on CUDA its step 4x its floor, host-bound."""
    cuda = device == "cuda"
    fields: dict[str, Any] = dict(
        status="replayed" if cuda else "no_cuda_graphs",
        counted="cuda_kernels" if cuda else "cpu_ops",
        launch_floor_s_jobs=(step_s / 4,) * jobs if cuda else None,
        eager_step_s_jobs=(step_s * 0.8,) * jobs,
        step_kernels_jobs=(14 if cuda else 133,) * jobs,
        step_kernels_device_s_jobs=(step_s / 8,) * jobs,
        step_over_launch_floor=estimate(4.0, 3.6, 4.4, jobs=jobs) if cuda else None,
        launch_bound="host" if cuda else None,
    )
    return CellLaunchChecks(**(fields | overrides))


def estimate(point: float, low: float, high: float, jobs: int = 3, level: float = 0.95) -> PositiveEstimate:
    """An estimate of a time or a rate as the aggregation makes them (records.estimate)."""
    return PositiveEstimate(point=point, low=low, high=high, level=level, method=METHOD, jobs=jobs)


def training_cell(
    *,
    batch_size: int = 32,
    loader: str = "fastpath",
    epoch_s: float | Estimate = 0.01,
    spread: float = 0.1,
    rows: int = ROWS,
    device: str = "cpu",
    precision: str = "fp32",
    placement: str = "host",
    **overrides: Any,
) -> TrainingCell:
    """One aggregated cell with three repeats at epoch_s·(1 − spread), epoch_s, epoch_s·(1 + spread) (`epoch_s`
    an Estimate: that estimate, with jobs passed as `epoch_s_jobs`), timed by jobs 0-2 of its table (the CPU's
    time every batch size at one thread count)."""
    given = positive(epoch_s) if isinstance(epoch_s, Estimate) else None
    epoch_s = given.point if given else epoch_s
    runs = (epoch_s * (1 - spread), epoch_s, epoch_s * (1 + spread))
    steps = theory.steps_per_epoch(rows, batch_size)
    fields: dict[str, Any] = dict(
        device=device,
        precision=precision,
        placement=placement,
        loader=loader,
        batch_size=batch_size,
        grad_scaler=precision == "fp16",
        repeats=3,
        samples=rows,
        steps=steps,
        epoch_s_jobs=tuple((run,) for run in runs),
        eval_s_jobs=((0.0045,), (0.005,), (0.0055,)),
        epoch_s=given or estimate(epoch_s, runs[0], runs[2]),
        samples_per_s=(given or estimate(epoch_s, runs[0], runs[2])).inverted(rows),
        eval_s=estimate(0.005, 0.0045, 0.0055),
        mean_train_loss_median=0.45,
        eval_accuracy_median=0.9,
        warmup_first_over_steady_median=10.0,
        rehearsal_steps=8,
        threads=1,
        compiled=False,
        loadavg_max=0.7,
        noisy=False,
        noise_reasons=(),
        eval_noisy=False,
        same_final_weights_across_variants=True,
        peak_memory_bytes_max=None if device == "cpu" else 1_000_000,
        epoch_memory_bytes_max=None if device == "cpu" else 400_000,
        contaminated=(),
        context_startup_s_median=None if device == "cpu" else 0.2,
        startup_s_jobs=(0.0 if device == "cpu" else 0.2,) * 3,
        epoch_s_over_fastpath=None,
        versus_fastpath=None,
    )
    fields.update(overrides)
    if "jobs" not in overrides:
        fields["jobs"] = tuple(job_name(SimpleNamespace(**fields), r) for r in range(fields["repeats"]))
    if "launch" not in overrides:  # an eager fp32 resident cell's launch checks
        checked = launch_checked(SimpleNamespace(**{k: fields[k] for k in ("precision", "placement", "compiled")}))
        fields["launch"] = cell_launch_checks(device, epoch_s / steps, fields["repeats"]) if checked else None
    if "contaminated" in overrides:
        fields["contaminated"] = tuple(
            c if isinstance(c, Contamination) else Contamination(**c) for c in overrides["contaminated"]
        )
    return TrainingCell(**fields)


def replaced(record: Any, **changes: Any) -> Any:
    """A copy of a record with some fields changed (records are frozen), checked again."""
    return dataclasses.replace(record, **changes)


def full_path_row(**overrides: Any) -> FullPathRow:
    """One full-path row of a CPU fast-path variant: 5 ms load, 1 ms convert, 10 ms epoch, 4 ms eval."""
    fields: dict[str, Any] = dict(
        format="parquet",
        device="cpu",
        precision="fp32",
        placement="host",
        loader="fastpath",
        batch_size=512,
        threads=1,
        compiled=False,
        load_s=0.005,
        convert_s=0.001,
        transfer_s=0.0,
        train_s=0.01,
        eval_s=0.004,
        total_s=0.02,
        total_min_s=0.019,
        total_max_s=0.021,
        startup_s=0.0,
        total_with_startup_s=0.02,
        train_share=0.5,
        noisy=False,
    )
    fields.update(overrides)
    # The sums follow their parts unless a test sets them.
    fields.setdefault("per_epoch_s", fields["train_s"] + fields["eval_s"])
    fields.setdefault("one_off_s", fields["load_s"] + fields["convert_s"] + fields["transfer_s"] + fields["startup_s"])
    fields.setdefault("one_off_s_jobs", (fields["one_off_s"],) * 3)
    if "total_with_startup_s" not in overrides:
        fields["total_with_startup_s"] = fields["total_s"] + fields["startup_s"]
    return FullPathRow(**fields)


def environment(**overrides: Any) -> Environment:
    """The quick environment record of a CPU-only job (no CUDA)."""
    fields: dict[str, Any] = dict(
        torch_version="2.13.0+cpu",
        torch_loaded=True,
        cuda_compiled_version=None,
        is_cuda_available=False,
        nvidia_gpu_models=(),
        cpu_model="Test CPU 9000",
        logical_cores=8,
        affinity_cores=2,
        host_memory_bytes=16 << 30,
        torch_threads=1,
        torch_interop_threads=2,
        omp_num_threads_env="1",
        python_version="3.12.1",
        python_platform="Linux-6.1-x86_64",
        os="Linux 6.1",
        machine="x86_64",
        packages={"torch": "2.13.0", "numpy": "2.4.6"},
        seed=None,
        workflow=Workflow(commit="0123456789abcdef", dirty=True, library=library()),
    )
    fields.update(overrides)
    fields["nvidia_gpu_models"] = tuple(fields["nvidia_gpu_models"])
    return Environment(**fields)


def environment_report(quick: Environment | None = None, **collect_env: Any) -> EnvironmentReport:
    """env/collect_env.json: torch's collect_env (only what a test names) and the quick record."""
    return EnvironmentReport(collect_env=collect_env, collect_env_pretty="...", quick=quick or environment())
