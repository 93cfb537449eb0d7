"""Words the harness's tables print about what they are drawn from (benchmarks/calibration.py, stopping_rule.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice.analyze import synthetic, variance  # noqa: E402


def components_line(components: dict) -> str:
    """Say the variance components a table is drawn from: each one's sd."""
    line = ", ".join(f"σ {name} {components[name]['sd']:.2%}" for name in variance.NAMES)
    slow = components.get("tail")
    if slow is None:
        return line
    line += f"; slow epochs {slow['share']:.2%}, mean log excess {slow['log_size']:.3f}"
    resampled = components.get(synthetic.RESAMPLED)
    if resampled is not None:
        return (
            f"{line}; drawn as the {len(resampled['blocks'])} measured jobs resampled whole, job sd "
            f"{resampled['sigma_job']:.2%} and interaction sd {resampled['sigma_interaction']:.2%} beside them "
            f"(their estimates give every measured value back within {resampled['misfit']:.0%})"
        )
    drawn = slow.get("draw")
    if drawn is None:
        return line
    return (
        f"{line}; drawn as epoch sd {drawn['epoch_sd']:.2%}, slow epochs {drawn['tail_share']:.2%} "
        f"of mean log excess {drawn['tail_log']:.3f} (fitted: their estimates give the measured values back)"
    )


def shape_words(components: dict, epochs: int) -> str:
    """Say the shape a run is drawn in: the resampled jobs' thread counts and cells, else the default's."""
    tables, variants = synthetic.run_shape(synthetic.design_from(components, 2, epochs))
    return f"{tables} thread counts × {variants} cells"


def unlike_words(spread: float) -> str:
    """Say how unlike the cells' epoch sds are drawn: "alike", or the range of their factor."""
    return "alike" if spread == 1 else f"×{1 / spread:.2g}–×{spread:g}"


def jobs_words(shared: bool) -> str:
    """Say how the jobs time the thread counts: one job both, or a job each."""
    return "one job times both" if shared else "a job a thread count"
