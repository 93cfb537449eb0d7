"""The GPU decision sheet of section 28.3.5 and a verdict that claims only what was measured.

Everything here is numbers and codes (records.decision); render/decision.py says it in words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from accel_choice.analyze.figures import Figures
from accel_choice.analyze.job_intervals import jobs_to_settle, simultaneous_level
from accel_choice.analyze.decision_intervals import (
    contenders,
    cpu_statements,
    beside_twin,
    full_path_jobs,
    per_epoch_speedup,
    speedup_estimate,
)
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.decision import (
    DeviceComparison,
    EvidenceValue,
    CpuConfiguration,
    FastestEpoch,
    GpuMemory,
    GpuVisibility,
    MemoryCheck,
    Missing,
    Outcome,
    Reason,
    SheetStep,
    StepScaling,
    RunTrust,
    Verdict,
)
from accel_choice.records.environment import Environment
from accel_choice.records.loads import LoadCell, TransferTable, VisibleDevices
from accel_choice.records.time_to_target import TimeToTarget
from accel_choice.records.training import TrainingCell, variant_fields
from accel_choice.records.fullpath import FullPathRow


def gpu_visibility(probe: VisibleDevices | None, environment: Environment) -> GpuVisibility:
    """Say whether a GPU is visible, from the device probe (or, without one, the environment record)."""
    if probe is not None:
        if probe.cuda_devices:
            return GpuVisibility(
                visible=True,
                kind="cuda",
                names=tuple(d.name for d in probe.cuda_devices),
                cuda_version=probe.cuda_version,
                driver=probe.nvidia_driver,
                torch_version=probe.torch_version,
                source="probe",
            )
        return GpuVisibility(
            visible=probe.mps_available,
            kind="mps" if probe.mps_available else None,
            names=(),
            cuda_version=probe.cuda_version,
            driver=None,
            torch_version=probe.torch_version,
            source="probe",
        )
    visible = bool(environment.is_cuda_available)
    return GpuVisibility(
        visible=visible,
        kind="cuda" if visible else None,
        names=environment.nvidia_gpu_models,
        cuda_version=environment.cuda_compiled_version,
        driver=None,
        torch_version=environment.torch_version,
        source="environment",
    )


def gpu_memory(train_table: Sequence[TrainingCell], figures: Figures, rows: int) -> tuple[GpuMemory, ...]:
    """Return each GPU cell's epoch memory and peak beside its bound.

    Each GPU cell's own epoch memory (peak less its baseline) and absolute peak beside its bound
    (the matrix counts where the data are resident)."""
    found = []
    for cell in (c for c in train_table if c.device != "cpu"):
        bound = figures.memory_bound_bytes(cell.batch_size, rows, cell.placement == "resident")
        own = cell.epoch_memory_bytes_max
        found.append(
            GpuMemory(
                **variant_fields(cell),
                peak_bytes=cell.peak_memory_bytes_max,
                epoch_bytes=own,
                bound_bytes=bound,
                epoch_over_bound=own / bound if own is not None else None,
            )
        )
    return tuple(found)


def _missing(accelerator: str, visible: bool) -> Missing:
    if accelerator == "off":
        return "accelerator_off"
    # e.g. the probe ran on a GPU node while the submit host planned no GPU jobs
    return "not_planned" if visible else "not_measurable_here"


def _evidence(**values: Any) -> tuple[EvidenceValue, ...]:
    return tuple(EvidenceValue(name=name, value=value) for name, value in values.items())


def decision_sheet(
    train_table: Sequence[TrainingCell],
    load_table: Sequence[LoadCell],
    environment: Environment,
    figures: Figures,
    batch_sizes: Sequence[int],
    *,
    probe: VisibleDevices | None = None,
    transfers: TransferTable | None = None,
    accelerator: str = "auto",
) -> tuple[SheetStep, ...]:
    """Build the six steps, each with an honest status and the figures behind it."""
    gpu = gpu_visibility(probe, environment)
    gpu_rows = [r for r in train_table if r.device != "cpu"]
    cpu_rows = [r for r in train_table if r.device == "cpu"]
    missing = _missing(accelerator, gpu.visible)
    largest = max(batch_sizes)
    if transfers:
        matrix = next(r for r in transfers.copies if r.what == "matrix" and r.memory == "pageable")
        transfer = SheetStep(
            step=3,
            status="measured",
            evidence=_evidence(matrix_gb_per_s=matrix.gb_per_s, context_startup_s=transfers.context_startup_s.median),
        )
    else:
        transfer = SheetStep(step=3, status="missing", missing=missing)
    peak = max(((r.peak_memory_bytes_max or 0) for r in gpu_rows), default=0)
    if gpu_rows:
        variants = sorted({f"{r.precision}/{r.placement}" for r in gpu_rows})
        same_model = SheetStep(
            step=4, status="measured", evidence=_evidence(gpu_cells=len(gpu_rows), variants=", ".join(variants))
        )
        full_path = SheetStep(step=5, status="measured_on_both_devices")
    else:
        same_model = SheetStep(step=4, status="missing", missing=missing)
        full_path = SheetStep(step=5, status="cpu_measured_gpu_missing", missing=missing)
    return (
        SheetStep(
            step=1,
            status="measured",
            evidence=_evidence(
                load_cells=len(load_table),
                training_cells=len(cpu_rows),
                repeats=", ".join(map(str, sorted({r.repeats for r in cpu_rows}))),
            ),
        ),
        SheetStep(
            step=2,
            status="checked",
            evidence=_evidence(
                visible=gpu.visible,
                kind=gpu.kind,
                names=", ".join(gpu.names),
                cuda_version=gpu.cuda_version,
                driver=gpu.driver,
                torch_version=gpu.torch_version,
            ),
        ),
        transfer,
        same_model,
        full_path,
        SheetStep(
            step=6,
            status="computed_and_measured" if peak else "computed",
            evidence=_evidence(
                adam_bytes=figures.state_bytes,
                activation_bytes=figures.activation_bytes(largest),
                batch_size=largest,
                peak_memory_bytes=peak or None,
            ),
        ),
    )


def compare_devices(
    full_path_rows: Sequence[FullPathRow],
    threshold: float,
    cells: Sequence[TrainingCell] = (),
    rules: NoiseRules = NoiseRules(),
    epochs: int = 1,
    beside: Sequence[TrainingCell] = (),
) -> DeviceComparison | None:
    """Compare each device's fastest full path over `epochs` epochs.

    Each device's fastest full path over `epochs` epochs (one-off costs and start-up paid once), the
    speedup CPU/GPU with its t interval (decision_intervals.speedup_estimate, from `cells`) held at the level of a family as large
    as the pairs of paths that could have been the two fastest (decision_intervals.contenders), whether
    the GPU wins (the whole interval above `threshold`), and after how many epochs the GPU's per-epoch
    gain repays its larger one-off costs (start-up, resident copy, load). The per-epoch speedup pairs job by
    job where the GPU's jobs timed the best CPU configuration beside it (`beside`: decision_intervals.per_epoch_speedup)."""
    cpu = [r for r in full_path_rows if r.device == "cpu"]
    gpu = [r for r in full_path_rows if r.device != "cpu"]
    if not cpu or not gpu:
        return None
    best_cpu, best_gpu = (min(rows, key=lambda r: r.one_off_s + epochs * r.per_epoch_s) for rows in (cpu, gpu))
    family = contenders(cpu, best_cpu, cells, rules.confidence, epochs) * contenders(
        gpu, best_gpu, cells, rules.confidence, epochs
    )
    speedup = speedup_estimate(best_cpu, best_gpu, cells, rules, family, epochs)
    by_variant = {c.key: c for c in cells}
    cpu_cell, gpu_cell = by_variant[best_cpu.key], by_variant[best_gpu.key]
    per_epoch = per_epoch_speedup(cpu_cell, gpu_cell, simultaneous_level(rules.confidence, family), beside)
    twin = beside_twin(cpu_cell, gpu_cell, beside)
    # The GPU row that repays its extra one-off costs soonest: not always the fastest one-epoch
    # path (a resident copy costs once what a streamed path pays every epoch).
    repaid = [
        (max(g.one_off_s - best_cpu.one_off_s, 0.0) / (best_cpu.per_epoch_s - g.per_epoch_s), g)
        for g in gpu
        if best_cpu.per_epoch_s > g.per_epoch_s
    ]
    soonest = min(repaid, key=lambda pair: (pair[0], pair[1].total_with_startup_s), default=None)
    return DeviceComparison(
        cpu=best_cpu,
        gpu=best_gpu,
        speedup=speedup,
        epochs=epochs,
        speedup_per_epoch=per_epoch,
        cpu_beside_per_epoch_s=None if twin is None else twin.epoch_s.point + twin.eval_s.point,
        speedup_without_startup=best_cpu.total_s / best_gpu.total_s,
        threshold=threshold,
        gpu_wins=speedup.low > threshold,
        break_even_epochs=soonest[0] if soonest else None,
        break_even_gpu=soonest[1] if soonest else None,
    )


