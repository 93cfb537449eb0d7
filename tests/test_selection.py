"""Northstar model selection: split, standardisation, early stopping, test-once, time-to-target, seed limits."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from accel_choice.measure import datagen, northstar
from accel_choice.analyze import selection
from accel_choice.measure.model import build_model, state_sha256
from accel_choice.records.northstar import FittedStandardizer
from accel_choice.render import northstar as northstar_render
from builders_northstar import (
    SHA_B,
    history_record,
    northstar_environment,
    prepare_record,
    seed_limits_record,
    seed_run,
)

RATIOS = {"train": 0.6, "val": 0.2, "test": 0.2}


def test_split_is_stratified_deterministic_and_complete():
    target = np.array([1] * 100 + [0] * 400, dtype=np.float32)
    labels = selection.stratified_split(target, RATIOS, seed=3)
    assert np.array_equal(labels, selection.stratified_split(target, RATIOS, seed=3))
    assert not np.array_equal(labels, selection.stratified_split(target, RATIOS, seed=4))
    assert sorted(set(labels)) == ["test", "train", "val"]
    for name, share in RATIOS.items():
        assert (labels == name).sum() == round(500 * share)
        assert target[labels == name].mean() == pytest.approx(0.2)  # every split keeps the late rate


def test_split_ratios_must_add_up_to_one():
    with pytest.raises(ValueError, match="add up to 1"):
        selection.stratified_split(np.zeros(10), {"train": 0.5, "val": 0.2, "test": 0.2}, 0)


def test_a_split_with_one_class_is_refused_naming_split_rows_and_classes():
    # 3 late orders: round(0.6 * 3) = 2 to train, round(0.2 * 3) = 1 to val, none left for test;
    # 37 on time: 22, 7 and 8.
    target = np.array([1] * 3 + [0] * 37, dtype=np.float32)
    labels = selection.stratified_split(target, RATIOS, seed=0)
    with pytest.raises(ValueError) as error:
        selection.check_split_classes(target, labels, "orders.csv")
    assert str(error.value) == (
        "orders.csv: the test split has 8 rows: 8 of class 0, 0 of class 1. Every split needs both classes: use a "
        "table with more rows of the rarer class, or other selection.split ratios (a larger share for that split)"
    )


def test_every_split_with_both_classes_passes():
    target = np.array([1] * 5 + [0] * 35, dtype=np.float32)
    selection.check_split_classes(target, selection.stratified_split(target, RATIOS, seed=0), "orders.csv")


def test_split_column_takes_a_free_name():
    assert selection.split_column_name(["a", "b", "late"]) == "split"
    assert selection.split_column_name(["split", "b", "late"]) == "split_1"
    assert selection.split_column_name(["split", "split_1", "late"]) == "split_2"


def test_load_splits_reads_the_split_column_named_in_the_metadata(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A feature called "split" beside the labels, as prepare_northstar writes it.
    path = tmp_path / "splits.parquet"
    pq.write_table(pa.table({"split": [1.0, 2.0, 3.0], "late": [0, 1, 1], "split_1": ["train", "train", "test"]}), path)
    meta = prepare_record(
        feature_columns=("split",),
        target_column="late",
        split_column="split_1",
        standardizer=FittedStandardizer(fitted_on="train", mean=(0.0,), std=(1.0,)),
    )
    splits = northstar.load_splits(path, meta)
    assert splits["train"][0].tolist() == [[1.0], [2.0]] and splits["test"][1].tolist() == [1.0]
    assert splits["val"][0].shape == (0, 1)


def test_standardizer_uses_train_statistics_only():
    x = np.array([[1.0, 5.0], [3.0, 5.0], [100.0, 7.0]], dtype=np.float32)
    labels = np.array(["train", "train", "test"])
    standardizer = selection.Standardizer.fit(x[labels == "train"])
    assert standardizer.mean == (2.0, 5.0)
    assert standardizer.std == (1.0, 1.0)  # the constant column keeps std 1 instead of dividing by zero
    splits = northstar.split_table(x, np.array([0, 1, 1.0]), labels, standardizer)
    assert splits["train"][0].tolist() == [[-1.0, 0.0], [1.0, 0.0]]
    assert splits["test"][0].tolist() == [[98.0, 2.0]]  # the test row did not move the statistics


@pytest.mark.parametrize(
    ("losses", "patience", "stop_epoch", "best_epoch"),
    [
        ([1.0, 0.9, 0.8, 0.85, 0.84, 0.83], 3, 6, 3),  # three epochs without improvement after the best
        ([1.0, 0.9, 0.8, 0.7], 2, None, 4),  # keeps improving: never stops
        ([1.0, 1.0, 1.0], 1, 2, 1),  # equal is no improvement
        ([1.0, 0.99995, 0.9], 2, None, 3),  # a gain below min_delta is no improvement; 0.9 is
    ],
)
def test_early_stopping_on_scripted_losses(losses, patience, stop_epoch, best_epoch):
    stopper = selection.EarlyStopping(patience=patience, min_delta=1e-4)
    stopped = None
    for epoch, loss in enumerate(losses, start=1):
        _, stop = stopper.update(epoch, loss)
        if stop:
            stopped = epoch
            break
    assert stopped == stop_epoch
    assert stopper.best_epoch == best_epoch


def test_early_stopping_rejects_negative_patience():
    with pytest.raises(ValueError, match="patience"):
        selection.EarlyStopping(patience=-1, min_delta=0.0)


def test_metrics_on_known_values():
    y = np.array([0, 0, 1, 1.0])
    p = np.array([0.1, 0.4, 0.35, 0.8])
    metrics = selection.classification_metrics(y, p)
    assert metrics.roc_auc == pytest.approx(0.75)
    assert metrics.brier == pytest.approx((0.01 + 0.16 + 0.4225 + 0.04) / 4)
    assert metrics.accuracy_at_0_5 == pytest.approx(0.75)
    assert metrics.log_loss == pytest.approx(-np.mean(np.log([0.9, 0.6, 0.35, 0.8])))
    assert selection.roc_auc(np.array([0, 1.0]), np.array([0.5, 0.5])) == pytest.approx(0.5)  # a tie counts half
    assert math.isnan(selection.roc_auc(np.array([1, 1.0]), np.array([0.2, 0.3])))
    # One class: AUC is undefined, and the record holds null, not NaN (JSON has none).
    assert selection.classification_metrics(np.array([1, 1.0]), np.array([0.2, 0.3])).roc_auc is None


def test_held_out_test_set_refuses_a_second_look():
    x, y = torch.randn(20, 3), (torch.rand(20) > 0.5).float()
    test_set = northstar.HeldOutTestSet(x, y)
    model = build_model(3, 4, 0)
    assert test_set.evaluate(model).rows == 20
    with pytest.raises(RuntimeError, match="already evaluated"):
        test_set.evaluate(model)


@pytest.fixture(scope="module")
def northstar_splits():
    dataset = datagen.make_northstar(400, 0.25, 11)
    labels = selection.stratified_split(dataset.target, RATIOS, 11)
    standardizer = selection.Standardizer.fit(dataset.features[labels == "train"])
    return northstar.split_table(dataset.features, dataset.target, labels, standardizer)


def _train(splits, tmp_path, **overrides):
    settings = northstar.RunSettings(hidden=8, lr=0.01, patience=3, min_delta=1e-4, max_epochs=60)
    return northstar.train_with_early_stopping(
        splits["train"],
        splits["val"],
        batch_size=32,
        seed=5,
        settings=settings,
        checkpoint=tmp_path / "best.pt",
        **overrides,
    )


def test_the_warm_up_leaves_the_timed_runs_unchanged_and_writes_only_its_scratch(northstar_splits, tmp_path):
    """The untimed epochs of train_northstar's warm-up touch no seeded state: the same run, to the bit."""
    for folder in ("cold", "scratch", "warm"):
        (tmp_path / folder).mkdir()
    cold = _train(northstar_splits, tmp_path / "cold")
    scratch = tmp_path / "scratch"
    settings = northstar.RunSettings(hidden=8, lr=0.01, patience=3, min_delta=1e-4, max_epochs=60)
    northstar.warm_up(
        northstar_splits["train"], northstar_splits["val"], [32, 64], seed=5, settings=settings, scratch=scratch
    )
    assert sorted(path.name for path in scratch.iterdir()) == ["warm_up_bs32.pt", "warm_up_bs64.pt"]
    warm = _train(northstar_splits, tmp_path / "warm")
    assert warm.best_state_sha256 == cold.best_state_sha256
    assert [row.val_loss for row in warm.history] == [row.val_loss for row in cold.history]


