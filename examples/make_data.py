"""The example data of examples/*.yaml, seeded: `python examples/make_data.py` writes them again,
byte for byte (tests/test_examples.py checks the shipped files' sha256 against this script).

- `orders.parquet`: a delivery table. Categorical columns (weekday, carrier, region) are one-hot
  encoded here, numeric ones standardised; the target `late` (0/1) depends on distance, weight, the
  carrier and an interaction of express shipping with the evening hours - something a residual MLP
  can learn and a linear model cannot quite.
- `sequences_x.npy` (float16, rows × 1 × 128) and `sequences_y.npy` (int8): noisy signals, each the sum
  of a few sine bursts; the class (0, 1, 2) is which frequency band holds the strongest burst -
  what a 1-D convolution sees and a per-position model does not.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
CARRIERS = ("north", "swift", "parcelco", "local")
REGIONS = ("urban", "suburban", "rural")


def orders(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    distance = rng.gamma(2.0, 15.0, rows)
    weight = rng.lognormal(0.5, 0.8, rows)
    items = rng.integers(1, 12, rows)
    hour = rng.integers(6, 23, rows)
    express = rng.random(rows) < 0.3
    weekday = rng.choice(WEEKDAYS, rows)
    carrier = rng.choice(CARRIERS, rows, p=(0.4, 0.3, 0.2, 0.1))
    region = rng.choice(REGIONS, rows, p=(0.5, 0.3, 0.2))
    logit = (
        -2.0
        + 0.03 * distance
        + 0.25 * np.log(weight)
        + 0.05 * items
        + np.select([carrier == "parcelco", carrier == "local"], [0.8, -0.4], 0.0)
        + np.select([region == "rural"], [0.9], 0.0)
        + np.where(weekday == "sat", 0.5, 0.0)
        + np.where(express & (hour >= 18), 1.5, np.where(express, -0.8, 0.0))
    )
    late = rng.random(rows) < 1 / (1 + np.exp(-logit))
    frame = pd.DataFrame(
        {
            "distance_km": (distance - distance.mean()) / distance.std(),
            "log_weight_kg": (np.log(weight) - np.log(weight).mean()) / np.log(weight).std(),
            "items": (items - items.mean()) / items.std(),
            "hour": (hour - 14.0) / 5.0,
            "express": express.astype(np.float32),
        }
    ).astype(np.float32)
    for name, values, levels in (
        ("weekday", weekday, WEEKDAYS),
        ("carrier", carrier, CARRIERS),
        ("region", region, REGIONS),
    ):
        for level in levels:  # one-hot: the categorical features encoded as numbers
            frame[f"{name}_{level}"] = (values == level).astype(np.float32)
    frame["late"] = late.astype(np.int8)
    return frame


def sequences(rows: int, seed: int, length: int = 128) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(length) / length
    bands = ((2, 5), (8, 14), (18, 28))  # cycles per sequence
    x = 0.6 * rng.standard_normal((rows, length))
    y = rng.integers(0, len(bands), rows)
    for i in range(rows):
        for band, (low, high) in enumerate(bands):
            amplitude = 1.0 if band == y[i] else rng.uniform(0.0, 0.6)
            start = rng.uniform(0, 0.5)
            window = (t >= start) & (t < start + 0.5)
            x[i] += amplitude * window * np.sin(2 * np.pi * rng.uniform(low, high) * t + rng.uniform(0, 2 * np.pi))
    return x[:, None, :].astype(np.float16), y.astype(np.int8)


def write(out: Path, order_rows: int, sequence_rows: int, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(orders(order_rows, seed), preserve_index=False)
    pq.write_table(table, out / "orders.parquet", compression="zstd")
    x, y = sequences(sequence_rows, seed + 1)
    np.save(out / "sequences_x.npy", x, allow_pickle=False)
    np.save(out / "sequences_y.npy", y, allow_pickle=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "data")
    parser.add_argument("--order-rows", type=int, default=16384)
    parser.add_argument("--sequence-rows", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    write(args.out, args.order_rows, args.sequence_rows, args.seed)


if __name__ == "__main__":
    main()
