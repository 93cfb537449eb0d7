"""The planner: the cost model fitted to the timed grid, the break-even curves and the scale scenario of exercise 4."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from accel_choice import records
from accel_choice.analyze import costmodel, counted_fit, gpu_costs, model_work, stats, theory
from accel_choice.analyze.gpu_costs import copy_bytes
from accel_choice.analyze.breakeven_interval import Interval, grid_groups, is_fit_cell
from accel_choice.analyze.costmodel import AnyWorkload, BreakEvenCurve, CostModel
from accel_choice.analyze.gpu_profile import ProfileModel
from accel_choice.analyze.model_work import CountedWorkload, PerSample
from accel_choice.records.grid import GridRecord
from accel_choice.records.breakeven import BreakEvenSummary, CurveRow
from accel_choice.records.planner import FitPoint, ModelRow, Scenario, ScenarioModelled
from accel_choice.records.training import TrainingCell


def scenario_plan(
    rows: int,
    features: int,
    hidden: int,
    batch_size: int,
    bandwidth_gb_s: float,
    *,
    host_memory_bytes: int | None,
    gpu_memory_bytes: int | None,
    gpu_memory_source: str,
) -> Scenario:
    """Exercise 4's planning sheet: sizes, memory bounds, and the transfer-time estimate.

    For n = 50,000,000, d = 256, 256 → 128 → 1, B = 512 at 8 GB/s: 51.2 GB of input,
    P = 33,025, Adam bound 528,400 bytes, 6.4 s to move the input once. The modelled epochs
    (scenario_predictions) are added with dataclasses.replace once the cost models exist.
    """
    widths = (features, hidden, 1)
    input_bytes = theory.input_bytes(rows, features)
    forward_activations = theory.activation_bytes(batch_size, widths)
    fits_in_host = None if host_memory_bytes is None else input_bytes <= host_memory_bytes
    fits_in_gpu = None if gpu_memory_bytes is None else input_bytes <= gpu_memory_bytes
    return Scenario(
        rows=rows,
        features=features,
        hidden=hidden,
        batch_size=batch_size,
        widths=widths,
        bandwidth_gb_s=bandwidth_gb_s,
        input_bytes=input_bytes,
        host_memory_bytes=host_memory_bytes,
        gpu_memory_bytes=gpu_memory_bytes,
        fits_in_host_memory=fits_in_host,
        fits_in_gpu_memory=fits_in_gpu,
        params=theory.param_count(widths),
        adam_fp32_bytes=theory.adam_fp32_bytes(widths),
        batch_input_bytes=theory.input_bytes(batch_size, features),
        batch_hidden_bytes=batch_size * hidden * theory.FP32_BYTES,
        batch_logit_bytes=batch_size * theory.FP32_BYTES,
        forward_activation_bytes=forward_activations,
        forward_backward_activation_bytes=2 * forward_activations,
        transfer_s=theory.transfer_seconds(input_bytes, bandwidth_gb_s),
        steps_per_epoch=theory.steps_per_epoch(rows, batch_size),
        flop_per_epoch_3x=theory.forward_backward_flops(rows, widths),
        flop_per_epoch_counted=theory.forward_backward_flops_counted(rows, widths),
        to_measure=(
            "the whole path at least 3 times: load, CPU→GPU transfer, train, eval",
            f"the effective host→device bandwidth on this machine (the {bandwidth_gb_s:g} GB/s here is an assumption)",
            "the GPU's name, driver/CUDA version and PCIe link, recorded with the numbers",
            "loading (disk/Parquet → tensors) at this size: it often dominates the transfer",
        ),
        # The input is known not to fit where it would have to sit whole.
        must_stream=fits_in_gpu is False or fits_in_host is False,
        gpu_memory_source=gpu_memory_source,
    )


def grid_points(grid: Sequence[GridRecord], rules: stats.NoiseRules) -> list[FitPoint]:
    """Return the median epoch time per (device, workload) over the grid's repeats.

    Median epoch time per (device, workload) over the grid's repeats, with its noise verdict
    and the repeats measured while other processes were busy (kept, and counted in the report)."""
    points = []
    for (device, rows, features, hidden, batch_size), group in grid_groups(grid).items():
        summary = stats.summarize([r.epoch_s for r in group], rules)
        busy = sum(1 for r in group if stats.contamination(r, rules))
        points.append(
            FitPoint(
                device=device,
                source="grid",
                rows=rows,
                features=features,
                hidden=hidden,
                batch_size=batch_size,
                epoch_s=summary["median"],
                epoch_s_min=summary["min"],
                epoch_s_max=summary["max"],
                repeats=summary["n"],
                noisy=summary["noisy"],
                busy_repeats=busy,
            )
        )
    return points


def point_workload(point: FitPoint, per_sample: PerSample | None) -> AnyWorkload:
    """Return the workload a fit point measured: the textbook MLP's, or the counted model's (`per_sample`)."""
    if point.features is not None:
        return point.workload
    if per_sample is None or per_sample.model != point.model:
        raise ValueError(f"the fit point of {point.model!r} needs that model's counted profile")
    return CountedWorkload(rows=point.rows, batch_size=point.batch_size, per_sample=per_sample)


def device_models(
    points: Sequence[FitPoint], gpu_assumed: Mapping[str, float] | None, per_sample: PerSample | None = None
) -> dict[str, CostModel]:
    """Return a fitted model for every measured device.

    A fitted model for every measured device; where no GPU was measured, your assumed GPU
    (planner.gpu_assumed) if you gave one (else the planner models it from a profile: analyze.gpu_profile).
    `per_sample`: the counted model of the benchmark's points where it is not the grid's MLP."""
    models = {}
    for device in dict.fromkeys(p.device for p in points):
        mine = [(point_workload(p, per_sample), p.epoch_s) for p in points if p.device == device]
        # The grid's MLPs fit the device's rates; a counted model's cells its own per step and per FLOP.
        model = costmodel.fit(device, [(w, s) for w, s in mine if not isinstance(w, CountedWorkload)])
        models[device] = counted_fit.fit_counted(model, [(w, s) for w, s in mine if isinstance(w, CountedWorkload)])
    if set(models) == {"cpu"} and gpu_assumed is not None:
        models["gpu"] = costmodel.assumed(
            "gpu (assumed)",
            gpu_assumed["seconds_per_step"],
            gpu_assumed["tflop_per_s"] * 1e12,
            gpu_assumed["memory_gb_s"] * 1e9,
        )
    return models


def model_row(model: CostModel) -> ModelRow:
    """Build the table row of a model.

    The table row of a model: a term the fit dropped (rate ∞) is written as null, with `terms_used`;
    an assumed model's fit quality is null."""
    quality = model.quality

    def fit(name: str) -> Any:
        return None if quality is None else getattr(quality, name)

    def finite(rate: float, scale: float = 1.0) -> float | None:
        return None if math.isinf(rate) else rate / scale

    return ModelRow(
        device=model.device,
        source=model.source,
        seconds_per_step=model.seconds_per_step,
        gflop_per_s=finite(model.flop_per_s, 1e9),
        gb_per_s=finite(model.bytes_per_s, 1e9),
        flop_per_s=finite(model.flop_per_s),
        bytes_per_s=finite(model.bytes_per_s),
        state_gb_per_s=finite(model.state_bytes_per_s, 1e9),
        state_bytes_per_s=finite(model.state_bytes_per_s),
        seconds_per_row=model.seconds_per_row,
        points=fit("points"),
        r2=fit("r2"),
        median_abs_rel_error=fit("median_abs_rel_error"),
        max_abs_rel_error=fit("max_abs_rel_error"),
        loo_median_abs_rel_error=fit("loo_median_abs_rel_error"),
        terms_used=fit("terms_used"),
        identifiable=fit("identifiable"),
        warning=fit("warning"),
        **_counted_fields(model),
    )


