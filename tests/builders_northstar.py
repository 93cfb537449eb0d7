"""Builders of the Northstar records (records/northstar.py): a valid record each, any field overridden.

Every builder takes keyword overrides of the record's own fields; nested parts have their own builder.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from accel_choice.analyze import selection
from accel_choice.records.environment import Environment, Workflow
from accel_choice.records.northstar import (
    EnvironmentalCheck,
    EpochRow,
    FittedStandardizer,
    GeneratedSource,
    GradientVariance,
    HeldOutResult,
    NorthstarHistory,
    NorthstarPrepare,
    NumericCheck,
    SeedLimits,
    SeedRun,
    SplitRatios,
    SplitSummaries,
    SplitSummary,
    Spread,
    StatisticalCheck,
    VarianceRow,
)
from accel_choice.records.time_to_target import TimeToTarget
from builders_data import library

SHA_A, SHA_B, SHA_C = "a" * 64, "b" * 64, "c" * 64


def northstar_environment(**overrides: Any) -> Environment:
    """A fixed quick environment record (a CPU-only machine, torch loaded)."""
    fields: dict[str, Any] = dict(
        torch_version="2.5.1",
        torch_loaded=True,
        cuda_compiled_version=None,
        is_cuda_available=False,
        nvidia_gpu_models=(),
        cpu_model="Test CPU",
        logical_cores=2,
        affinity_cores=2,
        host_memory_bytes=8 << 30,
        torch_threads=1,
        torch_interop_threads=1,
        omp_num_threads_env=None,
        python_version="3.11.9",
        python_platform="Linux-test",
        os="Linux 6.1",
        machine="x86_64",
        packages={"torch": "2.5.1", "numpy": "2.1.0"},
        seed=7,
        workflow=Workflow(commit="0" * 40, dirty=False, library=library(), command_line="snakemake --cores 4"),
    )
    return Environment(**{**fields, **overrides})


def prepare_record(**overrides: Any) -> NorthstarPrepare:
    """prepare.json of a 200-row generated table with two features, split 120/40/40."""
    fields: dict[str, Any] = dict(
        feature_columns=("a", "b"),
        target_column="late",
        split_column="split",
        source=GeneratedSource(kind="generated", matrix_sha256=SHA_A),
        ratios=SplitRatios(train=0.6, val=0.2, test=0.2),
        seed=7,
        splits=SplitSummaries(
            train=SplitSummary(rows=120, positive_rate=0.2),
            val=SplitSummary(rows=40, positive_rate=0.2),
            test=SplitSummary(rows=40, positive_rate=0.2),
        ),
        standardizer=FittedStandardizer(fitted_on="train", mean=(0.5, -1.0), std=(1.0, 2.0)),
        table_sha256=SHA_B,
        environment=northstar_environment(),
    )
    return NorthstarPrepare(**{**fields, **overrides})


def epoch_rows(
    val_losses: list[float | None], seconds_per_epoch: float = 1.0, steps_per_epoch: int = 10, min_delta: float = 0.0
) -> tuple[EpochRow, ...]:
    """History rows with these validation losses, each epoch `seconds_per_epoch` long; `improved`
    follows the early-stopping rule (a new best by more than `min_delta`)."""
    rows, best = [], float("inf")
    for epoch, val_loss in enumerate(val_losses, start=1):
        improved = val_loss is not None and val_loss < best - min_delta
        best = val_loss if improved else best
        rows.append(
            EpochRow(
                epoch=epoch,
                train_loss=val_loss,
                val_loss=val_loss,
                epoch_s=seconds_per_epoch,
                cumulative_s=seconds_per_epoch * epoch,
                updates=steps_per_epoch * epoch,
                samples_per_s=120 / seconds_per_epoch,
                improved=improved,
                peak_memory_bytes=None,
            )
        )
    return tuple(rows)


def held_out_result(**overrides: Any) -> HeldOutResult:
    fields: dict[str, Any] = dict(
        log_loss=0.45, roc_auc=0.8, brier=0.15, accuracy_at_0_5=0.82, rows=40, base_rate=0.2, base_rate_log_loss=0.5
    )
    return HeldOutResult(**{**fields, **overrides})


def history_record(
    val_losses: list[float | None] | None = None,
    seconds_per_epoch: float = 1.0,
    steps_per_epoch: int = 10,
    **overrides: Any,
) -> NorthstarHistory:
    """history.json of one run on the CPU at B=16; with `val_losses`, its rows (best epoch, best loss
    and stopped epoch follow them unless overridden)."""
    history = epoch_rows(val_losses or [0.7, 0.6, 0.62], seconds_per_epoch, steps_per_epoch)
    best = max(row.epoch for row in history if row.improved)
    fields: dict[str, Any] = dict(
        device="cpu",
        batch_size=16,
        history=history,
        best_epoch=best,
        best_val_loss=history[best - 1].val_loss,
        stopped_epoch=len(history),
        stopped_early=False,
        best_state_sha256=SHA_C,
        test=held_out_result(),
        test_evaluations=1,
        environment=northstar_environment(),
    )
    return NorthstarHistory(**{**fields, **overrides})


def time_to_target_record(**overrides: Any) -> TimeToTarget:
    """time_to_target.json of two runs (B=16 reaches the target, B=64 does not)."""
    made = selection.time_to_target([history_record([0.7, 0.5]), history_record([0.7, 0.6], batch_size=64)], 0.01)
    return dataclasses.replace(made, **overrides)


def seed_run(**overrides: Any) -> SeedRun:
    fields: dict[str, Any] = dict(
        seed=7,
        best_epoch=3,
        best_state_sha256=SHA_A,
        val_losses=(0.7, 0.6, 0.55),
        log_loss=0.45,
        roc_auc=0.8,
        brier=0.15,
        accuracy_at_0_5=0.82,
        rows=40,
    )
    return SeedRun(**{**fields, **overrides})


def seed_limits_record(**overrides: Any) -> SeedLimits:
    """seed_limits.json of seeds 7 and 8 at B=16: reproducible, one environment key differing."""
    fields: dict[str, Any] = dict(
        numeric=NumericCheck(seed=7, identical_weights=True, identical_loss_curves=True, state_sha256=(SHA_A, SHA_A)),
        statistical=StatisticalCheck(
            log_loss=Spread(mean=0.46, std=0.0141, min=0.45, max=0.47),
            roc_auc=Spread(mean=0.79, std=0.0141, min=0.78, max=0.8),
        ),
        runs=(seed_run(), seed_run(seed=8, best_state_sha256=SHA_B, log_loss=0.47, roc_auc=0.78)),
        seeds=(7, 8),
        environmental=EnvironmentalCheck(records_compared=3, differences={"torch_threads": (1, 2)}, note="compared"),
        batch_size=16,
    )
    return SeedLimits(**{**fields, **overrides})


def variance_row(**overrides: Any) -> VarianceRow:
    """B=16 of N=256 rows with σ² = 1.6."""
    fields: dict[str, Any] = dict(
        batch_size=16,
        measured=0.095,
        measured_stderr=0.002,
        predicted=0.1 * 240 / 255,
        predicted_iid=0.1,
        ratio=0.095 / (0.1 * 240 / 255),
        ratio_2se=0.004 / (0.1 * 240 / 255),
    )
    return VarianceRow(**{**fields, **overrides})


def gradient_variance_record(**overrides: Any) -> GradientVariance:
    fields: dict[str, Any] = dict(
        rows=256,
        parameters=81,
        sigma2=1.6,
        draws=200,
        table=(variance_row(),),
        parameter_point="seeded initial weights",
        environment=northstar_environment(),
    )
    return GradientVariance(**{**fields, **overrides})
