"""REPORT.md: the decision sheet a person can archive as a lab report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accel_choice.analyze import decision, theory


@dataclass(frozen=True)
class ReportInputs:
    environment: dict[str, Any]  # the collect_env record (full_environment)
    datasets: Sequence[dict[str, Any]]  # generation metadata, each with an "export" record
    train_table: Sequence[dict[str, Any]]
    load_table: Sequence[dict[str, Any]]
    full_path_rows: Sequence[dict[str, Any]]
    non_finite: Sequence[dict[str, Any]]
    sheet: Sequence[dict[str, str]]
    verdict: dict[str, Any]
    widths: Sequence[int]
    rows: int
    batch_sizes: Sequence[int]
    bandwidth_gb_s: float
    seed: int
    noise_iqr_ratio: float
    outlier_factor: float
    probe: dict[str, Any] | None = None  # the device probe record
    transfers: dict[str, Any] | None = None  # aggregated transfer timings, when a GPU was measured
    accelerator: str = "auto"
    selection: dict[str, Any] | None = None  # time-to-target result with per-run rows
    seed_limits: dict[str, Any] | None = None
    gradient_variance: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None  # tables/resources.json
    cost_model: dict[str, Any] | None = None  # tables/cost_model.json
    break_even: dict[str, Any] | None = None  # tables/break_even.json
    flop_check: dict[str, Any] | None = None  # tables/flop_check.json
    scenario: dict[str, Any] | None = None  # tables/scenario.json
    provenance: dict[str, Any] | None = None  # workflow commit and the invocation that made this report


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def _environment_section(env: dict[str, Any], probe: dict[str, Any] | None, accelerator: str) -> str:
    quick = env["quick"]
    collected = env["collect_env"]
    workflow = quick["workflow"]
    commit = workflow["commit"] or "not a git checkout"
    if workflow["dirty"]:
        commit += " (uncommitted changes)"
    rows = [
        ("CPU", f"{quick['cpu_model']}, {quick['logical_cores']} logical cores ({quick['affinity_cores']} usable)"),
        ("OS", collected.get("os") or quick["os"]),
        ("Python", quick["python_version"]),
        ("torch", f"{quick['torch_version']} (CUDA build: {quick['cuda_compiled_version'] or 'none'})"),
        ("CUDA available", str(quick["is_cuda_available"])),
        ("GPU", ", ".join(quick["nvidia_gpu_models"]) or "none"),
        ("key packages", ", ".join(f"{k} {v}" for k, v in quick["packages"].items())),
        ("workflow commit when this record was taken", commit),
        ("accelerator setting", accelerator),
    ]
    if probe is not None:
        devices = "; ".join(f"{d['name']} (sm {d['capability']}, {d['total_memory_bytes'] / 2**30:.1f} GiB)" for d in probe["cuda_devices"])
        rows.append(("device probe", devices or ("MPS" if probe["mps_available"] else "no accelerator visible")))
    return "## Environment\n\n" + table(("", ""), rows) + (
        "\n\nThe complete `torch.utils.collect_env` record is `env/collect_env.txt`; every job's own record "
        "is inside its JSON output. Absolute times hold only for this machine; compare ratios within one run."
    )


def data_table(datasets: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per generated data set, for the report and for tables/data.csv."""
    return [
        {
            "dataset": meta["name"], "rows": meta["rows"], "features": len(meta["feature_columns"]),
            "positive_rate": meta["positive_rate"], "matrix_sha256": meta["matrix_sha256"],
            "parquet_bytes": meta["export"]["files"]["parquet"]["bytes"],
            "parquet_sha256": meta["export"]["files"]["parquet"]["sha256"],
            "csv_bytes": meta["export"]["files"]["csv"]["bytes"], "csv_sha256": meta["export"]["files"]["csv"]["sha256"],
        }
        for meta in datasets
    ]


def _data_section(datasets: Sequence[dict[str, Any]]) -> str:
    rows = [
        (r["dataset"], f"{r['rows']:,} × {r['features']}", f"{r['positive_rate']:.3f}", f"`{r['matrix_sha256'][:16]}…`",
         f"{r['parquet_bytes']:,}", f"{r['csv_bytes']:,}")
        for r in data_table(datasets)
    ]
    return "## Data\n\n" + table(("dataset", "rows × features", "positive rate", "sha256 of fp32 matrix", "Parquet bytes", "CSV bytes"), rows)