def profile_row(gpu: ProfileModel, w: AnyWorkload) -> ModelRow:
    """Build the table row of a profile's GPU.

    The table row of a profile's GPU: its host's seconds per step of `w` (this model's ops), and the
    matmul rate and memory bandwidth it reads; no fit, so no quality."""
    host, _ = gpu.step_parts(w)
    flop, bandwidth = gpu.chosen.flop.estimate.point, gpu.chosen.bandwidth.estimate.point
    return ModelRow(
        device=gpu.device,
        source="profile",
        seconds_per_step=float(host[0]),
        gflop_per_s=flop / 1e9,
        gb_per_s=bandwidth / 1e9,
        flop_per_s=flop,
        bytes_per_s=bandwidth,
        points=None,
        r2=None,
        median_abs_rel_error=None,
        max_abs_rel_error=None,
        loo_median_abs_rel_error=None,
        terms_used=None,
        identifiable=None,
        warning=None,
    )


def _counted_fields(model: CostModel) -> dict[str, Any]:
    """A counted model's own rates and fit quality (analyze.counted_fit), where fitted."""
    if model.counted is None or model.counted_quality is None:
        return {}
    per_step, per_flop = model.counted
    quality = model.counted_quality
    return {
        "counted_points": quality.points,
        "counted_seconds_per_step": per_step,
        "counted_gflop_per_s": None if per_flop <= 0 else 1e-9 / per_flop,
        "counted_median_abs_rel_error": quality.median_abs_rel_error,
        "counted_loo_median_abs_rel_error": quality.loo_median_abs_rel_error,
        "counted_warning": quality.warning,
    }


