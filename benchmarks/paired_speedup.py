"""How much does timing the CPU beside the GPU narrow the per-epoch speedup?

For each results folder of a run with a GPU: every GPU cell against each CPU configuration its jobs timed beside it
(`beside` in tables/gpu_training.json). The CPU/GPU speedup of a training + evaluation epoch is given two ways:
paired round by round over the GPU's jobs (`decision_intervals.per_epoch_speedup` with `beside`, what the report
states), and Welch against the same configuration in the CPU's own jobs (tables/cpu_training.json), as before
training-job version 15. A folder without a GPU table, or whose GPU jobs timed no CPU, says so.

    .venv/bin/python benchmarks/paired_speedup.py RESULTS [RESULTS ...]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from accel_choice import records  # noqa: E402
from accel_choice.analyze import decision_intervals  # noqa: E402
from accel_choice.io import paths  # noqa: E402
from accel_choice.records.training import TrainingTable  # noqa: E402
from paired_widths import _span, print_table  # noqa: E402  (its neighbour: the same interval words and table)

LEVEL = 0.95


def folder_lines(folder: Path) -> list[str]:
    """Return one markdown row per GPU cell and CPU configuration beside it, then a summary row."""
    gpu_path = folder / paths.GPU_TABLE
    if not gpu_path.exists():
        return [f"| {folder} | no GPU table | | | |"]
    gpu = records.read(TrainingTable, gpu_path)
    own = {cell.key: cell for cell in records.read(TrainingTable, folder / paths.CPU_TABLE).table}
    lines, paired_widths, welch_widths = [], [], []
    for cell in gpu.table:
        for cpu in (c for c in gpu.beside if c.batch_size == cell.batch_size and c.key in own):
            paired = decision_intervals.per_epoch_speedup(own[cpu.key], cell, LEVEL, gpu.beside)
            welch = decision_intervals.per_epoch_speedup(own[cpu.key], cell, LEVEL)
            paired_widths.append(paired.half_width_ratio)
            welch_widths.append(welch.half_width_ratio)
            lines.append(
                f"| {folder} | {cell.name} B={cell.batch_size} | {cpu.name} | {_span(paired)} | {_span(welch)} |"
            )
    if not lines:
        return [f"| {folder} | its GPU jobs timed no CPU configuration of the CPU table | | | |"]
    lines.append(
        f"| {folder} | median ± of {len(lines)} | | ±{statistics.median(paired_widths):.1%} | "
        f"±{statistics.median(welch_widths):.1%} |"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    columns = ["run", "GPU cell", "CPU beside it", f"paired: {LEVEL:.0%} interval"]
    columns.append(f"Welch, the CPU's own jobs: {LEVEL:.0%} interval")
    return print_table(argv, __doc__.splitlines()[0], columns, folder_lines)


if __name__ == "__main__":
    sys.exit(main())
