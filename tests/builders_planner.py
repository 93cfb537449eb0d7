"""Builders of the planner's records, valid by default: pass a field to change it (tests import this
module: `import builders_planner as builders`). Each builds on the one below it, so a record's
fields are written here once."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from accel_choice.io import envinfo
from accel_choice.records.breakeven import BreakEvenSummary, BreakEvenTable, Coverage
from accel_choice.records.breakeven import CurveRow
from accel_choice.records.model import TEXTBOOK
from accel_choice.records.planner import (
    CostModelTable,
    FitPoint,
    FlopCheck,
    FlopRow,
    ModelRow,
    Residual,
    Scenario,
    ScenarioModelled,
)
from accel_choice.records.sentinel import ReferenceStepReadings, SentinelReadings
from accel_choice.records.grid import GridJob, GridRecord, Workload
from accel_choice.records.training import Invariants

SHA = "0" * 64


def workload(**overrides: Any) -> Workload:
    return Workload(**{"rows": 128, "features": 4, "hidden": 8, "batch_size": 16, **overrides})


def mlp(rows: int, features: int, hidden: int) -> Callable[[int], Workload]:
    """A benchmark cell's workload by batch size: the textbook MLP features → hidden → 1 over `rows`."""
    return lambda batch_size: Workload(rows=rows, features=features, hidden=hidden, batch_size=batch_size)


def grid_record(**overrides: Any) -> GridRecord:
    """One timed CPU epoch of `workload()`; rows and batch_size set the sample and step counts."""
    shape = {"rows": 128, "features": 4, "hidden": 8, "batch_size": 16}
    shape.update({key: overrides[key] for key in shape if key in overrides})
    rows, steps = shape["rows"], math.ceil(shape["rows"] / shape["batch_size"])
    epoch_s = overrides.pop("epoch_s", 0.02)
    fields = {
        "device": "cpu",
        "precision": "fp32",
        "placement": "host",
        "loader": "fastpath",
        **shape,
        "grad_scaler": False,
        "matmul_precision": "highest",
        "scaler_skipped_steps": None,
        "optimizer_impl": "Adam fused",
        "param_dtype": "fp32",
        "output_dtype": "fp32",
        "repeat": 0,
        "samples": rows,
        "steps": steps,
        "epoch_s_each": (epoch_s,),
        "epoch_cpu_s": epoch_s,
        "eval_s_each": (overrides.pop("eval_s", 0.005),),
        "eval_samples": rows,
        "eval_loss": 0.69,
        "eval_accuracy": 0.5,
        "final_loss": 0.68,
        "mean_train_loss": 0.69,
        "finite": True,
        "nonfinite_step": None,
        "peak_memory_bytes": None,
        "epoch_memory_bytes": None,
        "warmup_steps": 2,
        "warmup_first_step_s": 0.003,
        "warmup_steady_step_s": 0.001,
        "rehearsal_steps": 8,
        "threads": 1,
        "compiled": False,
        "loadavg_before": (0.1, 0.1, 0.1),
        "loadavg_after": (0.1, 0.1, 0.1),
        "foreign_cpu_share": 0.0,
        "context_startup_s": None,
        "initial_weights_sha256": SHA,
        "final_weights_sha256": SHA,
        "invariants": Invariants(
            samples_eq_rows=True,
            eval_samples_eq_rows=True,
            steps_eq_ceil_rows_over_batch=True,
        ),
    }
    fields.update(overrides)
    return GridRecord(**fields)


def grid_job(**overrides: Any) -> GridJob:
    fields = {
        "records": (grid_record(), grid_record(rows=256, batch_size=64)),
        "wall_interval": (100.0, 101.5),
        "environment": envinfo.quick_environment(seed=7),
        "sentinel": sentinel_readings(),
    }
    return GridJob(**{**fields, **overrides})


def sentinel_readings(**overrides: Any) -> SentinelReadings:
    """A quiet CPU job's sentinel: three ticks of the fixed work around 50 ms."""
    fields: dict[str, Any] = dict(
        workload="cpu: 96 x mm(256x256) fp32",
        seconds=(0.049, 0.050, 0.051),
        median_s=0.050,
        steal_share=0.01,
        cpu_mhz=(2400.0, 2400.0),
        governor=None,
    )
    return SentinelReadings(**{**fields, **overrides})


def reference_step_readings(**overrides: Any) -> ReferenceStepReadings:
    """A quiet CPU job's fixed reference step (measure.reference.ReferenceStep): one timing per round, ~35 ms."""
    fields: dict[str, Any] = dict(
        workload="mlp 32-48-1 adam bce: 64 steps of B=32",
        threads=1,
        seconds=(0.034, 0.035, 0.036),
        median_s=0.035,
    )
    return ReferenceStepReadings(**{**fields, **overrides})