def sweep_values(low: int, high: int, count: int = 25) -> list[int]:
    """Log-spaced integers from low to high, both included, without repeats."""
    ratio = (high / low) ** (1 / (count - 1))
    return sorted({max(1, round(low * ratio**i)) for i in range(count)} | {low, high})


def break_even_curves(
    cpu: CostModel,
    gpu: CostModel | ProfileModel,
    base: AnyWorkload,
    sweep: Mapping[str, Sequence[int]],
    host_to_device_bytes_per_s: float,
    startup_s: float,
    epochs: int,
) -> list[BreakEvenCurve]:
    """Per axis: the GPU with its data resident, and the GPU copying each epoch's input (streamed).

    A training job of `epochs` epochs pays the GPU's fixed costs once - the runtime's start-up,
    and for resident data one copy of the input - so each GPU epoch carries 1/epochs of them.
    A counted model (analyze.model_work) is grown along rows and batch size only: the sweep's
    features and hidden are the textbook MLP's and are skipped for it.
    """

    def extra(placement: str) -> Callable[[AnyWorkload], float]:
        return lambda w: float(
            gpu_costs.extra_seconds(placement, startup_s, copy_bytes(w) / host_to_device_bytes_per_s, epochs)
        )

    curves = []
    axes = model_work.AXES if isinstance(base, CountedWorkload) else costmodel.AXES
    for axis, (low, high) in sweep.items():
        if axis not in axes:
            continue
        values = sweep_values(low, high)
        for placement in gpu_costs.PLACEMENTS:
            gpu_side = gpu.epoch_s if isinstance(gpu, ProfileModel) else gpu
            curve = costmodel.break_even(cpu, gpu_side, base, axis, values, gpu_extra_s=extra(placement))
            curves.append(dataclasses.replace(curve, placement=placement))
    return curves


def curve_rows(curves: Sequence[BreakEvenCurve]) -> list[CurveRow]:
    """Return every value of every curve, one row each (an infinite cpu/gpu ratio written as null)."""
    return [
        CurveRow(
            axis=c.axis,
            placement=c.placement,
            value=v,
            cpu_s=cs,
            gpu_s=gs,
            cpu_over_gpu=ratio if math.isfinite(ratio) else None,
        )
        for c in curves
        for v, cs, gs, ratio in zip(c.values, c.cpu_s, c.gpu_s, c.ratio)
    ]


def scenario_predictions(
    plan: Scenario, cpu: CostModel, gpu: CostModel | ProfileModel, host_to_device_bytes_per_s: float
) -> ScenarioModelled:
    """Modelled epoch times for the scenario: far outside the measured grid, so an extrapolation."""
    workload = plan.workload
    gpu_s = gpu.epoch_s(workload) if isinstance(gpu, ProfileModel) else costmodel.predict(gpu, workload)
    copy_s = theory.input_bytes(workload.rows, workload.features) / host_to_device_bytes_per_s
    return ScenarioModelled(
        cpu_epoch_s=costmodel.predict(cpu, workload),
        gpu_epoch_s_resident=gpu_s,
        gpu_epoch_s_streamed=gpu_s + copy_s,
        gpu_model_source="profile" if isinstance(gpu, ProfileModel) else gpu.source,
        host_to_device_copy_s=copy_s,
    )