def _load_section(load_table: Sequence[dict[str, Any]]) -> str:
    rows = [
        (
            r["dataset"], r["format"], f"{r['file_bytes']:,}", _ms(r["read_s_median"]), _ms(r["to_pandas_s_median"]),
            _ms(r["to_numpy_s_median"]), _ms(r["to_torch_s_median"]), _ms(r["total_s_median"]),
            f"{_ms(r['total_s_min'])}–{_ms(r['total_s_max'])}", f"{r['mb_per_s']:.0f}", _flag(r),
        )
        for r in load_table
    ]
    return "## Load and convert (ms, medians over repeats)\n\n" + table(
        ("dataset", "format", "file bytes", "read", "to pandas", "to numpy fp32", "to torch", "total", "total min–max", "MB/s", "flag"),
        rows,
    ) + (
        "\n\n`to torch` is `torch.from_numpy`, which shares the numpy buffer: the copy is in `to numpy fp32`. "
        "Each stage is the median over repeats of the per-job median over passes; `total` is the median of the "
        "per-pass totals, so it need not equal the sum of the stage columns (the full-path table adds the stages)."
    )


def _flag(row: dict[str, Any]) -> str:
    flags = ["**noisy**: " + "; ".join(row["noise_reasons"])] if row["noisy"] else []
    if row.get("contaminated"):
        flags.append(f"**busy machine** in repeat(s) {', '.join(str(c['repeat']) for c in row['contaminated'])}")
    return "; ".join(flags)


def _cpu_section(train_table: Sequence[dict[str, Any]]) -> str:
    train_table = [r for r in train_table if r["device"] == "cpu"]
    rows = [
        (
            r["batch_size"], r["loader"], r["repeats"], r["steps"], _ms(r["epoch_s_median"]),
            f"{_ms(r['epoch_s_min'])}–{_ms(r['epoch_s_max'])}", f"{r['epoch_s_iqr_over_median']:.1%}",
            f"{r['samples_per_s']:,.0f}", f"{r['step_us_median']:.0f}", _ms(r["eval_s_median"]),
            f"{r['epoch_s_over_fastpath']:.2f}×" if r["epoch_s_over_fastpath"] else "",
            f"{r['mean_train_loss_median']:.4f}", ", ".join(map(str, r["threads"])),
            _flag(r),
        )
        for r in train_table
    ]
    return "## CPU baseline: one training epoch (ms, medians over repeats)\n\n" + table(
        ("B", "loader", "repeats", "steps", "epoch", "min–max", "IQR/median", "samples/s", "µs/step", "eval", "vs fast path",
         "train loss", "threads", "flag"),
        rows,
    ) + (
        "\n\nEvery record passed the invariants samples == n (partial last batch included), steps == ⌈n/B⌉ and "
        "samples_per_s == samples / epoch_s. Both loaders see identical batches (one seeded permutation), "
        "so `vs fast path` is the DataLoader's per-sample Python overhead alone"
        + ("; the final weights were bitwise identical across loaders in every job."
           if all(r["same_final_weights_across_variants"] for r in train_table)
           else "; **the final weights differed between loaders in some job** — see the records.")
    )


def _full_path_section(rows: Sequence[dict[str, Any]]) -> str:
    body = [
        (r["device"], r["format"], r["precision"], r["placement"], r["loader"], r["batch_size"], _ms(r["load_s"]),
         _ms(r["convert_s"]), _ms(r["transfer_s"]), _ms(r["train_s"]), _ms(r["eval_s"]), _ms(r["total_s"]),
         f"{_ms(r['total_min_s'])}–{_ms(r['total_max_s'])}", _ms(r["startup_s"]), f"{r['train_share']:.0%}",
         "**noisy**" if r["noisy"] else "")
        for r in rows
    ]
    return "## Full path per epoch on the benchmark matrix (ms, sums of medians)\n\n" + table(
        ("device", "format", "precision", "placement", "loader", "B", "load", "convert", "transfer", "train", "eval", "total",
         "total min–max", "fixed start-up", "train share", "flag"), body
    ) + (
        "\n\n`total min–max` adds the training and evaluation (and transfer) minima and maxima to the load medians. "
        "`fixed start-up` is the device runtime's one-off start (CUDA context), paid once per process, not per epoch."
    )