def test_training_stops_early_and_the_checkpoint_is_the_best_state(northstar_splits, tmp_path):
    logged = []
    run = _train(northstar_splits, tmp_path, log_scalar=lambda name, value, step: logged.append((name, step)))
    val = [row.val_loss for row in run.history]
    assert run.stopped_early and run.stopped_epoch == run.best_epoch + 3
    assert run.best_val_loss == min(val) == val[run.best_epoch - 1]
    restored = northstar.restore_best(tmp_path / "best.pt", 8, 8, torch.device("cpu"))
    assert state_sha256(restored) == run.best_state_sha256
    history = run.history
    assert [row.epoch for row in history] == list(range(1, run.stopped_epoch + 1))
    assert history[-1].cumulative_s == pytest.approx(sum(row.epoch_s for row in history))
    steps = -(-northstar_splits["train"][0].shape[0] // 32)
    assert [row.updates for row in history] == [steps * e for e in range(1, run.stopped_epoch + 1)]
    assert ("loss/val", 1) in logged and ("throughput/samples_per_s", run.stopped_epoch) in logged


def test_restore_best_refuses_pickled_code(tmp_path):
    class Payload:
        def __reduce__(self):
            return (print, ("this must never run",))

    torch.save({"0.weight": Payload()}, tmp_path / "evil.pt")
    with pytest.raises(Exception, match="[Ww]eights only load failed|Unsupported"):
        northstar.restore_best(tmp_path / "evil.pt", 8, 8, torch.device("cpu"))


def test_time_to_target_picks_the_first_run_to_reach_it():
    histories = [
        history_record([0.70, 0.500], seconds_per_epoch=1.0, steps_per_epoch=10, batch_size=32),
        history_record([0.60, 0.504, 0.49], seconds_per_epoch=0.3, steps_per_epoch=3, batch_size=128),
        history_record([0.69], seconds_per_epoch=0.1, steps_per_epoch=1, batch_size=512),
    ]
    result = selection.time_to_target(histories, within=0.03)
    assert result.best_val_loss == 0.49
    assert result.target_val_loss == pytest.approx(0.5047)
    rows = {r.run: r for r in result.rows}
    assert (rows["cpu B=32"].epoch, rows["cpu B=32"].seconds.point, rows["cpu B=32"].updates) == (2, 2.0, 20)
    assert (rows["cpu B=128"].epoch, rows["cpu B=128"].seconds.point) == (2, 0.6)
    assert rows["cpu B=512"].reached is False and rows["cpu B=512"].seconds is None
    assert result.fastest == "cpu B=128"
    # Each row carries its run's early stopping and its one test evaluation, for the table and the report.
    assert (rows["cpu B=128"].best_epoch, rows["cpu B=128"].test_log_loss) == (3, histories[1].test.log_loss)


def test_time_to_target_skips_a_loss_that_was_not_finite():
    # A run that diverged after its best epoch: its null losses neither set the target nor reach it.
    result = selection.time_to_target(
        [history_record([0.7, 0.5, None]), history_record([None, 0.6], batch_size=64)], within=0.01
    )
    assert result.best_val_loss == 0.5 and [r.best_val_loss for r in result.rows] == [0.5, 0.6]
    assert result.fastest == "cpu B=16"


def test_seed_limits_measures_reproducibility(northstar_splits, tmp_path):
    environments = [northstar_environment(), northstar_environment(torch_threads=2)]
    result = northstar.seed_limits(
        northstar_splits,
        [1, 2, 3],
        tmp_path,
        batch_size=64,
        settings=northstar.RunSettings(hidden=8, lr=0.01, patience=2, min_delta=1e-4, max_epochs=15),
        environments=environments,
    )
    assert result.numeric.identical_weights is True
    assert result.numeric.identical_loss_curves is True
    assert len(result.runs) == 3
    spread = result.statistical.log_loss
    losses = [r.log_loss for r in result.runs]
    assert spread.min == min(losses) and spread.max == max(losses)
    assert spread.std == pytest.approx(float(np.std(losses, ddof=1)))
    assert len({r.best_state_sha256 for r in result.runs}) == 3  # different seeds, different models
    assert result.environmental.records_compared == 2 and result.environmental.differences == {"torch_threads": (1, 2)}
    assert result.batch_size == 64 and result.seeds == (1, 2, 3)


def test_seed_table_has_a_row_per_metric_and_per_check():
    rows = selection.seed_table(seed_limits_record())
    assert [row.check for row in rows] == [
        "statistical: test log_loss",
        "statistical: test roc_auc",
        "numeric: seed 7 twice, identical weights",
        "numeric: seed 7 twice, identical loss curves",
        "environmental: keys differing over 3 records",
    ]
    assert (rows[0].mean, rows[0].min, rows[0].max, rows[0].seeds, rows[0].batch_size) == (0.46, 0.45, 0.47, 2, 16)
    assert rows[2].value is True and rows[2].mean is None
    assert rows[4].value == "torch_threads"


@pytest.mark.parametrize(("rows", "batch_size", "fits"), [(120, 64, True), (120, 120, True), (120, 128, False)])
def test_a_batch_size_larger_than_the_training_split_is_refused_naming_both(rows, batch_size, fits):
    if fits:
        selection.check_batch_size_fits(rows, batch_size, "prepare.json", "selection.batch_sizes")
        return
    with pytest.raises(ValueError) as error:
        selection.check_batch_size_fits(rows, batch_size, "prepare.json", "selection.batch_sizes")
    assert str(error.value).startswith(
        "prepare.json: the training split has 120 rows, fewer than the batch size 128 "
        "(selection.batch_sizes); use batch sizes of at most 120 in selection.batch_sizes"
    )


def _jittered(history, factors):
    """The run with each epoch's time scaled by a factor (cumulative times follow)."""
    rows, total = [], 0.0
    for row, factor in zip(history.history, factors):
        total += row.epoch_s * factor
        rows.append(dataclasses.replace(row, epoch_s=row.epoch_s * factor, cumulative_s=total))
    return dataclasses.replace(history, history=tuple(rows))


def test_time_to_target_names_the_runs_it_cannot_tell_apart():
    """Two runs reaching the target at epoch 4 with epoch times that overlap (1.0 s ± 30 %) are one
    set; a run twice as slow per epoch is not in it. Each time carries its bootstrap interval."""
    losses = [0.7, 0.6, 0.55, 0.5, 0.49]
    factors = [0.7, 1.3, 1.0, 0.8, 1.2]
    histories = [
        _jittered(history_record(losses, batch_size=32), factors),
        _jittered(history_record(losses, batch_size=64), factors[::-1]),
        _jittered(history_record(losses, seconds_per_epoch=2.0, batch_size=128), factors),
    ]
    result = selection.time_to_target(histories, within=0.03)
    rows = {r.run: r for r in result.rows}
    assert result.fastest == "cpu B=32"  # 0.7 + 1.3 + 1.0 + 0.8 = 3.8 s against 1.2 + 0.8 + 1.0 + 1.3 = 4.3 s
    assert result.fastest_set == ("cpu B=32", "cpu B=64")
    for row in rows.values():
        assert row.seconds.low <= row.seconds.point <= row.seconds.high
        assert row.seconds.low < row.seconds.high  # the epochs' spread is in the interval
        assert (row.seconds.jobs, row.seconds.method) == (1, selection.TARGET_METHOD)
    assert "not measurably faster than cpu B=64" in northstar_render.fastest_words(result)


def test_time_to_target_with_steady_epochs_names_one_fastest():
    """Identical epoch times leave no doubt: the set is the fastest run alone."""
    histories = [
        history_record([0.7, 0.5], seconds_per_epoch=1.0, batch_size=32),
        history_record([0.7, 0.5], seconds_per_epoch=1.1, batch_size=64),
    ]
    result = selection.time_to_target(histories, within=0.03)
    assert result.fastest_set == ("cpu B=32",)
    assert northstar_render.fastest_words(result) == "cpu B=32"


def test_the_learning_curves_show_the_seed_runs_spread_at_their_batch_size(tmp_path):
    # issue 27: the Northstar curves carry the spread of the seed runs (min–max per epoch, at the seed batch
    # size's epoch times), not a single curve per batch size
    runs = [history_record([0.7, 0.6, 0.55]), history_record([0.7, 0.65], batch_size=64)]
    seeds = seed_limits_record(
        runs=(
            seed_run(val_losses=(0.72, 0.61, 0.50)),
            seed_run(seed=8, best_state_sha256=SHA_B, val_losses=(0.68, 0.57, None)),
        )
    )
    png, svg = tmp_path / "curves.png", tmp_path / "curves.svg"
    northstar_render.learning_curves(runs, 0.6, png, svg, seeds=seeds)
    text = svg.read_text()
    assert "2 seeds at B=16: min–max validation loss per epoch" in text
    plain = tmp_path / "plain.svg"
    northstar_render.learning_curves(runs, 0.6, tmp_path / "plain.png", plain)
    assert "seeds at B=" not in plain.read_text()
    # the band's corners: epochs 1 and 2 (two finite seeds each) at the B=16 run's times 1 s and 2 s
    figure_band = northstar_render._seed_band  # noqa: SLF001 - drawn on an axes we can read back
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    figure_band(axes, runs, seeds)
    (band,) = axes.collections
    vertices = band.get_paths()[0].vertices
    assert {tuple(v) for v in vertices} >= {(1.0, 0.68), (1.0, 0.72), (2.0, 0.57), (2.0, 0.61)}
    assert max(v[0] for v in vertices) == 2.0  # epoch 3 has one finite seed: no spread to draw
    plt.close(figure)
