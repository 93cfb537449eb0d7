"""The records base: typed, versioned, validated on read with the file and field named."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from accel_choice import records
from accel_choice.io import atomic, envinfo
from accel_choice.records import RecordError, record
from accel_choice.records.environment import Environment


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
