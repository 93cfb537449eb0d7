"""Do the plain loop's short warm-up passes change what its timed epochs measure?

measure/reference.py lets torch's Timer warm up with passes of WARM_BATCHES batches instead of whole
epochs. Here a fresh Reference of one cell is timed both ways, in turn (short, whole; then whole, short),
`--pairs` times in one process at one thread. It prints the mean log ratio short / whole with its standard
error: a bias of the short warm-ups would show as a ratio away from 1.

    .venv/bin/python benchmarks/reference_warmups.py results [--pairs 60]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))

from accel_choice.io import dataio, paths  # noqa: E402
from accel_choice.measure import reference, steps, training  # noqa: E402
from accel_choice.records.model import ModelSpec  # noqa: E402

CELLS = (("fastpath", 512), ("fastpath", 128), ("dataloader", 256))
SPEC = ModelSpec(hidden=48, lr=0.001)  # the default config's model
SEED = 20261020


def short_over_whole(x: torch.Tensor, y: torch.Tensor, loader: str, batch_size: int, pairs: int) -> np.ndarray:
    """Return each pair's log of (short warm-ups' seconds per epoch / whole warm-up epochs')."""
    variant = steps.cpu_variants([loader], [False], batch_size=batch_size, threads=1)[0]
    kept = reference.WARM_BATCHES
    logs = []
    try:
        for i in range(pairs):
            seconds = {}
            for warm in (kept, None) if i % 2 == 0 else (None, kept):
                reference.WARM_BATCHES = warm  # None: each warm-up run is a whole epoch, as torch's Timer has it
                seconds[warm] = reference.Reference(variant, x, y, SPEC, SEED).time()
            logs.append(math.log(seconds[kept] / seconds[None]))
    finally:
        reference.WARM_BATCHES = kept
    return np.array(logs)


def main(argv: list[str] | None = None) -> int:
    """Print one row per cell: the mean ratio short / whole and its standard error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a finished run's results folder (its benchmark data)")
    parser.add_argument("--pairs", type=int, default=60)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    x, y, _ = dataio.load_benchmark_tensors(
        args.results / paths.fill(paths.DATASET_FILE, dataset="benchmark", fmt="parquet"),
        args.results / paths.fill(paths.DATASET_META, dataset="benchmark"),
        args.results / paths.fill(paths.DATASET_EXPORT, dataset="benchmark"),
    )
    y = training.targets(SPEC, y)
    print("| cell | pairs | short / whole warm-ups | standard error |")
    print("|---|---|---|---|")
    for loader, batch_size in CELLS:
        logs = short_over_whole(x, y, loader, batch_size, args.pairs)
        se = float(np.std(logs, ddof=1) / math.sqrt(len(logs)))
        print(
            f"| {loader} B={batch_size} | {len(logs)} | {math.exp(float(np.mean(logs))):.3f} | ±{se:.1%} |", flush=True
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