def fit_point(**overrides: Any) -> FitPoint:
    fields = {
        "device": "cpu",
        "source": "grid",
        "rows": 128,
        "features": 4,
        "hidden": 8,
        "batch_size": 16,
        "epoch_s": 0.02,
        "epoch_s_min": 0.018,
        "epoch_s_max": 0.025,
        "repeats": 3,
        "noisy": False,
        "busy_repeats": 0,
    }
    return FitPoint(**{**fields, **overrides})


def residual(**overrides: Any) -> Residual:
    """A grid point's residual as tables/cost_model.json holds it: 5 % over the measured 20 ms, inside its
    prediction interval 18-24 ms (`fit_point()`'s)."""
    fields = {
        "rows": 128,
        "features": 4,
        "hidden": 8,
        "batch_size": 16,
        "measured_s": 0.02,
        "predicted_s": 0.021,
        "device": "cpu",
        "source": "grid",
        "loo_predicted_s": 0.0215,
        "interval_low_s": 0.018,
        "interval_high_s": 0.024,
    }
    fields.update(overrides)
    fields.setdefault("rel_error", (fields["predicted_s"] - fields["measured_s"]) / fields["measured_s"])
    if fields["interval_low_s"] is not None and fields["interval_high_s"] is not None:
        fields.setdefault("inside", fields["interval_low_s"] <= fields["measured_s"] <= fields["interval_high_s"])
    else:
        fields.setdefault("inside", None)
    return Residual(**fields)


def model_row(**overrides: Any) -> ModelRow:
    """A fitted CPU model with the overhead, compute and memory terms, fitted to 2 points."""
    fields = {
        "device": "cpu",
        "source": "fitted",
        "seconds_per_step": 4e-4,
        "gflop_per_s": 20.0,
        "gb_per_s": 2.5,
        "flop_per_s": 2e10,
        "bytes_per_s": 2.5e9,
        "points": 2,
        "r2": 0.99,
        "median_abs_rel_error": 0.01,
        "max_abs_rel_error": 0.03,
        "loo_median_abs_rel_error": 0.02,
        "terms_used": ("overhead", "compute", "memory"),
        "identifiable": True,
        "warning": None,
    }
    return ModelRow(**{**fields, **overrides})


def assumed_model_row(**overrides: Any) -> ModelRow:
    fields = {
        "device": "gpu (assumed)",
        "source": "assumed",
        "seconds_per_step": 1.5e-4,
        "gflop_per_s": 1e4,
        "gb_per_s": 1e3,
        "flop_per_s": 1e13,
        "bytes_per_s": 1e12,
        "points": None,
        "r2": None,
        "median_abs_rel_error": None,
        "max_abs_rel_error": None,
        "loo_median_abs_rel_error": None,
        "terms_used": None,
        "identifiable": None,
        "warning": None,
    }
    return ModelRow(**{**fields, **overrides})


def cost_model_table(**overrides: Any) -> CostModelTable:
    fields = {
        "models": (model_row(), assumed_model_row()),
        "points": (fit_point(), fit_point(source="benchmark", batch_size=32)),
        "residuals": (residual(), residual(source="benchmark", batch_size=32)),
        "interval_confidence": 0.95,
        "interval_resamples": 400,
        "host_to_device_gb_s": 8.0,
        "host_to_device_source": "assumed",
        "host_to_device_memory": None,
        "gpu_startup_s": 0.3,
        "gpu_startup_source": "assumed",
        "epochs": 10,
        "threads": 1,
        "environment": envinfo.quick_environment(seed=7),
        "gpu_profile": None,
    }
    return CostModelTable(**{**fields, **overrides})


def break_even_summary(**overrides: Any) -> BreakEvenSummary:
    """A break-even at 5,000 rows with its 95 % interval 3,000–9,000 (1,000–50,000,000 swept), every
    one of 400 resamples with a break-even."""
    fields = {
        "axis": "rows",
        "placement": "resident",
        "break_even": 5000.0,
        "break_even_low": 3000.0,
        "break_even_high": 9000.0,
        "break_even_low_where": "in_sweep",
        "break_even_high_where": "in_sweep",
        "break_even_share": 1.0,
        "gpu_always_faster_share": 0.0,
        "no_break_even_share": 0.0,
        "confidence": 0.95,
        "resamples": 400,
        "gpu_always_faster": False,
        "gpu_never_faster": False,
        "gpu_faster_until": None,
        "sweep_min": 1000,
        "sweep_max": 50_000_000,
        "base_rows": 8192,
        "base_features": 32,
        "base_hidden": 48,
        "base_batch_size": 512,
        "base_model": TEXTBOOK,
        "steps_at_end": 97_657,
        "cpu_epoch_s_at_end": 50.0,
        "gpu_epoch_s_at_end": 12.0,
        "gpu_extra_s_at_end": 2.0,
        "gpu_host_step_s_at_end": None,
        "gpu_device_step_s_at_end": None,
    }
    return BreakEvenSummary(**{**fields, **overrides})