def _gpu_section(inputs: ReportInputs) -> str:
    rows = [r for r in inputs.train_table if r["device"] != "cpu"]
    if not rows:
        return ""
    body = []
    for r in rows:
        bound = decision.memory_bound_bytes(inputs.widths, r["batch_size"], inputs.rows if r["placement"] == "resident" else 0)
        peak = r["peak_memory_bytes_max"]
        body.append((
            r["device"], r["precision"] + (" + GradScaler" if r["grad_scaler"] else ""), r["placement"], r["batch_size"],
            r["repeats"], _ms(r["epoch_s_median"]), f"{_ms(r['epoch_s_min'])}–{_ms(r['epoch_s_max'])}",
            f"{r['samples_per_s']:,.0f}", _ms(r["eval_s_median"]), f"{peak:,}" if peak is not None else "n/a", f"{bound:,}",
            f"{peak / bound:.2f}" if peak else "", _flag(r),
        ))
    text = "## GPU training: one epoch (ms, medians over repeats)\n\n" + table(
        ("device", "precision", "placement", "B", "repeats", "epoch", "min–max", "samples/s", "eval", "peak bytes",
         "bound bytes", "peak/bound", "flag"), body
    ) + (
        "\n\nBound: Adam fp32 4·P·4 + forward and backward activations (2 × forward) + the resident matrix where the data "
        "live on the device. Peak: `torch.cuda.max_memory_allocated()` after `reset_peak_memory_stats()`, which also counts "
        "the allocator's workspace (e.g. cuBLAS), so a peak above this bound is expected and says what the bound leaves out."
    )
    if inputs.transfers:
        t = inputs.transfers
        copies = [(c["what"], c["direction"].replace("_", " "), c["memory"], f"{c['bytes']:,}", f"{c['seconds_median'] * 1e6:.1f}",
                   f"{c['seconds_min'] * 1e6:.1f}–{c['seconds_max'] * 1e6:.1f}", f"{c['gb_per_s']:.2f}") for c in t["copies"]]
        pin = t["pin_memory_s_median"]
        text += (
            "\n\n## Transfers (measured on their own, synchronize before each clock read)\n\n"
            f"Context start-up (fixed cost): {t['context_startup_s']['median'] * 1e3:.1f} ms median "
            f"({t['context_startup_s']['min'] * 1e3:.1f}–{t['context_startup_s']['max'] * 1e3:.1f} ms)"
            + (f"; pinning the matrix: {pin * 1e3:.2f} ms" if pin is not None else "") + ".\n\n"
            + table(("what", "direction", "memory", "bytes", "µs (median)", "µs min–max", "GB/s"), copies)
        )
    comparison = inputs.verdict.get("comparison")
    if comparison:
        low, high = comparison["speedup_range"]
        text += (
            "\n\n## CPU vs GPU, full path of one epoch\n\n"
            + table(("", "CPU", "GPU"), [
                ("best variant", decision.describe(comparison["cpu"]), decision.describe(comparison["gpu"])),
                ("full path, ms", _ms(comparison["cpu"]["total_s"]), _ms(comparison["gpu"]["total_s"])),
                ("spread, ms", f"{_ms(comparison['cpu']['total_min_s'])}–{_ms(comparison['cpu']['total_max_s'])}",
                 f"{_ms(comparison['gpu']['total_min_s'])}–{_ms(comparison['gpu']['total_max_s'])}"),
                ("fixed start-up, ms", "0", _ms(comparison["gpu"]["startup_s"])),
                ("speedup CPU/GPU", "", f"{comparison['speedup']:.2f}× ({low:.2f}–{high:.2f}×); threshold {comparison['threshold']:g}×"),
            ])
        )
    return text


def theory_table(train_table: Sequence[dict[str, Any]], widths: Sequence[int], rows: int, batch_sizes: Sequence[int],
                 bandwidth_gb_s: float) -> list[dict[str, Any]]:
    """The theoretical estimates per batch size, with the achieved rate of the measured fast-path epoch."""
    measured = {(r["batch_size"], r["loader"]): r for r in train_table if r["device"] == "cpu"}
    table_rows = []
    for b in batch_sizes:
        fast = measured.get((b, "fastpath"))
        table_rows.append({
            "batch_size": b, "steps_per_epoch": theory.steps_per_epoch(rows, b),
            "forward_flop_per_batch": theory.forward_flops(b, widths),
            "forward_backward_flop_per_batch_3x": theory.forward_backward_flops(b, widths),
            "forward_backward_flop_per_batch_counted": theory.forward_backward_flops_counted(b, widths),
            "forward_backward_flop_per_epoch_3x": theory.forward_backward_flops(rows, widths),
            "forward_activation_bytes_per_batch": theory.activation_bytes(b, widths),
            "batch_transfer_s_assumed": theory.transfer_seconds(theory.input_bytes(b, widths[0]), bandwidth_gb_s),
            "achieved_gflop_per_s_3x": theory.forward_backward_flops(rows, widths) / fast["epoch_s_median"] / 1e9
            if fast else None,
        })
    return table_rows


