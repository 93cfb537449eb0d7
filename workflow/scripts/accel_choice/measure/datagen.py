"""Seeded data generation: the benchmark matrix and a Northstar-like orders table.

Both return a float32 matrix whose last column is the 0/1 target, plus column names.
The same arguments give the same bytes on the same library versions.
"""

from __future__ import annotations

import numpy as np

from accel_choice.records.data import Dataset


def make_benchmark(rows: int, features: int, noise: float, seed: int) -> Dataset:
    """X ~ N(0, 1), w ~ N(0, 1), y = 1[Xw + noise·ε > 0], all fp32.

    Draws in the specification's order from a generator seeded like its
    `torch.manual_seed(SEED)`, so the textbook script sees the same matrix.
    """
    import torch  # here, not at the top: the Northstar table needs numpy only

    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, features, generator=generator)
    w = torch.randn(features, 1, generator=generator)
    eps = torch.randn(rows, 1, generator=generator)
    y = ((x @ w + noise * eps) > 0).float()
    matrix = torch.cat([x, y], dim=1).numpy().astype(np.float32, copy=False)
    columns = tuple(f"x{i:02d}" for i in range(features))
    return Dataset("benchmark", np.ascontiguousarray(matrix), columns, "y")


NORTHSTAR_FEATURES = (
    "distance_km",
    "parcel_weight_kg",
    "item_count",
    "order_value_eur",
    "express_shipping",
    "remote_area",
    "warehouse_backlog",
    "order_weekday",
)
NORTHSTAR_TARGET = "late_over_7_days"


def _standardize(values: np.ndarray) -> np.ndarray:
    return (values - values.mean()) / values.std()


def _intercept_for_rate(linear: np.ndarray, rate: float) -> float:
    """Intercept b0 with mean(sigmoid(b0 + linear)) == rate, by bisection (monotone in b0)."""
    low, high = -30.0, 30.0
    for _ in range(200):
        mid = (low + high) / 2
        if np.mean(1 / (1 + np.exp(-(mid + linear)))) < rate:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def make_northstar(rows: int, late_rate: float, seed: int) -> Dataset:
    """Orders with eight features known when the order is placed, and a late-delivery label.

    Nothing observed after dispatch (delivery time, courier events) is a feature: that
    would leak the target. The label comes from a seeded logistic ground truth whose
    intercept is calibrated so the expected late rate equals `late_rate`.
    """
    if not 0 < late_rate < 1:
        raise ValueError(f"northstar.late_rate must be in (0, 1), got {late_rate}")
    rng = np.random.default_rng(seed)
    distance = np.clip(rng.lognormal(np.log(40.0), 0.8, rows), 1.0, 1500.0)
    weight = rng.gamma(2.0, 2.5, rows)
    items = 1 + rng.poisson(1.8, rows)
    value = np.round(rng.lognormal(np.log(60.0), 0.7, rows), 2)
    express = rng.random(rows) < 0.18
    remote = rng.random(rows) < 0.12
    backlog = rng.gamma(4.0, 30.0, rows)
    weekday = rng.integers(0, 7, rows)

    linear = (
        1.1 * _standardize(np.log(distance))
        + 0.35 * _standardize(weight)
        + 0.15 * _standardize(items.astype(float))
        - 0.10 * _standardize(np.log(value))
        - 0.9 * express
        + 1.0 * remote
        + 0.8 * _standardize(backlog)
        + 0.6 * np.isin(weekday, (4, 5))  # Friday and Saturday orders wait over the weekend
    )
    intercept = _intercept_for_rate(linear, late_rate)
    probability = 1 / (1 + np.exp(-(intercept + linear)))
    late = rng.random(rows) < probability

    matrix = np.column_stack([distance, weight, items, value, express, remote, backlog, weekday, late]).astype(
        np.float32
    )
    return Dataset("northstar", np.ascontiguousarray(matrix), NORTHSTAR_FEATURES, NORTHSTAR_TARGET)