def epochs_to_target(selection: TimeToTarget) -> int:
    """Return the epochs a real job trains, as the Northstar selection measured them.

    The epochs a real job trains, as the Northstar selection measured them: its fastest run's epochs to the
    target; where none reached it, the most any run trained before stopping."""
    fastest = next((row for row in selection.rows if row.run == selection.fastest and row.epoch), None)
    return fastest.epoch if fastest else max(row.stopped_epoch for row in selection.rows)


def memory_check(
    figures: Figures, batch_size: int, rows: int, host_memory_bytes: int | None, device_memory_bytes: int | None
) -> MemoryCheck:
    adam, activations = figures.state_bytes, 2 * figures.activation_bytes(batch_size)
    data = figures.data_bytes(rows)
    bound = adam + activations + data
    return MemoryCheck(
        figures=figures.source,
        adam_bytes=adam,
        activation_bytes=activations,
        data_bytes=data,
        batch_size=batch_size,
        bound_bytes=bound,
        host_memory_bytes=host_memory_bytes,
        device_memory_bytes=device_memory_bytes,
        fits_host=None if host_memory_bytes is None else bound <= host_memory_bytes,
        fits_device=None if device_memory_bytes is None else bound <= device_memory_bytes,
    )


def device_memory_bytes(probe: VisibleDevices | None) -> int | None:
    """Return the smallest visible CUDA device's memory, from the probe; None without one."""
    return min((d.total_memory_bytes for d in probe.cuda_devices), default=None) if probe is not None else None


