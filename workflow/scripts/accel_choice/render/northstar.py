"""Northstar model selection in the report: time to target, seed limits, gradient variance, and their figures."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from accel_choice.io import paths  # noqa: E402
from accel_choice.records.northstar import GradientVariance, NorthstarHistory, SeedLimits  # noqa: E402
from accel_choice.records.time_to_target import TimeToTarget  # noqa: E402
from accel_choice.render.formatting import number, save_figure, table  # noqa: E402


def fastest_words(result: TimeToTarget) -> str:
    """Name the fastest run, or the runs this measurement cannot tell apart from it."""
    if result.fastest is None:
        return "none reached it"
    if len(result.fastest_set) == 1:
        return result.fastest
    others = [run for run in result.fastest_set if run != result.fastest]
    return (
        f"{result.fastest}, not measurably faster than {', '.join(others)} "
        f"({result.confidence:.0%} intervals of the time ratio hold 1)"
    )


def selection_section(result: TimeToTarget | None) -> str:
    if result is None:
        return ""
    body = [
        (
            r.device,
            r.batch_size,
            r.best_epoch,
            f"{r.stopped_epoch}{' (early)' if r.stopped_early else ''}",
            f"{r.best_val_loss:.4f}",
            f"{r.seconds.point:.2f} ({r.seconds.low:.2f}–{r.seconds.high:.2f})" if r.seconds else "not reached",
            r.updates if r.reached else "",
            f"{r.test_log_loss:.4f}",
            number(r.test_roc_auc, ".3f"),
            f"{r.test_brier:.4f}",
            f"{r.test_accuracy_at_0_5:.3f}",
            f"{r.test_base_rate:.3f}",
            f"{r.test_base_rate_log_loss:.4f}",
        )
        for r in sorted(result.rows, key=lambda r: (r.device, r.batch_size))
    ]
    return (
        "## Northstar model selection: early stopping, test once, time to target\n\n"
        f"Target: validation log loss ≤ {result.target_val_loss:.4f} (within {result.within:.0%} of the best, "
        f"{result.best_val_loss:.4f}). **Fastest to target: {fastest_words(result)}.** Each batch size is one run: "
        "its interval holds that run's epoch-to-epoch spread only (its epoch times resampled, the number of epochs "
        "to the target taken as fixed), not the drift between runs or seeds; the seed section shows that spread.\n\n"
        + table(
            (
                "device",
                "B",
                "best epoch",
                "stopped",
                "best val loss",
                f"s to target ({result.confidence:.0%} interval)",
                "updates to target",
                "test log loss",
                "test AUC",
                "test Brier",
                "test acc@0.5",
                "test base rate",
                "base-rate log loss",
            ),
            body,
        )
        + "\n\nThe test split was evaluated once per run, after restoring the best checkpoint "
        "(`torch.load(..., weights_only=True)`); standardisation statistics come from the training split only. "
        f"Curves: `{paths.NORTHSTAR_CURVES_PNG}`; TensorBoard: `tensorboard --logdir {paths.RESULTS}/{paths.TENSORBOARD}`."
    )


def _shown(value: Any) -> str:
    """An environment value as the report shows it: a list as a list."""
    return str(list(value)) if isinstance(value, tuple) else str(value)


def seed_section(result: SeedLimits | None) -> str:
    if result is None:
        return ""
    numeric, stats, env = result.numeric, result.statistical, result.environmental
    yes = {True: "yes", False: "**no**"}
    differences = env.differences
    env_text = (
        "none differ"
        if not differences
        else "; ".join(f"`{key}`: {', '.join(map(_shown, values))}" for key, values in differences.items())
    )
    rows = [
        (
            "numeric",
            f"seed {numeric.seed} trained twice on this machine: identical weights {yes[numeric.identical_weights]}, "
            f"identical loss curves {yes[numeric.identical_loss_curves]}",
        ),
        (
            "statistical",
            f"{len(result.seeds)} seeds at B={result.batch_size}: test log loss "
            f"{stats.log_loss.mean:.4f} ± {stats.log_loss.std:.4f} "
            f"({stats.log_loss.min:.4f}–{stats.log_loss.max:.4f}); AUC "
            f"{stats.roc_auc.mean:.3f} ± {stats.roc_auc.std:.3f} "
            f"({stats.roc_auc.min:.3f}–{stats.roc_auc.max:.3f})",
        ),
        ("environmental", f"{env.records_compared} environment records compared: {env_text}"),
    ]
    return (
        "## Seed limits (measured)\n\n"
        + table(("reproducibility", "result"), rows)
        + (
            "\n\nA seed promises the same numbers only with the same environment record; across machines, library "
            "versions or thread counts, compare the statistical row, not bits."
        )
    )


def gradient_variance_section(result: GradientVariance | None) -> str:
    if result is None:
        return ""
    body = [
        (
            r.batch_size,
            f"{r.measured:.4g}",
            f"{r.predicted:.4g}",
            f"{r.predicted_iid:.4g}",
            f"{r.ratio:.3f} ± {r.ratio_2se:.3f}"
            if r.ratio is not None and r.ratio_2se is not None
            else "— (B = N: no sampling noise predicted)",
        )
        for r in result.table
    ]
    return (
        "## Gradient variance vs batch size (the 1/B rule, measured)\n\n"
        f"At the {result.parameter_point}, over {result.draws} random mini-batches per B drawn without replacement from "
        f"N = {result.rows:,} rows (P = {result.parameters:,}); σ² = {result.sigma2:.4g}.\n\n"
        + table(
            (
                "B",
                "measured E‖g_B − G‖²",
                "predicted σ²/B·(N−B)/(N−1)",
                "σ²/B (independent)",
                "measured/predicted ± 2 SE",
            ),
            body,
        )
        + f"\n\nFigure: `{paths.GRADIENT_VARIANCE_PNG}` (log–log)."
    )


def learning_curves(
    histories: Sequence[NorthstarHistory],
    target: float,
    png_path: str | os.PathLike[str],
    svg_path: str | os.PathLike[str],
    seeds: SeedLimits | None = None,
) -> None:
    """Plot validation loss against wall time.

    Validation loss against wall time, one curve per device and batch size; with `seeds`, the spread of the
    seed runs (min–max of their validation losses per epoch) as a band at the seed batch size's epoch times."""
    figure, axes = plt.subplots(figsize=(7, 4.5))
    if seeds is not None:
        _seed_band(axes, histories, seeds)
    for run in histories:
        # A loss that was not finite (null) leaves a gap in the curve.
        axes.plot(
            [r.cumulative_s for r in run.history],
            [math.nan if r.val_loss is None else r.val_loss for r in run.history],
            marker=".",
            label=run.name,
        )
    axes.axhline(target, color="black", linestyle="--", linewidth=1, label="time-to-target threshold")
    axes.set_xlabel("cumulative wall time, s (training + validation)")
    axes.set_ylabel("validation log loss")
    axes.set_title("Northstar: validation loss against time per batch size")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    save_figure(figure, png_path, svg_path)