def _theory_section(inputs: ReportInputs) -> str:
    widths, n = inputs.widths, inputs.rows
    p = theory.param_count(widths)
    rows = [
        (r["batch_size"], r["steps_per_epoch"], f"{r['forward_flop_per_batch']:,}", f"{r['forward_backward_flop_per_batch_3x']:,}",
         f"{r['forward_backward_flop_per_batch_counted']:,}", f"{r['forward_backward_flop_per_epoch_3x'] / 1e6:.1f}",
         f"{r['forward_activation_bytes_per_batch']:,}", f"{r['batch_transfer_s_assumed'] * 1e6:.2f}",
         _number(r["achieved_gflop_per_s_3x"], ".2f", ""))
        for r in theory_table(inputs.train_table, widths, n, inputs.batch_sizes, inputs.bandwidth_gb_s)
    ]
    matrix_bytes = theory.input_bytes(n, widths[0])
    return (
        "## Theoretical estimates (computed, not measured)\n\n"
        f"Model {' → '.join(map(str, widths))}: P = {p:,} parameters; Adam fp32 bound 4·P·4 = "
        f"{theory.adam_fp32_bytes(widths):,} bytes. Benchmark matrix {n:,} × {widths[0]} fp32 = {matrix_bytes:,} bytes: "
        f"{theory.transfer_seconds(matrix_bytes, inputs.bandwidth_gb_s) * 1e3:.3f} ms to transfer at "
        f"{inputs.bandwidth_gb_s:g} GB/s (assumed effective bandwidth, `report.bandwidth_gb_s`).\n\n"
        + table(
            ("B", "steps/epoch", "fwd FLOP/batch", "fwd+bwd FLOP/batch (3×)", "fwd+bwd counted*", "fwd+bwd MFLOP/epoch",
             "fwd activation bytes/batch", "batch transfer µs", "achieved GFLOP/s by the 3× rule (CPU fast path, measured epoch)"),
            rows,
        )
        + "\n\n*What a FLOP counter sees: the first layer computes no input gradient, so backward is below 2× forward. "
        "Backward activations are of a similar size to the forward ones (about 2× in total)."
    )


