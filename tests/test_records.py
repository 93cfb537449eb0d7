"""The records base: typed, versioned, validated on read with the file and field named."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import sys
from pathlib import Path
import pkgutil
import re

import pytest

from accel_choice import records
from accel_choice.io import atomic, envinfo
from accel_choice.records import RecordError, record
from accel_choice.records.environment import Environment
from accel_choice.records.estimate import Estimate, PositiveEstimate, columns


@record
class Inner:
    seconds: records.Seconds
    label: str


@record(schema="test-outer", version=3)
class Outer:
    rows: tuple[Inner, ...]
    count: records.Count
    note: str | None = None


def _outer() -> Outer:
    return Outer(rows=(Inner(seconds=0.5, label="a"), Inner(seconds=1.5, label="b")), count=2)


def test_a_record_round_trips_through_its_file(tmp_path):
    path = tmp_path / "outer.json"
    atomic.write_record(path, _outer())
    data = json.loads(path.read_text())
    assert list(data)[:2] == ["schema", "schema_version"] and data["schema"] == "test-outer"
    assert data["schema_version"] == 3 and data["rows"][1] == {"seconds": 1.5, "label": "b"}
    assert records.read(Outer, path) == _outer()


def test_records_are_frozen_and_checked_when_made():
    outer = _outer()
    with pytest.raises(Exception):
        outer.count = 3  # type: ignore[misc]
    with pytest.raises(Exception, match="greater than 0"):
        Inner(seconds=-1.0, label="x")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["rows"][1].update(seconds=-1.0),
            r"rows\[1\]\.seconds: Input should be greater than 0 \(found -1\.0\)",
        ),
        (
            lambda d: d["rows"][0].update(seconds="0.5"),
            r"rows\[0\]\.seconds: Input should be a valid number \(found '0\.5'\)",
        ),
        (lambda d: d.update(count=True), r"count: Input should be a valid integer \(found True\)"),
        (lambda d: d.update(extra=1), r"extra: Unexpected keyword argument"),
        (lambda d: d["rows"][0].pop("label"), r"rows\[0\]\.label: Field required"),
    ],
    ids=["negative", "string", "bool for int", "unknown key", "missing field"],
)
def test_a_damaged_value_is_refused_naming_the_file_and_the_field(tmp_path, edit, message):
    path = tmp_path / "outer.json"
    data = records.to_json(_outer())
    edit(data)
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=rf"^{path}: {message}.*delete it and re-run the workflow"):
        records.read(Outer, path)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(tmp_path, literal):
    path = tmp_path / "outer.json"
    path.write_text(json.dumps(records.to_json(_outer())).replace('"count": 2', f'"count": {literal}'))
    with pytest.raises(RecordError, match=f"holds {literal}"):
        records.read(Outer, path)


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ({}, "has no schema \\(written by a workflow before records were versioned\\)"),
        ({"schema": "test-outer", "schema_version": 2}, "has schema test-outer version 2"),
        ({"schema": "training-job", "schema_version": 3}, "has schema training-job version 3"),
    ],
    ids=["older workflow", "older version", "other record"],
)
def test_a_record_of_another_schema_is_refused_saying_to_rerun(tmp_path, header, said):
    path = tmp_path / "outer.json"
    body = {k: v for k, v in records.to_json(_outer()).items() if k not in records.HEADER}
    path.write_text(json.dumps({**header, **body}))
    with pytest.raises(RecordError, match=f"{said}; this workflow reads test-outer version 3: delete it and re-run"):
        records.read(Outer, path)


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "missing"), ("", "not valid JSON"), ('{"rows": ', "not valid JSON"), (b"\xff\xfe", "cannot be read")],
)
def test_a_missing_or_unreadable_file_is_named(tmp_path, content, said):
    path = tmp_path / "outer.json"
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(RecordError, match=f"^{path}: {said}"):
        records.read(Outer, path)


def test_the_quick_environment_is_a_record_that_round_trips():
    environment = envinfo.quick_environment(seed=7)
    assert isinstance(environment, Environment) and environment.seed == 7
    assert records.from_json(Environment, records.to_json(environment), "here") == environment
    assert not any(isinstance(v, float) and math.isnan(v) for v in records.to_json(environment).values())


def test_the_environment_holds_this_nodes_memory_read_from_meminfo_or_psutil(tmp_path, monkeypatch):
    psutil = pytest.importorskip("psutil")
    memory = envinfo.quick_environment().host_memory_bytes
    if Path(envinfo.MEMINFO).exists():
        kib = next(
            line.split()[1] for line in Path(envinfo.MEMINFO).read_text().splitlines() if line.startswith("MemTotal:")
        )
        assert memory == int(kib) * 1024
    read = envinfo.host_memory_bytes.__wrapped__  # past the per-process cache
    monkeypatch.setattr(envinfo, "MEMINFO", str(tmp_path / "no-meminfo"))
    assert read() == psutil.virtual_memory().total > 0
    monkeypatch.setitem(sys.modules, "psutil", None)  # neither can tell
    assert read() is None


# Record fields still spelled as a flattened statistic (module.Record.field). A statistic with an interval
# is one records.estimate.Estimate field; this list only shrinks as record modules are converted.
LEGACY_STATISTIC_FIELDS = {
    "breakeven.BreakEvenSummary.break_even_high",
    "breakeven.BreakEvenSummary.break_even_low",
    "breakeven.BreakEvenSummary.sweep_max",
    "breakeven.BreakEvenSummary.sweep_min",
    "loads.LoadCell.read_s_median",
    "loads.LoadCell.to_numpy_s_median",
    "loads.LoadCell.to_pandas_s_median",
    "loads.LoadCell.to_torch_s_median",
    "loads.LoadCell.total_s_iqr",
    "loads.LoadCell.total_s_max",
    "loads.LoadCell.total_s_min",
    "cost_model.FitPoint.epoch_s_max",
    "cost_model.FitPoint.epoch_s_min",
    "sentinel.SentinelJob.over_run_median",
    "training.TrainingCell.context_startup_s_median",
    "training.TrainingCell.epoch_memory_bytes_max",
    "training.TrainingCell.eval_accuracy_median",
    "training.TrainingCell.loadavg_max",
    "training.TrainingCell.mean_train_loss_median",
    "training.TrainingCell.peak_memory_bytes_max",
    "training.TrainingCell.warmup_first_over_steady_median",
}
FLATTENED = re.compile(r".+_(ci_low|ci_high|low|high|median|min|max|iqr)$")


def _record_types():
    for info in pkgutil.iter_modules(records.__path__):
        module = importlib.import_module(f"accel_choice.records.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__:
                yield info.name, name, value


def test_no_record_spells_a_statistic_as_flattened_fields_outside_the_estimate_type():
    found = {
        f"{module}.{name}.{field.name}"
        for module, name, cls in _record_types()
        if cls is not Estimate
        for field in dataclasses.fields(cls)
        if FLATTENED.match(field.name)
    }
    assert len(list(_record_types())) > 30  # the walk sees the records package
    new = sorted(found - LEGACY_STATISTIC_FIELDS)
    assert not new, f"make these one Estimate field (records/estimate.py), not flattened statistics: {new}"
    gone = sorted(LEGACY_STATISTIC_FIELDS - found)
    assert not gone, f"converted or removed: take them off LEGACY_STATISTIC_FIELDS: {gone}"


def test_an_estimate_is_checked_when_made_and_flattens_into_the_table_columns():
    estimate = Estimate(
        point=2.0, low=1.5, high=3.0, level=0.95, method="percentile bootstrap: jobs, then epochs", jobs=3
    )
    assert estimate.half_width_ratio == pytest.approx(0.375) and estimate.flags == ()
    assert columns("epoch_s", estimate) == {"epoch_s": 2.0, "epoch_s_ci_low": 1.5, "epoch_s_ci_high": 3.0}
    assert columns("speedup", None) == {"speedup": None, "speedup_ci_low": None, "speedup_ci_high": None}
    for bad in (dict(low=2.5), dict(high=1.9), dict(point=math.inf, high=math.inf), dict(jobs=-1), dict(level=1.5)):
        with pytest.raises(ValueError):
            Estimate(**{**dataclasses.asdict(estimate), **bad})
    with pytest.raises(ValueError):  # a time, a rate or a ratio of times is positive at both ends
        PositiveEstimate(**{**dataclasses.asdict(estimate), "low": -0.5})
    assert records.from_json(Estimate, records.to_json(estimate), "here") == estimate
    assert estimate.inverted(6.0) == Estimate(
        point=3.0, low=2.0, high=4.0, level=0.95, method=estimate.method, jobs=3
    )  # a rate from a time: the ends swap


def test_a_training_record_counts_skipped_scaler_steps_exactly_with_a_scaler():
    """scaler_skipped_steps: a count (at most the steps) with a GradScaler, null without one."""
    from builders_training import replaced, training_record

    fp16 = training_record(precision="fp16", device="cuda", placement="resident")
    assert fp16.grad_scaler and fp16.scaler_skipped_steps == 0
    assert replaced(fp16, scaler_skipped_steps=fp16.steps).scaler_skipped_steps == fp16.steps
    fp32 = training_record()
    assert fp32.scaler_skipped_steps is None
    for bad in (
        lambda: replaced(fp16, scaler_skipped_steps=None),
        lambda: replaced(fp16, scaler_skipped_steps=fp16.steps + 1),
        lambda: replaced(fp32, scaler_skipped_steps=0),
    ):
        with pytest.raises(ValueError, match="scaler_skipped_steps"):
            bad()