def break_even_summary(
    curve: BreakEvenCurve, interval: Interval, gpu: CostModel | ProfileModel | None = None
) -> BreakEvenSummary:
    """Summarise where along the axis the GPU is faster.

    Where along the axis the GPU is faster, in the three shapes a curve can take: never,
    from a break-even on (or over the whole range), or only up to some value; with the
    break-even's bootstrap interval (analyze.breakeven_interval), and both devices at the sweep's end
    (a profile's GPU, `gpu`, with its step's host and device seconds)."""
    end = dataclasses.replace(curve.base, **{curve.axis: curve.values[-1]})
    host = device = None
    if isinstance(gpu, ProfileModel):
        host, device = (float(part[0]) for part in gpu.step_parts(end))
    faster = curve.gpu_faster
    faster_until = None
    if faster[0] and not all(faster):
        faster_until = curve.values[faster.index(False) - 1]
    base = curve.base
    return BreakEvenSummary(
        axis=curve.axis,
        placement=curve.placement,
        break_even=curve.break_even,
        break_even_low=interval.low,
        break_even_high=interval.high,
        break_even_low_where=interval.low_where,
        break_even_high_where=interval.high_where,
        break_even_share=interval.break_even_share,
        gpu_always_faster_share=interval.gpu_always_faster_share,
        no_break_even_share=interval.no_break_even_share,
        confidence=interval.confidence,
        resamples=interval.resamples,
        gpu_always_faster=curve.gpu_always_faster,
        gpu_never_faster=not any(faster),
        gpu_faster_until=faster_until,
        sweep_min=curve.values[0],
        sweep_max=curve.values[-1],
        **{f"base_{name}": value for name, value in model_work.identity(base).items()},
        steps_at_end=int(costmodel.work(end)["steps"]),
        cpu_epoch_s_at_end=curve.cpu_s[-1],
        gpu_epoch_s_at_end=curve.gpu_s[-1],
        gpu_extra_s_at_end=curve.gpu_extra_s[-1] if curve.gpu_extra_s else 0.0,
        gpu_host_step_s_at_end=host,
        gpu_device_step_s_at_end=device,
    )


def scenario_rows(plan: Scenario) -> list[dict[str, Any]]:
    """Return the scenario as quantity/value rows, the modelled epochs included (flattened)."""
    body = {k: v for k, v in records.to_json(plan).items() if k not in records.HEADER}
    rows = [{"quantity": k, "value": v} for k, v in body.items() if not isinstance(v, (dict, list))]
    rows += [{"quantity": f"modelled.{k}", "value": v} for k, v in (body.get("modelled") or {}).items()]
    return rows


# --- other families' files, read as dicts until they are records (issue 12) ---------------------
# tables/{cpu,gpu}_training.json (the training cells), tables/transfers.json (the aggregated
# copies and start-up) and env/devices.json (the device probe).


def benchmark_points(train_table: Sequence[TrainingCell], workload: Callable[[int], AnyWorkload]) -> list[FitPoint]:
    """Return the main benchmark's fast-path fp32 cells as extra fit points.

    The main benchmark's fast-path fp32 cells (CPU on the host, GPU resident) as extra fit points;
    `workload(batch_size)` is what one such cell's epoch is (the textbook MLP's, or a counted model's)."""
    return [
        FitPoint(
            device=r.device,
            source="benchmark",
            **model_work.identity(workload(r.batch_size)),
            epoch_s=r.epoch_s.point,
            epoch_s_min=r.epoch_s_min,
            epoch_s_max=r.epoch_s_max,
            repeats=r.repeats,
            noisy=r.noisy,
            busy_repeats=len(r.contaminated),
        )
        for r in train_table
        if is_fit_cell(r)
    ]


def fastpath_cpu_seconds(train_table: Sequence[TrainingCell]) -> dict[int, float]:
    """Return the median CPU fast-path epoch per batch size (the FLOP check's achieved rate)."""
    return {
        r.batch_size: r.epoch_s.point
        for r in train_table
        if r.device == "cpu" and r.loader == "fastpath" and not r.compiled
    }