def coverage(**overrides: Any) -> Coverage:
    """The harness's record of a design: 3 grid jobs, an assumed GPU, 500 runs."""
    fields = {
        "level": 0.95,
        "coverage": 0.8,
        "runs": 500,
        "grid_jobs": 3,
        "profile_machines": 0,
        "resamples": 200,
        "sigma_job": 0.08,
        "sigma_machine": 0.2,
        "seed": 20261206,
        "command": "benchmarks/calibration.py --planner --runs 500 --resamples 200 --seed 20261206",
    }
    return Coverage(**{**fields, **overrides})


def curve_row(**overrides: Any) -> CurveRow:
    fields = {"axis": "rows", "placement": "resident", "value": 1000, "cpu_s": 0.2, "gpu_s": 0.4}
    fields.update(overrides)
    fields.setdefault("cpu_over_gpu", fields["cpu_s"] / fields["gpu_s"] if fields["gpu_s"] else None)
    return CurveRow(**fields)


def break_even_table(**overrides: Any) -> BreakEvenTable:
    fields = {
        "summary": (break_even_summary(),),
        "curves": (curve_row(), curve_row(value=10_000, cpu_s=2.0, gpu_s=0.5)),
        "gpu_model_source": "assumed",
        "label": "modelled",
        "resampled_devices": ("cpu",),
        "seed": 7,
        "gpu_profile": None,
        "coverage": None,
    }
    return BreakEvenTable(**{**fields, **overrides})


def flop_row(**overrides: Any) -> FlopRow:
    """B = 128 over 1000 rows of the model 32 → 48 → 1, timed at 0.5 s."""
    fields = {
        "batch_size": 128,
        "rows": 1000,
        "steps": 8,
        "last_batch_rows": 104,
        "counted_forward_per_batch": 405_504,
        "counted_backward_per_batch": 417_792,
        "counted_per_batch": 823_296,
        "formula_3x_per_batch": 1_216_512,
        "counted_over_3x": 823_296 / 1_216_512,
        "epoch_flop_counted": 6_432_000,
        "epoch_flop_3x": 9_504_000,
        "epoch_s": 0.5,
        "gflop_per_s_3x": 9_504_000 / 0.5 / 1e9,
        "gflop_per_s_counted": 6_432_000 / 0.5 / 1e9,
    }
    return FlopRow(**{**fields, **overrides})


def flop_check(**overrides: Any) -> FlopCheck:
    return FlopCheck(**{"table": (flop_row(),), **overrides})


def scenario_modelled(**overrides: Any) -> ScenarioModelled:
    fields = {
        "cpu_epoch_s": 900.0,
        "gpu_epoch_s_resident": 12.0,
        "gpu_epoch_s_streamed": 18.4,
        "gpu_model_source": "assumed",
        "host_to_device_copy_s": 6.4,
    }
    return ScenarioModelled(**{**fields, **overrides})


def scenario(**overrides: Any) -> Scenario:
    """Exercise 4 (n = 50,000,000, d = 256, 256 → 128 → 1, B = 512, 8 GB/s) on a 24 GiB host and an 80 GB GPU."""
    fields = {
        "rows": 50_000_000,
        "features": 256,
        "hidden": 128,
        "batch_size": 512,
        "widths": (256, 128, 1),
        "bandwidth_gb_s": 8.0,
        "input_bytes": 51_200_000_000,
        "host_memory_bytes": 24 << 30,
        "gpu_memory_bytes": 80 * 10**9,
        "fits_in_host_memory": False,
        "fits_in_gpu_memory": True,
        "params": 33_025,
        "adam_fp32_bytes": 528_400,
        "batch_input_bytes": 524_288,
        "batch_hidden_bytes": 262_144,
        "batch_logit_bytes": 2_048,
        "forward_activation_bytes": 788_480,
        "forward_backward_activation_bytes": 1_576_960,
        "transfer_s": 6.4,
        "steps_per_epoch": 97_657,
        "flop_per_epoch_3x": 9_868_800_000_000,
        "flop_per_epoch_counted": 6_592_000_000_000,
        "to_measure": ("the whole path at least 3 times",),
        "must_stream": True,
        "gpu_memory_source": "measured",
        "modelled": scenario_modelled(),
    }
    return Scenario(**{**fields, **overrides})
