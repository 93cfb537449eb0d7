"""Cost at the user's prices: per epoch and per time-to-target, and whether the faster device is
also the cheaper one, decided by intervals."""

from __future__ import annotations

import dataclasses

import pytest
from builders_northstar import time_to_target_record
from builders_training import full_path_row

from accel_choice import records
from accel_choice.analyze import cost
from accel_choice.records.cost import CostTable
from accel_choice.records.decision import DeviceComparison
from accel_choice.records.estimate import BOOTSTRAP, Estimate
from accel_choice.render.cost import cost_headline, cost_section

CPU = full_path_row(total_s=0.31, total_min_s=0.30, total_max_s=0.32, startup_s=0.0)
GPU = full_path_row(
    device="cuda", placement="resident", total_s=0.09, total_min_s=0.08, total_max_s=0.10, startup_s=0.01
)


def comparison(speedup: float, low: float, high: float) -> DeviceComparison:
    return DeviceComparison(
        cpu=CPU,
        gpu=GPU,
        speedup=Estimate(point=speedup, low=low, high=high, level=0.95, method=BOOTSTRAP, jobs=3),
        epochs=1,
        speedup_per_epoch=Estimate(point=speedup, low=low, high=high, level=0.95, method=BOOTSTRAP, jobs=3),
        speedup_without_startup=speedup,
        threshold=1.5,
        gpu_wins=low > 1.5,
        break_even_epochs=None,
        break_even_gpu=None,
    )


def test_gpu_faster_and_dearer_per_epoch_is_said_with_both_intervals() -> None:
    # 3.1× faster, 5.58× the price: 1.8× the CPU's cost per epoch, interval 5.58/3.4 .. 5.58/2.8
    table = cost.cost_table([CPU, GPU], comparison(3.1, 2.8, 3.4), {"cpu": 0.5, "cuda": 2.79}, "EUR")
    assert table.price_ratio == pytest.approx(5.58)
    assert table.cost_ratio.point == pytest.approx(5.58 / 3.1)
    assert (table.cost_ratio.low, table.cost_ratio.high) == (pytest.approx(5.58 / 3.4), pytest.approx(5.58 / 2.8))
    assert table.epoch_outcome == "cpu_cheaper"
    cpu_line, gpu_line = table.lines
    assert cpu_line.epoch_cost == pytest.approx(0.31 * 0.5 / 3600)
    assert gpu_line.epoch_cost == pytest.approx(0.10 * 2.79 / 3600)  # start-up included, as the speedup
    text = cost_section(table)
    assert "the GPU is 3.1× faster (95% interval 2.80–3.40×) and 1.8× more expensive per epoch" in text
    assert "0.5 EUR per hour for the CPU, 2.79 EUR for the GPU: 5.58× the CPU's" in text
    # the same sentence is REPORT.md's first-screen cost line (issue 27 item 1)
    assert cost_headline(table) in text and cost_headline(table).startswith("**At these prices")
    assert cost_headline(None) == ""
    assert records.from_json(CostTable, records.to_json(table), "cost.json") == table


@pytest.mark.parametrize(
    ("prices", "outcome", "words"),
    [
        ({"cpu": 1.0, "cuda": 2.0}, "gpu_cheaper", "1.5× cheaper per epoch (interval 0.59–0.71× the CPU's)"),
        ({"cpu": 1.0, "cuda": 3.1}, "no_difference", "not measurably cheaper or dearer per epoch (1.03×"),
    ],
)
def test_cheaper_only_when_the_whole_cost_interval_says_so(prices, outcome, words) -> None:
    table = cost.cost_table([CPU, GPU], comparison(3.0, 2.8, 3.4), prices, "USD")
    assert table.epoch_outcome == outcome
    assert words in cost_section(table)


def test_a_speedup_interval_holding_one_is_no_speed_claim() -> None:
    table = cost.cost_table([CPU, GPU], comparison(1.1, 0.9, 1.3), {"cpu": 1.0, "cuda": 1.0}, "USD")
    assert "the GPU is not measurably faster or slower (1.10×, 95% interval 0.90–1.30×)" in cost_section(table)


def test_without_a_gpu_the_cpu_alone_is_priced_with_time_to_target() -> None:
    target = time_to_target_record()
    table = cost.cost_table([CPU], None, {"cpu": 0.2, "cuda": 3.0}, "USD", target)
    assert [line.device for line in table.lines] == ["cpu"] and table.epoch_outcome is None
    (line,) = table.lines
    run = next(r for r in target.rows if r.device == "cpu" and r.reached)
    assert line.target_run == run.run
    assert line.target_s == run.seconds
    assert line.target_cost.point == pytest.approx(run.seconds.point * 0.2 / 3600)
    assert line.target_cost.interval == pytest.approx((run.seconds.low * 0.2 / 3600, run.seconds.high * 0.2 / 3600))
    text = cost_section(table)
    assert "No GPU was measured in this run: the CPU's costs alone, no comparison." in text


def test_a_measured_gpu_without_a_price_is_named() -> None:
    table = cost.cost_table([CPU, GPU], comparison(3.0, 2.8, 3.4), {"cpu": 0.2}, "USD")
    assert table.unpriced == ("cuda",) and len(table.lines) == 1
    assert "The CUDA was measured, but `cost.per_hour` gives no price for it" in cost_section(table)


def test_to_target_cheaper_only_when_the_cost_intervals_do_not_overlap() -> None:
    target = time_to_target_record()
    cpu_row = next(r for r in target.rows if r.reached)
    gpu_row = dataclasses.replace(cpu_row, device="cuda", run=f"cuda {cpu_row.run}")
    target = dataclasses.replace(target, rows=(*target.rows, gpu_row))
    same = cost.cost_table([CPU, GPU], comparison(3.0, 2.8, 3.4), {"cpu": 1.0, "cuda": 1.0}, "USD", target)
    assert same.target_outcome == "no_difference"
    dear = cost.cost_table([CPU, GPU], comparison(3.0, 2.8, 3.4), {"cpu": 1.0, "cuda": 100.0}, "USD", target)
    assert dear.target_outcome == "cpu_cheaper"
    assert "To the Northstar target the CPU's run costs less" in cost_section(dear)


def test_a_cost_line_that_does_not_add_up_is_refused() -> None:
    table = cost.cost_table([CPU], None, {"cpu": 0.2}, "USD")
    data = records.to_json(table)
    data["lines"][0]["epoch_cost"] *= 2
    with pytest.raises(records.RecordError, match="epoch_cost"):
        records.from_json(CostTable, data, "cost.json")


def test_no_price_for_the_cpu_is_refused() -> None:
    with pytest.raises(ValueError, match="config key cost.per_hour: no price for the cpu"):
        cost.cost_table([CPU], None, {"cuda": 1.0}, "USD")