def _selection_section(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    body = [
        (r["device"], r["batch_size"], r["best_epoch"], f"{r['stopped_epoch']}{' (early)' if r['stopped_early'] else ''}",
         f"{r['best_val_loss']:.4f}", f"{r['seconds']:.2f}" if r["reached"] else "not reached",
         r["updates"] if r["reached"] else "", f"{r['test_log_loss']:.4f}", f"{r['test_roc_auc']:.3f}",
         f"{r['test_brier']:.4f}", f"{r['test_accuracy_at_0_5']:.3f}", f"{r['test_base_rate']:.3f}",
         f"{r['test_base_rate_log_loss']:.4f}")
        for r in sorted(result["rows"], key=lambda r: (r["device"], r["batch_size"]))
    ]
    return (
        "## Northstar model selection: early stopping, test once, time to target\n\n"
        f"Target: validation log loss ≤ {result['target_val_loss']:.4f} (within {result['within']:.0%} of the best, "
        f"{result['best_val_loss']:.4f}). **Fastest to target: {result['fastest'] or 'none reached it'}.**\n\n"
        + table(("device", "B", "best epoch", "stopped", "best val loss", "s to target", "updates to target",
                 "test log loss", "test AUC", "test Brier", "test acc@0.5", "test base rate", "base-rate log loss"), body)
        + "\n\nThe test split was evaluated once per run, after restoring the best checkpoint "
        "(`torch.load(..., weights_only=True)`); standardisation statistics come from the training split only. "
        "Curves: `figures/northstar_curves.png`; TensorBoard: `tensorboard --logdir results/northstar/tensorboard`."
    )


def seed_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The seed-limits summary as rows: one per test metric over the seeds, plus the two checks."""
    numeric, env = result["numeric"], result["environmental"]

    def row(check: str, value: Any = None, **summary: Any) -> dict[str, Any]:
        return {"check": check, "value": value, "seeds": len(result["seeds"]), "batch_size": result["batch_size"],
                **{k: summary.get(k) for k in ("mean", "std", "min", "max")}}

    rows = [row(f"statistical: test {metric}", **summary) for metric, summary in result["statistical"].items()]
    rows.append(row(f"numeric: seed {numeric['seed']} twice, identical weights", numeric["identical_weights"]))
    rows.append(row(f"numeric: seed {numeric['seed']} twice, identical loss curves", numeric["identical_loss_curves"]))
    rows.append(row(f"environmental: keys differing over {env['records_compared']} records",
                    "; ".join(env["differences"]) or "none"))
    return rows


def _seed_section(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    numeric, stats, env = result["numeric"], result["statistical"], result["environmental"]
    yes = {True: "yes", False: "**no**"}
    differences = env["differences"]
    env_text = (
        "none differ" if not differences
        else "; ".join(f"`{key}`: {', '.join(map(str, values))}" for key, values in differences.items())
    )
    rows = [
        ("numeric", f"seed {numeric['seed']} trained twice on this machine: identical weights {yes[numeric['identical_weights']]}, "
                    f"identical loss curves {yes[numeric['identical_loss_curves']]}"),
        ("statistical", f"{len(result['seeds'])} seeds at B={result['batch_size']}: test log loss "
                        f"{stats['log_loss']['mean']:.4f} ± {stats['log_loss']['std']:.4f} "
                        f"({stats['log_loss']['min']:.4f}–{stats['log_loss']['max']:.4f}); AUC "
                        f"{stats['roc_auc']['mean']:.3f} ± {stats['roc_auc']['std']:.3f} "
                        f"({stats['roc_auc']['min']:.3f}–{stats['roc_auc']['max']:.3f})"),
        ("environmental", f"{env['records_compared']} environment records compared: {env_text}"),
    ]
    return "## Seed limits (measured)\n\n" + table(("reproducibility", "result"), rows) + (
        "\n\nA seed promises the same numbers only with the same environment record; across machines, library "
        "versions or thread counts, compare the statistical row, not bits."
    )


def _gradient_variance_section(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    body = [(r["batch_size"], f"{r['measured']:.4g}", f"{r['predicted']:.4g}", f"{r['predicted_iid']:.4g}",
             f"{r['ratio']:.3f} ± {r['ratio_2se']:.3f}") for r in result["table"]]
    return (
        "## Gradient variance vs batch size (the 1/B rule, measured)\n\n"
        f"At the {result['parameter_point']}, over {result['draws']} random mini-batches per B drawn without replacement from "
        f"N = {result['rows']:,} rows (P = {result['parameters']:,}); σ² = {result['sigma2']:.4g}.\n\n"
        + table(("B", "measured E‖g_B − G‖²", "predicted σ²/B·(N−B)/(N−1)", "σ²/B (independent)", "measured/predicted ± 2 SE"), body)
        + "\n\nFigure: `figures/gradient_variance.png` (log–log)."
    )


def _sheet_section(sheet: Sequence[dict[str, str]]) -> str:
    return "## GPU decision sheet (section 28.3.5)\n\n" + table(
        ("step", "what", "status", "evidence"), [(s["step"], s["title"], s["status"], s["evidence"]) for s in sheet]
    )


def _scaler_words(row: dict[str, Any]) -> str:
    if row["precision"] != "fp16":
        return ""
    return " + GradScaler" if row["grad_scaler"] else " without GradScaler"


def _flags_section(inputs: ReportInputs) -> str:
    noisy = [f"- training {r['device']} {r['precision']} {r['placement']} B={r['batch_size']} {r['loader']}: "
             + "; ".join(r["noise_reasons"]) for r in inputs.train_table if r["noisy"]]
    noisy += [f"- load {r['dataset']} {r['format']}: " + "; ".join(r["noise_reasons"]) for r in inputs.load_table if r["noisy"]]
    contaminated = [
        f"- training {r['device']} {r['precision']} {r['placement']} B={r['batch_size']} {r['loader']}, repeat {c['repeat']}: "
        + "; ".join(c["reasons"]) for r in inputs.train_table for c in r.get("contaminated", [])
    ] + [
        f"- load {r['dataset']} {r['format']}, repeat {c['repeat']}: " + "; ".join(c["reasons"])
        for r in inputs.load_table for c in r.get("contaminated", [])
    ]
    non_finite = [
        f"- {r['device']} {r['precision']}{_scaler_words(r)} {r['placement']} "
        f"B={r['batch_size']} {r['loader']} repeat {r['repeat']}: first non-finite loss at step {r['nonfinite_step']}"
        for r in inputs.non_finite
    ]
    loads = [r["loadavg_max"] for r in inputs.train_table] or [0.0]
    text = (
        "## Measurement conditions and flags\n\n"
        f"A cell is flagged noisy when IQR/median > {inputs.noise_iqr_ratio:.0%} or a repeat exceeds "
        f"{inputs.outlier_factor:g}× the median; a repeat is flagged as taken on a busy machine when other processes "
        "used more than the configured share of a core during its job (from /proc/stat) or the load average rose. "
        "Highest 1-minute load average seen around a training measurement: "
        f"{max(loads):.2f}.\n\n"
    )
    text += ("Flagged cells (kept in the tables, not averaged away):\n" + "\n".join(noisy)) if noisy else "No cell was flagged noisy."
    text += (
        "\n\nMeasurements taken while the machine was busy (kept, flagged; compare with care):\n" + "\n".join(contaminated)
        if contaminated else "\n\nNo measurement shared the machine with another busy process (foreign CPU from /proc/stat, load average)."
    )
    if non_finite:
        text += "\n\nNon-finite runs (NaN/inf loss or weights), excluded from the medians:\n" + "\n".join(non_finite)
    return text


def render(inputs: ReportInputs) -> str:
    v = inputs.verdict
    sections = [
        "# accel-choice: is a CPU enough for this training job?",
        f"**Verdict: {v['device']}.** {v['claim']}\n\n" + "\n".join(f"- {reason}" for reason in v["reasons"]),
        _sheet_section(inputs.sheet),
        _cpu_section(inputs.train_table),
        _gpu_section(inputs),
        _full_path_section(inputs.full_path_rows),
        _selection_section(inputs.selection),
        _seed_section(inputs.seed_limits),
        _gradient_variance_section(inputs.gradient_variance),
        _load_section(inputs.load_table),
        _theory_section(inputs),
        _flop_section(inputs.flop_check),
        _scenario_section(inputs.scenario),
        _planner_section(inputs.cost_model, inputs.break_even),
        _data_section(inputs.datasets),
        _flags_section(inputs),
        _environment_section(inputs.environment, inputs.probe, inputs.accelerator),
        _resources_section(inputs.resources),
        _provenance_section(inputs.provenance),
        f"## Reproduce\n\n`snakemake --cores 4` with the archived `config.yaml` (seed {inputs.seed}). "
        "Figure: `figures/decision.png` (and `.svg`). Tables: `tables/*.csv` and `*.json`. "
        "The textbook's exercise-2 shape: `s111_cpu_results.json`. Check that nothing was edited since the run: "
        "`sha256sum --check --quiet MANIFEST.sha256` inside this folder (no output means every file matches).",
    ]
    return "\n\n".join(section for section in sections if section) + "\n"


def _number(value: float | None, fmt: str, empty: str = "—") -> str:
    return empty if value is None else format(value, fmt)


def _flop_section(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    rows = [
        (r["batch_size"], f"{r['counted_forward_per_batch']:,}", f"{r['counted_backward_per_batch']:,}",
         f"{r['counted_per_batch']:,}", f"{r['formula_3x_per_batch']:,}", f"{r['counted_over_3x']:.3f}",
         _ms(r["epoch_s"]) if r["epoch_s"] is not None else "—",
         _number(r["gflop_per_s_3x"], ".3f"), _number(r["gflop_per_s_counted"], ".3f"))
        for r in result["table"]
    ]
    return (
        "## FLOP formula against torch's FLOP counter\n\n"
        "`torch.utils.flop_counter.FlopCounterMode` run on one forward and one backward pass of the actual model, "
        "against the formula (forward 2·B·Σ d_in·d_out; forward + backward ≈ 3× forward). Achieved GFLOP/s: FLOP of "
        "the whole epoch (the partial last batch counted exactly) over the measured median CPU fast-path epoch.\n\n"
        + table(("B", "counted fwd/batch", "counted bwd/batch", "counted total", "3× formula", "counted / 3×",
                 "epoch ms (measured)", "GFLOP/s by 3×", "GFLOP/s by counter"), rows)
        + "\n\nWhy the counter shows less than 3×: backward costs two matrix products per layer - the weight "
        "gradient and the input gradient - so ≈ 2× forward. The first layer's input is the data, which needs no "
        "gradient, so autograd computes only its weight gradient: that layer's forward + backward is 2× its forward, "
        "not 3×, and the counted total is 3× forward − 2·B·d·h. The counter also leaves out what is not a "
        "matrix product (bias adds, ReLU, the loss, Adam's update), which the 3× rule of thumb silently includes "
        "or ignores. Neither count is time: the achieved rate also carries the per-step overhead that the cost model "
        "below separates from the compute."
    )


def _scenario_section(plan: dict[str, Any] | None) -> str:
    if not plan:
        return ""

    def fits(answer: bool | None) -> str:
        return "unknown" if answer is None else ("yes" if answer else "**no**")

    def gb(n: int | None) -> str:
        return "unknown" if n is None else f"{n / 1e9:,.1f} GB"

    modelled = plan.get("modelled") or {}
    rows = [
        ("input bytes n·d·4", f"{plan['input_bytes']:,} B = {plan['input_bytes'] / 1e9:g} GB"),
        ("fits in host memory", f"{fits(plan['fits_in_host_memory'])} (this machine: {gb(plan['host_memory_bytes'])})"),
        ("fits in GPU memory", f"{fits(plan['fits_in_gpu_memory'])} ({gb(plan['gpu_memory_bytes'])}, "
                               f"{plan.get('gpu_memory_source', 'assumed')})"),
        ("parameters P", f"{plan['params']:,}"),
        ("Adam fp32 bound 4·P·4", f"{plan['adam_fp32_bytes']:,} B ≈ {plan['adam_fp32_bytes'] / 1024:.0f} KiB"),
        (f"activations of one batch (B = {plan['batch_size']})",
         f"input {plan['batch_input_bytes']:,} + hidden {plan['batch_hidden_bytes']:,} + logits "
         f"{plan['batch_logit_bytes']:,} = {plan['forward_activation_bytes']:,} B forward; ≈ "
         f"{plan['forward_backward_activation_bytes']:,} B with backward"),
        (f"transfer at {plan['bandwidth_gb_s']:g} GB/s (assumed)", f"{plan['transfer_s']:.1f} s per pass over the input"),
        ("steps per epoch", f"{plan['steps_per_epoch']:,}"),
        ("FLOP per epoch (3× rule / executed, counted)",
         f"{plan['flop_per_epoch_3x']:.3e} / {plan['flop_per_epoch_counted']:.3e}"),
    ]
    if modelled:
        rows += [
            ("CPU epoch (modelled, extrapolated)", f"{modelled['cpu_epoch_s']:,.1f} s"),
            (f"GPU epoch, data resident (modelled, GPU {modelled['gpu_model_source']})", f"{modelled['gpu_epoch_s_resident']:,.1f} s"),
            ("GPU epoch, input copied every epoch (modelled)", f"{modelled['gpu_epoch_s_streamed']:,.1f} s"),
        ]
    stream = "must be streamed" if plan["must_stream"] else "can sit whole in memory"
    return (
        f"## Planner: the scale scenario (exercise 4; computed, not measured)\n\n"
        f"n = {plan['rows']:,} rows, d = {plan['features']}, model {' → '.join(map(str, plan['widths']))}, "
        f"B = {plan['batch_size']} (config `planner.scenario`). The input {stream}.\n\n"
        + table(("quantity", "value"), rows)
        + "\n\nBefore claiming a speedup at this size, measure: " + "; ".join(plan["to_measure"]) + ". "
        "The modelled epochs extrapolate the fitted cost model far beyond the measured grid; read them as an order of "
        "magnitude. They assume the input is already in memory: no term reads it from disk, although "
        + ("here it does not fit in host memory." if plan["fits_in_host_memory"] is False else "at this size loading may dominate.")
    )


def _planner_section(cost_model: dict[str, Any] | None, break_even: dict[str, Any] | None) -> str:
    if not cost_model or not break_even:
        return ""
    models = [
        (m["device"], m["source"], f"{m['seconds_per_step'] * 1e6:.1f}", _number(m["gflop_per_s"], ".2f", "dropped"),
         _number(m["gb_per_s"], ".2f", "dropped"), m["points"] or "—", _number(m["r2"], ".4f"),
         _number(m["median_abs_rel_error"], ".1%"), _number(m["max_abs_rel_error"], ".1%"),
         _number(m["loo_median_abs_rel_error"], ".1%"))
        for m in cost_model["models"]
    ]
    warnings = [f"- {m['device']}: {m['warning']}" for m in cost_model["models"] if m.get("warning")]
    verdicts = []
    for s in break_even["summary"]:
        if s["break_even"] is not None:
            where = f"GPU faster from {s['axis']} ≈ {s['break_even']:,.0f}"
        elif s["gpu_always_faster"]:
            where = "GPU faster over the whole range"
        elif s.get("gpu_faster_until") is not None:
            where = f"GPU faster only up to {s['axis']} = {s['gpu_faster_until']:,} (grid value)"
        else:
            where = "CPU faster over the whole range"
        verdicts.append((s["axis"], s["placement"], where))
    points = cost_model["points"]
    noisy = sum(1 for p in points if p["noisy"])
    busy = sum(1 for p in points if p.get("busy_repeats"))
    assumed = break_even["gpu_model_source"] == "assumed"
    return (
        "## Planner: cost model and break-even (modelled)\n\n"
        "Epoch time ≈ steps · (per-step overhead) + FLOP / (sustained FLOP/s) + bytes moved / (bandwidth), with the "
        "FLOP the matrix products execute (the counter's count, see above) and the bytes of `costmodel.work`, fitted per "
        "device by non-negative least squares on relative errors, to the planner's timed grid and the benchmark's "
        "fast-path cells (`tables/cost_model.json` holds every point and residual). A term the fit dropped is "
        "marked \"dropped\". Quote the leave-one-out error: each point predicted by a fit without its workload "
        f"(its grid and benchmark cells held out together). The CPU rates hold for {cost_model.get('threads', 1)} torch "
        f"thread(s) (`timing.threads`). Points: {len(points)}; flagged noisy: {noisy}; with a repeat measured while "
        f"the machine was busy: {busy}. All are kept in the fit and listed in the JSON.\n\n"
        + table(("device", "source", "µs per step", "sustained GFLOP/s", "GB/s", "points", "R²", "median |error|",
                 "max |error|", "leave-one-out median |error|"), models)
        + ("\n\n" + "\n".join(warnings) if warnings else "")
        + "\n\nGrowing the benchmark workload along one axis at a time (`figures/break_even.png`; lines modelled, "
        f"markers measured). A training job of {cost_model['epochs']} epochs (`planner.epochs`) is compared: the GPU "
        f"pays its start-up ({cost_model['gpu_startup_s']:.2f} s, {cost_model['gpu_startup_source']}) once, and "
        f"host→device copies at {cost_model['host_to_device_gb_s']:.1f} GB/s ({cost_model['host_to_device_source']}"
        f"{', `report.bandwidth_gb_s`' if cost_model['host_to_device_source'] == 'assumed' else ''}) "
        "once for resident data or every epoch when streamed:\n\n"
        + table(("axis", "GPU placement", "break-even (modelled)"), verdicts)
        + ("\n\n**No GPU was measured: the GPU side is the configured assumption (`planner.gpu_assumed`), not a "
           "measurement, and so is every break-even above.**" if assumed else "")
    )


def _resources_section(result: dict[str, Any] | None) -> str:
    if not result:
        return ""
    rows = [
        (r["rule"], r["jobs"], f"{r['process_wall_total_s']:.1f}", _number(r["process_wall_median_s"], ".2f"),
         _number(r["body_wall_median_s"], ".2f"), _number(r["outside_body_median_s"], ".2f"),
         _number(r["max_rss_mb_sampled"], ".0f"), r["jobs_without_rss_sample"], _number(r["peak_rss_mb_kernel"], ".0f"))
        for r in result["rules"]
    ]
    return (
        "## Resources per rule (Snakemake `benchmark:` beside the in-script timings)\n\n"
        + table(("rule", "jobs", "process wall total s", "process wall median s", "script body median s",
                 "outside the body s", "max RSS MiB (sampled)", "jobs without an RSS sample", "peak RSS MiB (kernel)"), rows)
        + "\n\nWhich to trust for what: the `benchmark:` wall time is the whole process - interpreter start, imports "
        "and Snakemake's script preamble (the \"outside the body\" column) - so use it for what a job costs the scheduler "
        "and for sizing cluster requests. Its memory is sampled (first every 0.5 s, later every 30 s), so a short job "
        "can have no sample or a maximum below its real peak; the kernel's peak RSS (getrusage) does not miss. The "
        "measurements of this report are the in-script `perf_counter` timings around each timed section: the "
        "directive cannot separate warm-up, data loading and the epoch, and includes the overhead above."
    )


def _provenance_section(provenance: dict[str, Any] | None) -> str:
    if not provenance:
        return ""
    workflow = provenance.get("workflow") or {}
    commit = workflow.get("commit") or "unknown (not a git checkout)"
    invocation = provenance.get("invocation") or {}
    rows = [
        ("workflow commit", f"`{commit}`" + (" with uncommitted changes" if workflow.get("dirty") else "")),
        ("Snakemake", invocation.get("snakemake_version") or "unknown"),
        ("command line", f"`{invocation['command_line']}`" if invocation.get("command_line") else "unknown"),
        ("working directory", invocation.get("working_directory") or "unknown"),
        ("started", invocation.get("started") or "unknown"),
        ("host", invocation.get("host") or "unknown"),
    ]
    commits = provenance.get("record_commits") or {}
    command_lines = provenance.get("record_command_lines") or {}
    rows += [("workflow commits in the records", "; ".join(f"`{c}`: {n}" for c, n in commits.items()) or "none"),
             ("command lines in the records", "; ".join(f"`{c}`: {n}" for c, n in command_lines.items()) or "none")]
    warning = ("\n\n**Warning: the records come from more than one version of the workflow (or from uncommitted "
               "changes); re-run from a clean checkout before archiving.**" if len(commits) > 1 else "")
    return (
        "## Provenance\n\n" + table(("", ""), rows) + warning
        + "\n\nThe first rows are the invocation that wrote this report; every record also carries the commit and "
        "the command line of the invocation that measured it, counted above over the records this configuration "
        "made (`provenance.json` repeats the count over the finished folder). `MANIFEST.sha256` vouches for the "
        "files this configuration made and for nothing else: files in `results/` that it did not make (an earlier "
        "configuration's records, say) are listed in `provenance.json` under `files.not_made_by_this_configuration`. "
        "`workflow/scripts/verify_results.py results` checks both and names anything added since."
    )
