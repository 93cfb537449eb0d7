"""Robust summaries of repeats: median, spread, quartiles like numpy, and the noise flag."""

from __future__ import annotations

import numpy as np
import pytest

from accel_choice.analyze import stats


def test_median_min_max_of_three_repeats():
    s = stats.summarize([0.0411, 0.0398, 0.0403])  # exercise 2's illustrative runs
    assert s["n"] == 3
    assert s["median"] == 0.0403
    assert s["min"] == 0.0398
    assert s["max"] == 0.0411


def test_median_of_even_count_is_midpoint():
    s = stats.summarize([4.0, 1.0, 3.0, 2.0])
    assert s["median"] == pytest.approx(2.5)


@pytest.mark.parametrize(
    "values",
    [
        [1.0, 2.0],
        [0.0411, 0.0398, 0.0403],
        [3.0, 1.0, 2.0, 10.0],
        [5.0, 1.0, 4.0, 2.0, 3.0],
        [0.9, 1.7, 1.1, 2.5, 1.0, 1.3],
        [0.012, 0.013, 0.011, 0.020, 0.012, 0.0125, 0.0119],
        list(np.random.default_rng(0).lognormal(size=11)),
    ],
)
def test_quartiles_equal_numpy_linear_percentile(values):
    q1, q3 = stats.quartiles(values)
    expected_q1, expected_q3 = np.percentile(values, [25, 75], method="linear")
    assert q1 == pytest.approx(expected_q1, rel=1e-12, abs=1e-15)
    assert q3 == pytest.approx(expected_q3, rel=1e-12, abs=1e-15)
    s = stats.summarize(values)
    assert s["q1"] == pytest.approx(expected_q1, rel=1e-12, abs=1e-15)
    assert s["q3"] == pytest.approx(expected_q3, rel=1e-12, abs=1e-15)
    assert s["iqr"] == pytest.approx(expected_q3 - expected_q1, rel=1e-9, abs=1e-15)
    assert s["median"] == pytest.approx(float(np.median(values)))


def test_single_value_has_zero_spread_and_is_not_noisy():
    s = stats.summarize([0.5])
    assert (s["q1"], s["q3"], s["iqr"]) == (0.5, 0.5, 0.0)
    assert s["max_over_median"] == 1.0
    assert not s["noisy"]
    assert s["noise_reasons"] == []


def test_tight_data_is_not_flagged():
    s = stats.summarize([0.0100, 0.0101, 0.0099, 0.0100, 0.0102])
    assert s["noisy"] is False
    assert s["noise_reasons"] == []
    assert s["iqr_over_median"] < 0.10
    assert s["max_over_median"] < 2.0


def test_iqr_over_median_above_threshold_is_flagged():
    # quartiles 1.5 and 2.5 -> IQR 1.0, median 2.0 -> 50 % > 10 %
    s = stats.summarize([1.0, 2.0, 3.0])
    assert s["iqr"] == pytest.approx(1.0)
    assert s["iqr_over_median"] == pytest.approx(0.5)
    assert s["noisy"] is True
    assert len(s["noise_reasons"]) == 1
    assert "IQR/median 50.0% > 10%" in s["noise_reasons"][0]
    assert s["max_over_median"] == pytest.approx(1.5)  # no outlier reason


def test_threshold_is_configurable():
    values = [1.0, 1.05, 1.1]  # IQR/median = 0.05 / 1.05 ~ 4.8 %
    assert not stats.summarize(values)["noisy"]
    assert stats.summarize(values, stats.NoiseRules(noise_iqr_ratio=0.01))["noisy"]


def test_repeat_over_twice_the_median_is_flagged_even_with_zero_iqr():
    values = [1.0] * 9 + [3.0]
    s = stats.summarize(values)
    assert s["iqr"] == 0.0
    assert s["max_over_median"] == pytest.approx(3.0)
    assert s["noisy"] is True
    assert s["noise_reasons"] == ["a repeat is 3.00x the median (> 2x)"]


def test_repeat_exactly_twice_the_median_is_not_an_outlier():
    s = stats.summarize([1.0] * 9 + [2.0])
    assert s["max_over_median"] == pytest.approx(2.0)
    assert not s["noisy"]


def test_both_reasons_are_kept():
    s = stats.summarize([1.0, 1.0, 3.0])  # q1 = 1, q3 = 2: IQR/median 100 %, and 3x the median
    assert s["noisy"]
    assert len(s["noise_reasons"]) == 2
    assert s["noise_reasons"][0].startswith("IQR/median 100.0%")
    assert s["noise_reasons"][1] == "a repeat is 3.00x the median (> 2x)"


def test_outlier_factor_is_configurable():
    assert not stats.summarize([1.0] * 9 + [3.0], stats.NoiseRules(outlier_factor=4.0))["noisy"]
    assert stats.summarize([1.0] * 9 + [1.6], stats.NoiseRules(outlier_factor=1.5))["noisy"]


def test_empty_list_raises():
    with pytest.raises(ValueError, match="empty"):
        stats.summarize([])


def test_the_noise_rules_defaults_are_the_config_schemas() -> None:
    # The library's defaults (used by tests and by callers outside the workflow) and the schema's
    # (used by the workflow) are one set of numbers: a change to one must be made to both.
    from pathlib import Path

    import yaml

    schema = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text())
    defaults = {key: spec["default"] for key, spec in schema["properties"]["aggregate"]["properties"].items()}
    assert stats.NoiseRules(**defaults) == stats.NoiseRules()
