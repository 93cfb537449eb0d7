"""REPORT.md: the decision sheet a person can archive as a lab report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import decision, theory


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
        ("workflow commit", commit),
        ("accelerator setting", accelerator),
    ]
    if probe is not None:
        devices = "; ".join(f"{d['name']} (sm {d['capability']}, {d['total_memory_bytes'] / 2**30:.1f} GiB)" for d in probe["cuda_devices"])
        rows.append(("device probe", devices or ("MPS" if probe["mps_available"] else "no accelerator visible")))
    return "## Environment\n\n" + table(("", ""), rows) + (
        "\n\nThe complete `torch.utils.collect_env` record is `env/collect_env.txt`; every job's own record "
        "is inside its JSON output. Absolute times hold only for this machine; compare ratios within one run."
    )


def _data_section(datasets: Sequence[dict[str, Any]]) -> str:
    rows = []
    for meta in datasets:
        export = meta["export"]
        rows.append(
            (
                meta["name"],
                f"{meta['rows']:,} × {len(meta['feature_columns'])}",
                f"{meta['positive_rate']:.3f}",
                f"`{meta['matrix_sha256'][:16]}…`",
                f"{export['files']['parquet']['bytes']:,}",
                f"{export['files']['csv']['bytes']:,}",
            )
        )
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


def _theory_section(inputs: ReportInputs) -> str:
    widths, n = inputs.widths, inputs.rows
    p = theory.param_count(widths)
    measured = {(r["batch_size"], r["loader"]): r for r in inputs.train_table if r["device"] == "cpu"}
    rows = []
    for b in inputs.batch_sizes:
        fast = measured.get((b, "fastpath"))
        achieved = theory.forward_backward_flops(n, widths) / fast["epoch_s_median"] / 1e9 if fast else None
        rows.append(
            (
                b, theory.steps_per_epoch(n, b), f"{theory.forward_flops(b, widths):,}", f"{theory.forward_backward_flops(b, widths):,}",
                f"{theory.forward_backward_flops_counted(b, widths):,}", f"{theory.forward_backward_flops(n, widths) / 1e6:.1f}",
                f"{theory.activation_bytes(b, widths):,}",
                f"{theory.transfer_seconds(theory.input_bytes(b, widths[0]), inputs.bandwidth_gb_s) * 1e6:.2f}",
                f"{achieved:.2f}" if achieved is not None else "",
            )
        )
    matrix_bytes = theory.input_bytes(n, widths[0])
    return (
        "## Theoretical estimates (computed, not measured)\n\n"
        f"Model {' → '.join(map(str, widths))}: P = {p:,} parameters; Adam fp32 bound 4·P·4 = "
        f"{theory.adam_fp32_bytes(widths):,} bytes. Benchmark matrix {n:,} × {widths[0]} fp32 = {matrix_bytes:,} bytes: "
        f"{theory.transfer_seconds(matrix_bytes, inputs.bandwidth_gb_s) * 1e3:.3f} ms to transfer at "
        f"{inputs.bandwidth_gb_s:g} GB/s (assumed effective bandwidth, `report.bandwidth_gb_s`).\n\n"
        + table(
            ("B", "steps/epoch", "fwd FLOP/batch", "fwd+bwd FLOP/batch (3×)", "fwd+bwd counted*", "fwd+bwd MFLOP/epoch",
             "fwd activation bytes/batch", "batch transfer µs", "achieved GFLOP/s (CPU fast path, measured)"),
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
        _data_section(inputs.datasets),
        _flags_section(inputs),
        _environment_section(inputs.environment, inputs.probe, inputs.accelerator),
        f"## Reproduce\n\n`snakemake --cores 4` with the archived `config.yaml` (seed {inputs.seed}). "
        "Figure: `figures/decision.png` (and `.svg`). Tables: `tables/*.csv` and `*.json`. "
        "The textbook's exercise-2 shape: `s111_cpu_results.json`.",
    ]
    return "\n\n".join(section for section in sections if section) + "\n"