def _seed_band(axes: Any, histories: Sequence[NorthstarHistory], seeds: SeedLimits) -> None:
    """The seed runs' spread: their validation losses per epoch, min to max wherever two or more are finite,
    placed at the epoch times of the CPU run of the seed batch size (the seeds trained the same work)."""
    run = next((r for r in histories if r.device == "cpu" and r.batch_size == seeds.batch_size), None)
    if run is None:
        return
    times, low, high = [], [], []
    for epoch, row in enumerate(run.history):
        losses = [s.val_losses[epoch] for s in seeds.runs if epoch < len(s.val_losses)]
        finite = [v for v in losses if v is not None and math.isfinite(v)]
        if len(finite) >= 2:
            times.append(row.cumulative_s)
            low.append(min(finite))
            high.append(max(finite))
    if times:
        axes.fill_between(
            times,
            low,
            high,
            color="grey",
            alpha=0.3,
            linewidth=0,
            label=f"{len(seeds.runs)} seeds at B={seeds.batch_size}: min–max validation loss per epoch",
        )


def gradient_variance_figure(
    result: GradientVariance, png_path: str | os.PathLike[str], svg_path: str | os.PathLike[str]
) -> None:
    rows = result.table
    sizes = [r.batch_size for r in rows]
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    axes.errorbar(
        sizes,
        [r.measured for r in rows],
        yerr=[2 * r.measured_stderr for r in rows],
        marker="o",
        linestyle="none",
        capsize=4,
        label=f"measured over {result.draws} mini-batches (±2 SE)",
    )
    axes.plot(sizes, [r.predicted for r in rows], label="σ²/B · (N−B)/(N−1), without replacement")
    axes.plot(sizes, [r.predicted_iid for r in rows], linestyle=":", label="σ²/B, independent samples")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("batch size B")
    axes.set_ylabel("E‖g_B − G‖²")
    axes.set_title(f"Gradient variance vs batch size (N={result.rows:,}, P={result.parameters:,})")
    axes.grid(True, which="both", alpha=0.3)
    # Below the panel: inside it, the legend hid measured points.
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    figure.tight_layout()
    save_figure(figure, png_path, svg_path)
