"""The Northstar records (records/northstar.py): their files round-trip, their invariants hold, a
damaged or older file is refused naming the field; the report sections render from them."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from accel_choice import records
from accel_choice.io import atomic
from accel_choice.records import RecordError
from accel_choice.records.northstar import (
    FittedStandardizer,
    GradientVariance,
    NorthstarHistory,
    NorthstarPrepare,
    NumericCheck,
    SeedLimits,
    Spread,
    UserTableSource,
)
from accel_choice.records.time_to_target import TimeToTarget
from builders_northstar import (
    SHA_A,
    SHA_B,
    gradient_variance_record,
    history_record,
    prepare_record,
    seed_limits_record,
    time_to_target_record,
    variance_row,
)

BUILDERS = {
    NorthstarPrepare: prepare_record,
    NorthstarHistory: history_record,
    TimeToTarget: time_to_target_record,
    SeedLimits: seed_limits_record,
    GradientVariance: gradient_variance_record,
}


@pytest.mark.parametrize("cls", list(BUILDERS), ids=lambda cls: cls.SCHEMA)
def test_each_record_round_trips_through_its_file(tmp_path, cls):
    made = BUILDERS[cls]()
    atomic.write_record(tmp_path / "record.json", made)
    assert json.loads((tmp_path / "record.json").read_text())["schema"] == cls.SCHEMA
    assert records.read(cls, tmp_path / "record.json") == made


def test_a_user_table_source_round_trips_beside_the_generated_one(tmp_path):
    made = prepare_record(source=UserTableSource(kind="user table", path="orders.csv", sha256=SHA_A))
    atomic.write_record(tmp_path / "prepare.json", made)
    assert records.read(NorthstarPrepare, tmp_path / "prepare.json").source == made.source


def _damaged(tmp_path, made, edit):
    data = records.to_json(made)
    edit(data)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("cls", "edit", "message"),
    [
        (
            NorthstarPrepare,
            lambda d: d["splits"]["train"].update(positive_rate=1.0),
            r"splits\.train\.positive_rate: Input should be less than 1",
        ),
        (
            NorthstarPrepare,
            lambda d: d["source"].update(kind="download"),
            r"source: Input tag 'download' found using 'kind'",
        ),
        (NorthstarHistory, lambda d: d.update(test_evaluations=2), r"test_evaluations: Input should be 1 \(found 2\)"),
        (
            NorthstarHistory,
            lambda d: d["history"][1].update(epoch_s=-1.0),
            r"history\[1\]\.epoch_s: Input should be greater than 0",
        ),
        (
            TimeToTarget,
            lambda d: d["rows"][0]["seconds"].update(point="2.0"),
            r"rows\[0\]\.seconds\.point: Input should be a valid number",
        ),
        (
            SeedLimits,
            lambda d: d["statistical"]["log_loss"].update(std=-0.1),
            r"statistical\.log_loss\.std: Input should be greater than or equal to 0",
        ),
        (GradientVariance, lambda d: d.update(draws=1), r"draws: Input should be greater than or equal to 2"),
        (GradientVariance, lambda d: d["table"][0].pop("ratio"), r"table\[0\]\.ratio: Field required"),
    ],
    ids=[
        "prepare rate",
        "prepare source",
        "history test twice",
        "history epoch",
        "target seconds",
        "seed std",
        "variance draws",
        "variance ratio",
    ],
)
def test_a_damaged_file_is_refused_naming_the_field(tmp_path, cls, edit, message):
    path = _damaged(tmp_path, BUILDERS[cls](), edit)
    with pytest.raises(RecordError, match=rf"^{path}: {message}.*delete it and re-run the workflow"):
        records.read(cls, path)


def test_a_history_written_before_records_had_schemas_is_refused_saying_to_rerun(tmp_path):
    path = _damaged(tmp_path, history_record(), lambda d: [d.pop(key, None) for key in records.HEADER])
    with pytest.raises(
        RecordError, match="has no schema .*; this workflow reads northstar-history version 3: delete it"
    ):
        records.read(NorthstarHistory, path)


def test_a_not_finite_value_in_a_file_is_refused(tmp_path):
    path = tmp_path / "variance.json"
    path.write_text(json.dumps(records.to_json(gradient_variance_record())).replace('"sigma2": 1.6', '"sigma2": NaN'))
    with pytest.raises(RecordError, match="holds NaN"):
        records.read(GradientVariance, path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: prepare_record(standardizer=FittedStandardizer(fitted_on="train", mean=(0.0,), std=(1.0,))),
            "1 standardizer means for 2 feature columns",
        ),
        (lambda: prepare_record(split_column="a"), "are not all different"),
        (lambda: dataclasses.replace(history_record(), best_val_loss=0.1), "best_epoch 2 has val_loss 0.6"),
        (lambda: history_record(stopped_epoch=2), "not 1 to stopped_epoch 2"),
        (lambda: time_to_target_record(fastest="cpu B=64"), "fastest is 'cpu B=64' but the rows say 'cpu B=16'"),
        (lambda: dataclasses.replace(time_to_target_record().rows[0], seconds=None), "reached is True but"),
        (
            lambda: NumericCheck(
                seed=7, identical_weights=True, identical_loss_curves=True, state_sha256=(SHA_A, SHA_B)
            ),
            "identical_weights is True",
        ),
        (lambda: Spread(mean=0.5, std=0.1, min=0.6, max=0.7), "min 0.6 <= mean 0.5 <= max 0.7 does not hold"),
        (lambda: seed_limits_record(seeds=(7, 9)), "runs of seeds"),
        (lambda: variance_row(ratio=None), "null exactly where predicted is 0"),
        (lambda: variance_row(predicted=0.2), "above predicted_iid"),
        (lambda: gradient_variance_record(rows=8), "none above the 8 rows"),
    ],
    ids=[
        "standardizer",
        "split column",
        "best loss",
        "epochs",
        "fastest",
        "reached",
        "numeric",
        "spread",
        "seeds",
        "ratio",
        "factor",
        "batch size",
    ],
)
def test_invariants_hold_on_every_record(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_mean_of_equal_values_may_round_past_them():
    mean = float(np.mean([0.1] * 3))
    assert mean > 0.1
    assert Spread(mean=mean, std=0.0, min=0.1, max=0.1).mean == mean


def test_the_report_sections_render_from_the_records():
    from accel_choice.render import northstar

    target = time_to_target_record()
    rows = target.rows
    target = dataclasses.replace(target, rows=(dataclasses.replace(rows[0], test_roc_auc=None), rows[1]))
    selection = northstar.selection_section(target)
    assert (
        "**Fastest to target: cpu B=16.**" in selection and "| cpu | 64 | 2 | 2 | 0.6000 | not reached |" in selection
    )
    assert "| 0.4500 | — | 0.1500 |" in selection  # an undefined AUC
    # Issue 25: the fastest to target rests on one run per batch size, and says so
    assert "Each batch size is one run: its interval holds that run's epoch-to-epoch spread only" in selection
    seed = northstar.seed_section(seed_limits_record())
    assert "2 seeds at B=16: test log loss 0.4600 ± 0.0141 (0.4500–0.4700)" in seed and "`torch_threads`: 1, 2" in seed
    whole = variance_row(batch_size=256, measured=0.0, predicted=0.0, ratio=None, ratio_2se=None)
    variance = northstar.gradient_variance_section(gradient_variance_record(table=(variance_row(), whole)))
    assert "| 16 | 0.095 | 0.09412 | 0.1 | 1.009 ± 0.043 |" in variance
    assert "| 256 | 0 | 0 | 0.1 | — (B = N: no sampling noise predicted) |" in variance
    assert northstar.selection_section(None) == northstar.seed_section(None) == ""