def verdict(
    train_table: Sequence[TrainingCell],
    full_path_rows: Sequence[FullPathRow],
    environment: Environment,
    figures: Figures,
    *,
    rows: int,
    probe: VisibleDevices | None = None,
    threshold: float = 1.5,
    host_memory_bytes: int | None = None,
    rules: NoiseRules = NoiseRules(),
    noise_floor: float | None = None,
    trust: RunTrust | None = None,
    epochs: int = 1,
    beside: Sequence[TrainingCell] = (),
) -> Verdict:
    """Decide between CPU, GPU and undecided.

    GPU only when it was measured and its full-path speedup interval lies wholly above `threshold`;
    CPU when the interval lies at or below it; undecided when it straddles it, with the jobs per side that
    would settle it with 80 % power (job_intervals.jobs_to_settle). No CUDA measurement, no GPU claim. `noise_floor`: the run's (sentinel),
    used to call CPU configurations tied with the fastest."""
    gpu = gpu_visibility(probe, environment)
    cpu_train = [r for r in train_table if r.device == "cpu"]
    best = min((r for r in full_path_rows if r.device == "cpu"), key=lambda r: r.total_s)
    fastest, ties, scaling = cpu_statements(cpu_train, noise_floor, rules)
    flop = figures.epoch_flops_3x(fastest.samples, fastest.batch_size)
    comparison = compare_devices(full_path_rows, threshold, train_table, rules, epochs, beside)
    settle = None
    if comparison is None:
        reason: Reason = "gpu_visible_not_measured" if gpu.visible else "no_gpu_visible"
        outcome: Outcome = "CPU"
    elif trust is not None and trust.contaminated:
        reason, outcome = "run_contaminated", "undecided"  # the speedup rests on the flagged jobs
    elif comparison.gpu_wins:
        reason, outcome = "gpu_pays_off", "GPU"
    elif comparison.speedup.high <= threshold:
        reason, outcome = "below_threshold", "CPU"
    else:
        reason, outcome = "interval_straddles_threshold", "undecided"
        by_variant = {c.key: c for c in train_table}
        settle = jobs_to_settle(
            full_path_jobs(comparison.gpu, by_variant[comparison.gpu.key], epochs),
            full_path_jobs(comparison.cpu, by_variant[comparison.cpu.key], epochs),
            threshold,
            rules.confidence,
        )
    return Verdict(
        device="GPU" if outcome == "GPU" else "CPU",
        outcome=outcome,
        reason=reason,
        speedup_interval=None if comparison is None else comparison.speedup.interval,
        repeats_to_settle=settle,
        noise_floor=noise_floor,
        confidence=rules.confidence,
        gpu_measured=comparison is not None,
        gpu=gpu,
        threshold=threshold,
        fastest_cpu_path=best,
        fastest_cpu_epoch=FastestEpoch(
            **CpuConfiguration.of(fastest),
            flop_3x=flop,
            flop_per_s_3x=flop / fastest.epoch_s.point,
            figures=figures.source,
        ),
        fastest_cpu_ties=ties,
        scaling=_undecided_if(scaling, trust),
        memory=memory_check(
            figures, max(r.batch_size for r in cpu_train), rows, host_memory_bytes, device_memory_bytes(probe)
        ),
        comparison=comparison,
        trust=trust,
    )


def _undecided_if(scaling: StepScaling | None, trust: RunTrust | None) -> StepScaling | None:
    """The step-time growth, undecided in a contaminated run: its interval rests on the flagged jobs."""
    if scaling is None or trust is None or not trust.contaminated:
        return scaling
    return dataclasses.replace(scaling, growth="undecided", overhead_bound=False)
