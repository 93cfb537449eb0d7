"""REPORT.md: the decision sheet a person can archive as a lab report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accel_choice.analyze.stats import NoiseRules
from accel_choice.analyze.timing_plan import Narrowing
from accel_choice.io import paths
from accel_choice.records.cost import CostTable
from accel_choice.records.decision import DataTable, Decision, TheoryTable
from accel_choice.records.environment import EnvironmentReport
from accel_choice.records.loads import LoadCell, TransferTable, VisibleDevices
from accel_choice.records.northstar import GradientVariance, SeedLimits
from accel_choice.records.time_to_target import TimeToTarget
from accel_choice.records.breakeven import BreakEvenTable
from accel_choice.records.planner import CostModelTable, FlopCheck, Scenario
from accel_choice.records.resources import ResourceTable
from accel_choice.records.scale import ScaleJob, ScaleTable, StepRate
from accel_choice.records.sentinel import SentinelSummary
from accel_choice.records.timing_plan import TimingPlan
from accel_choice.records.training import NonFiniteRun, TrainingCell
from accel_choice.records.fullpath import FullPathRow
from accel_choice.render import archive, cost, data, gpu_checks, noise, northstar, planner, scale, theory, timing_plan
from accel_choice.render import decision as decision_words
from accel_choice.render import decision_sheet
from accel_choice.render.formatting import cell_flags, ms, number, table


@dataclass(frozen=True)
class ReportInputs:
    """Everything REPORT.md shows: the records of the run, and the few settings it names."""

    decision: Decision
    environment: EnvironmentReport
    data: DataTable
    theory: TheoryTable
    train_table: Sequence[TrainingCell]  # CPU cells, then GPU cells when a GPU was measured
    non_finite: Sequence[NonFiniteRun]
    load_table: Sequence[LoadCell]
    seed: int
    noise: NoiseRules
    accelerator: str = "auto"
    probe: VisibleDevices | None = None  # what the device probe saw
    transfers: TransferTable | None = None  # aggregated transfer timings, when a GPU was measured
    selection: TimeToTarget | None = None  # time-to-target result with per-run rows
    seed_limits: SeedLimits | None = None
    gradient_variance: GradientVariance | None = None
    resources: ResourceTable | None = None  # tables/resources.json
    cost_model: CostModelTable | None = None  # tables/cost_model.json
    break_even: BreakEvenTable | None = None  # tables/break_even.json
    flop_check: FlopCheck | None = None  # tables/flop_check.json
    scenario: Scenario | None = None  # tables/scenario.json
    cost: CostTable | None = None  # tables/cost.json, where cost.per_hour is set
    scale: ScaleTable | None = None  # tables/scale.json, where scale.enabled
    scale_jobs: Sequence[ScaleJob] = ()  # timing/scale/{format}.json
    scale_steps: Sequence[StepRate] = ()  # timing/scale/step.{device}.json
    provenance: dict[str, Any] | None = None  # workflow commit and the invocation that made this report
    sentinels: Sequence[tuple[str, SentinelSummary]] = ()  # ("CPU", the CPU table's sentinel), then the GPU's
    plans: Sequence[TimingPlan] = ()  # timing/plan/round*.json, where timing.budget_s is set
    # A clean run without a plan whose widest tie or growth passes timing.target: what narrowing it would take.
    narrowing: Narrowing | None = None


def _cpu_section(train_table: Sequence[TrainingCell]) -> str:
    train_table = [r for r in train_table if r.device == "cpu"]
    level = f"{train_table[0].confidence:.0%}" if train_table else ""  # the tables' aggregate.confidence
    rows = [
        (
            r.batch_size,
            r.loader + (" (compiled)" if r.compiled else ""),
            r.repeats,
            r.steps,
            ms(r.epoch_s.point),
            f"{ms(r.epoch_s.low)}–{ms(r.epoch_s.high)}",
            f"{ms(r.epoch_s_min)}–{ms(r.epoch_s_max)}",
            f"{r.samples_per_s.point:,.0f}",
            f"{r.step_us:.0f}",
            ms(r.eval_s.point),
            versus_fastpath(r),
            f"{r.mean_train_loss_median:.4f}",
            r.threads,
            cell_flags(r),
        )
        for r in train_table
    ]
    return (
        "## CPU baseline: one training epoch (ms, geometric mean of the jobs' median epochs)\n\n"
        + table(
            (
                "B",
                "loader",
                "repeats",
                "steps",
                "epoch",
                f"{level} interval".lstrip(),
                "jobs min–max",
                "samples/s",
                "µs/step",
                "eval",
                "vs fast path",
                "train loss",
                "threads",
                "flag",
            ),
            rows,
        )
        + (
            "\n\n`epoch` is the geometric mean of the jobs' median epochs; `interval` its "
            f"{level} t interval on the logarithms of the job medians (the jobs are the repeats: the machine's drift "
            "between jobs is in it; docs/statistics.md shows its coverage); `jobs min–max` the fastest and slowest "
            "job's median. `vs fast path` is paired (both loaders ran in the same jobs: the per-job ratio) and says "
            "slower or faster only when its whole interval lies beyond 1 ± the run's noise floor."
            "\n\nEvery record passed the invariants samples == n (partial last batch included) and steps == ⌈n/B⌉; "
            "samples_per_s == samples / epoch_s holds by construction (a record stores its raw epochs, and both are "
            "read from them). Both loaders see identical batches (one seeded permutation), "
            "so `vs fast path` is the DataLoader's per-sample Python overhead alone"
            + (
                "; the final weights were bitwise identical across loaders in every job."
                if all(r.same_final_weights_across_variants for r in train_table)
                else "; **the final weights differed between loaders in some job** — see the records."
            )
        )
    )


def versus_fastpath(cell: TrainingCell) -> str:
    """Render the cell's epoch over the fast path's with its paired interval and what it shows."""
    if cell.epoch_s_over_fastpath is None or cell.loader == "fastpath":
        return ""
    words = {"slower": "slower", "faster": "faster", "no_difference": "no measurable difference"}
    ratio = cell.epoch_s_over_fastpath
    return f"{ratio.point:.2f}× ({ratio.low:.2f}–{ratio.high:.2f}), {words[cell.versus_fastpath or 'no_difference']}"


def _full_path_section(rows: Sequence[FullPathRow]) -> str:
    body = [
        (
            r.device,
            r.format,
            r.precision,
            r.placement,
            r.loader + (" (compiled)" if r.compiled else ""),
            r.batch_size,
            r.threads,
            ms(r.load_s),
            ms(r.convert_s),
            ms(r.transfer_s),
            ms(r.train_s),
            ms(r.eval_s),
            ms(r.total_s),
            f"{ms(r.total_min_s)}–{ms(r.total_max_s)}",
            ms(r.startup_s),
            f"{r.train_share:.0%}",
            "**noisy**" if r.noisy else "",
        )
        for r in rows
    ]
    return (
        "## Full path per epoch on the benchmark matrix (ms, sums of medians)\n\n"
        + table(
            (
                "device",
                "format",
                "precision",
                "placement",
                "loader",
                "B",
                "threads",
                "load",
                "convert",
                "transfer",
                "train",
                "eval",
                "total",
                "total min–max",
                "fixed start-up",
                "train share",
                "flag",
            ),
            body,
        )
        + (
            "\n\n`total min–max` adds the training and evaluation (and transfer) minima and maxima to the load medians. "
            "`fixed start-up` is the timing jobs' one-off start, paid once per process, not per epoch: from before "
            "the first device call (on a GPU the runtime's context) to the end of the first training step, less a "
            "steady step."
        )
    )


def _gpu_section(inputs: ReportInputs) -> str:
    cells = {r.key: r for r in inputs.train_table if r.device != "cpu"}
    if not cells:
        return ""
    body = []
    for m in inputs.decision.gpu_memory:
        r = cells[m.key]
        body.append(
            (
                r.device,
                r.precision + (" + GradScaler" if r.grad_scaler else "") + (", compiled" if r.compiled else ""),
                r.placement,
                r.batch_size,
                r.repeats,
                ms(r.epoch_s.point),
                f"{ms(r.epoch_s.low)}–{ms(r.epoch_s.high)}",
                f"{ms(r.epoch_s_min)}–{ms(r.epoch_s_max)}",
                f"{r.samples_per_s.point:,.0f}",
                ms(r.eval_s.point),
                f"{m.peak_bytes:,}" if m.peak_bytes is not None else "n/a",
                f"{m.epoch_bytes:,}" if m.epoch_bytes is not None else "n/a",
                f"{m.bound_bytes:,}",
                f"{m.epoch_over_bound:.2f}" if m.epoch_over_bound is not None else "",
                cell_flags(r),
            )
        )
    text = (
        "## GPU training: one epoch (ms, geometric mean of the jobs' median epochs)\n\n"
        + table(
            (
                "device",
                "precision",
                "placement",
                "B",
                "repeats",
                "epoch",
                "interval",
                "jobs min–max",
                "samples/s",
                "eval",
                "peak bytes",
                "epoch bytes",
                "bound bytes",
                "epoch/bound",
                "flag",
            ),
            body,
        )
        + (
            "\n\nPeak: `torch.cuda.max_memory_allocated()` after `reset_peak_memory_stats()`: everything allocated, the "
            "cuBLAS workspace and whatever else the process holds included. Epoch: that peak less `memory_allocated()` "
            "when the epoch began, the epoch's own memory. "
            + (
                f"Bound: your model's parameters, gradients, buffers and optimizer state as counted (`{paths.MODEL_PROFILE}`) "
                "+ twice the forward hooks' activations (every leaf module's output) + the batch in use and the next "
                "+ the per-step loss buffer, and where the data live on the device the data, target and the shuffled "
                "index; epoch/bound well above 1 means the epoch holds something the counts do not (what backward "
                "saves from functional code outside any module; the caching allocator rounds each block up to 512 bytes)."
                if inputs.theory.figures == "counted"
                else "Bound: Adam fp32 4·P·4 + forward and backward activations "
                "(2 × forward) and backward's third hidden-size buffer + the batch in use and the next + the per-step loss "
                "buffer, and where the data live on the device the matrix and target and the shuffled index; epoch/bound well above 1 means the epoch holds something the formulas do "
                "not (the caching allocator rounds each block up to 512 bytes)."
            )
        )
        + decision_words.startup_line(list(cells.values()))
    )
    checks = gpu_checks.gpu_checks_section(list(cells.values()))
    if checks:
        text += "\n\n" + checks
    if inputs.transfers:
        t = inputs.transfers
        copies = [
            (
                c.what,
                c.direction.replace("_", " "),
                c.memory,
                f"{c.bytes:,}",
                f"{c.seconds.point * 1e6:.1f}",
                f"{c.seconds.low * 1e6:.1f}–{c.seconds.high * 1e6:.1f}",
                f"{c.seconds_min * 1e6:.1f}–{c.seconds_max * 1e6:.1f}",
                number(c.gb_per_s, ".2f"),
            )
            for c in t.copies
        ]
        pin = t.pin_memory_s_median
        text += (
            "\n\n## Transfers (measured on their own, synchronize before each clock read)\n\n"
            f"Context start-up (fixed cost): {t.context_startup_s.median * 1e3:.1f} ms median "
            f"({t.context_startup_s.min * 1e3:.1f}–{t.context_startup_s.max * 1e3:.1f} ms)"
            + (f"; pinning the matrix: {pin * 1e3:.2f} ms" if pin is not None else "")
            + ".\n\n"
            + table(
                ("what", "direction", "memory", "bytes", "µs (median)", "µs interval", "µs jobs min–max", "GB/s"),
                copies,
            )
        )
    comparison = decision_words.comparison_section(inputs.decision.verdict)
    if comparison:
        text += "\n\n" + comparison
    return text


def render(inputs: ReportInputs) -> str:
    verdict = inputs.decision.verdict
    cores = inputs.environment.quick.affinity_cores or inputs.environment.quick.logical_cores
    sections = [
        "# accel-choice: is a CPU enough for this training job?",
        data.warnings_banner(inputs.data),
        decision_words.headline(verdict),
        noise.accuracy_line(inputs.train_table, cores),
        timing_plan.plan_line(inputs.plans) or timing_plan.budget_hint(inputs.narrowing),
        planner.answer_lines(inputs.break_even),
        cost.cost_headline(inputs.cost),
        decision_sheet.sheet_section(inputs.decision.sheet, verdict.gpu, counted=inputs.theory.figures == "counted"),
        decision_words.reasons_section(verdict),
        _cpu_section(inputs.train_table),
        _gpu_section(inputs),
        _full_path_section(inputs.decision.full_path),
        cost.cost_section(inputs.cost),
        northstar.selection_section(inputs.selection),
        northstar.seed_section(inputs.seed_limits),
        northstar.gradient_variance_section(inputs.gradient_variance),
        data.load_section(inputs.load_table),
        theory.theory_section(inputs.theory),
        planner.flop_section(inputs.flop_check) if inputs.theory.figures == "formula" else "",  # the MLP's check
        planner.scenario_section(inputs.scenario),
        planner.planner_section(inputs.cost_model, inputs.break_even),
        scale.scale_section(inputs.scale, inputs.scale_jobs, inputs.scale_steps),
        data.data_section(inputs.data),
        noise.noise_floor_section(inputs.sentinels),
        timing_plan.plan_section(inputs.plans),
        noise.accuracy_section(inputs.train_table, cores),
        noise.flags_section(
            inputs.train_table, inputs.load_table, inputs.non_finite, inputs.decision.verdict.trust, inputs.noise
        ),
        data.environment_section(inputs.environment, inputs.probe, inputs.accelerator),
        archive.resources_section(inputs.resources),
        archive.provenance_section(inputs.provenance),
        f"## Reproduce\n\n`snakemake --cores 4` with the archived `{paths.CONFIG}` (seed {inputs.seed}). "
        f"Figure: `{paths.DECISION_PNG}` (and `.svg`). Tables: `{paths.TABLES}/*.csv` and `*.json`. "
        f"The textbook's exercise-2 shape: `{paths.EXERCISE2}`. Check that nothing was edited since the run: "
        f"`sha256sum --check --quiet {paths.MANIFEST}` inside this folder (no output means every file matches).",
    ]
    return "\n\n".join(section for section in sections if section) + "\n"
