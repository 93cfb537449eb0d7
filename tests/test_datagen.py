"""Seeded data: the benchmark matrix equals the textbook script's make_data; a Northstar-like table."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from accel_choice.measure import datagen

SEED = 20261020


def textbook_make_data(n: int = 8192, d: int = 32):
    """Section 28.3.4, verbatim apart from the global-RNG fork around it."""
    torch.manual_seed(SEED)
    X = torch.randn(n, d)
    w = torch.randn(d, 1)
    y = ((X @ w + 0.2 * torch.randn(n, 1)) > 0).float()
    return X, y


# --- benchmark ----------------------------------------------------------------------------


def test_benchmark_equals_textbook_make_data():
    with torch.random.fork_rng():
        X, y = textbook_make_data()
    data = datagen.make_benchmark(8192, 32, 0.2, SEED)
    assert np.array_equal(data.features, X.numpy())
    assert np.array_equal(data.target, y.numpy().ravel())


def test_benchmark_shape_dtype_and_columns():
    data = datagen.make_benchmark(300, 7, 0.2, 1)
    assert data.matrix.shape == (300, 8)
    assert data.matrix.dtype == np.float32
    assert data.matrix.flags["C_CONTIGUOUS"]
    assert data.features.shape == (300, 7)
    assert data.target.shape == (300,)
    assert data.feature_columns == ("x00", "x01", "x02", "x03", "x04", "x05", "x06")
    assert data.target_column == "y"
    assert data.columns == (*data.feature_columns, "y")
    assert data.name == "benchmark"
    assert set(np.unique(data.target)) == {0.0, 1.0}


def test_benchmark_same_seed_same_bytes():
    a = datagen.make_benchmark(500, 6, 0.2, 7)
    b = datagen.make_benchmark(500, 6, 0.2, 7)
    assert a.matrix.tobytes() == b.matrix.tobytes()


def test_benchmark_different_seed_different_bytes():
    a = datagen.make_benchmark(500, 6, 0.2, 7)
    b = datagen.make_benchmark(500, 6, 0.2, 8)
    assert a.matrix.tobytes() != b.matrix.tobytes()
    assert not np.array_equal(a.features, b.features)


def test_benchmark_does_not_touch_global_rng():
    with torch.random.fork_rng():
        torch.manual_seed(123)
        expected = torch.rand(3)
        torch.manual_seed(123)
        datagen.make_benchmark(50, 4, 0.2, 9)
        assert torch.equal(torch.rand(3), expected)


def test_benchmark_noise_changes_only_labels():
    clean = datagen.make_benchmark(2000, 5, 0.0, 3)
    noisy = datagen.make_benchmark(2000, 5, 5.0, 3)
    assert np.array_equal(clean.features, noisy.features)
    assert not np.array_equal(clean.target, noisy.target)


# --- Northstar -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def northstar():
    return datagen.make_northstar(2400, 0.18, SEED)


def test_northstar_shape_columns_and_dtype(northstar):
    assert northstar.matrix.shape == (2400, 9)
    assert northstar.matrix.dtype == np.float32
    assert len(northstar.feature_columns) == 8
    assert northstar.feature_columns == datagen.NORTHSTAR_FEATURES
    assert northstar.target_column == "late_over_7_days"
    assert northstar.name == "northstar"


def test_northstar_fp32_matrix_is_76800_bytes(northstar):
    assert northstar.features.nbytes == 76_800


def test_northstar_target_is_binary(northstar):
    assert set(np.unique(northstar.target)) == {0.0, 1.0}


@pytest.mark.parametrize("seed", [SEED, 1, 2])
def test_northstar_late_rate_close_to_configured(seed):
    data = datagen.make_northstar(2400, 0.18, seed)
    assert abs(float(data.target.mean()) - 0.18) < 0.03


@pytest.mark.parametrize("rate", [0.05, 0.5])
def test_northstar_other_rates(rate):
    data = datagen.make_northstar(2400, rate, 11)
    assert abs(float(data.target.mean()) - rate) < 0.03


def test_northstar_features_are_plausible(northstar):
    cols = {name: northstar.matrix[:, i] for i, name in enumerate(northstar.columns)}
    assert cols["distance_km"].min() >= 1.0 and cols["distance_km"].max() <= 1500.0
    assert (cols["parcel_weight_kg"] > 0).all()
    assert (cols["item_count"] >= 1).all() and np.array_equal(cols["item_count"], np.round(cols["item_count"]))
    assert set(np.unique(cols["express_shipping"])) <= {0.0, 1.0}
    assert set(np.unique(cols["remote_area"])) <= {0.0, 1.0}
    assert set(np.unique(cols["order_weekday"])) <= set(map(float, range(7)))
    # the label depends on the features: late orders travel further on average
    late = cols["late_over_7_days"] == 1
    assert cols["distance_km"][late].mean() > cols["distance_km"][~late].mean()


def test_northstar_determinism():
    a = datagen.make_northstar(400, 0.18, 5)
    b = datagen.make_northstar(400, 0.18, 5)
    c = datagen.make_northstar(400, 0.18, 6)
    assert a.matrix.tobytes() == b.matrix.tobytes()
    assert a.matrix.tobytes() != c.matrix.tobytes()


@pytest.mark.parametrize("rate", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_northstar_invalid_late_rate_raises(rate):
    with pytest.raises(ValueError, match="late_rate"):
        datagen.make_northstar(100, rate, SEED)


def test_northstar_has_no_post_delivery_columns(northstar):
    forbidden = ("deliver", "courier", "dispatch", "arriv", "transit", "actual", "days", "late", "delay", "return")
    for name in northstar.feature_columns:
        assert not any(word in name.lower() for word in forbidden), name
    assert northstar.target_column not in northstar.feature_columns
