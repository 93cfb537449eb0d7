"""The timing job's envelope (measure.job): what it records, that it writes atomically, and that every
timing rule's script goes through it instead of a copy of it."""

from __future__ import annotations

import ast
import os
import re
import time
from pathlib import Path

import pytest
import torch

from accel_choice import records
from accel_choice.io import atomic, envinfo, imports
from accel_choice.measure import job as measure_job
from accel_choice.measure.job import Envelope, timing_job
from accel_choice.records import record
from accel_choice.records.environment import Environment
from accel_choice.records.sentinel import SentinelReadings

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
MEASURE = SCRIPTS / "accel_choice" / "measure"

# The envelope's parts: a timing job's script (or the measure module it calls) that calls one of these
# itself copies the envelope. The sentinel and meters of a narrower window than the whole job (after
# a warm-up, around one size) stay in the measure modules that time that window.
ENVELOPE_CALLS = {"time.time", "quick_environment", "write_record", "write_json", "write_text", "write_bytes"}
SCRIPT_ONLY_CALLS = {"Sentinel", "ForeignCpuMeter", "ForeignUserCpuMeter", "atomic_path"}


def timing_rules() -> dict[str, str]:
    """Each rule that takes the whole timing_slot (timing_slot=TIMING_JOB) in workflow/rules/*.smk, and its script."""
    found = {}
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"^rule ", path.read_text(), flags=re.MULTILINE)[1:]:
            if re.search(r"^\s+timing_slot=TIMING_JOB\b", block, flags=re.MULTILINE):
                script = re.search(r'script:\n\s+"\.\./scripts/(\w+\.py)"', block)
                assert script, f"{path.name}: timing rule {block.split(':', 1)[0]} runs no script"
                found[block.split(":", 1)[0].strip()] = script.group(1)
    return found


TIMING_RULES = timing_rules()


def _called(node: ast.Call) -> str:
    """The called name as written: `time.time`, `atomic.write_record` -> `write_record`, `Sentinel`."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "time":
            return f"time.{func.attr}"
        return func.attr
    return ""


def envelope_copies(source: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The calls in `source` that belong to the envelope (ENVELOPE_CALLS, SCRIPT_ONLY_CALLS less `allowed`)."""
    forbidden = (ENVELOPE_CALLS | SCRIPT_ONLY_CALLS) - allowed
    return sorted(
        f"line {node.lineno}: {_called(node)}()"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and _called(node) in forbidden
    )


def opens_the_envelope(source: str) -> bool:
    """`source` opens `timing_job(...)` as `name` and writes its record through it (`name.finish`, `name.write`)."""
    tree = ast.parse(source)
    imported = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "accel_choice.measure.job"
        and any(alias.name == "timing_job" for alias in node.names)
        for node in ast.walk(tree)
    )
    names = {
        item.optional_vars.id
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        for item in node.items
        if isinstance(item.context_expr, ast.Call)
        and _called(item.context_expr) == "timing_job"
        and isinstance(item.optional_vars, ast.Name)
    }
    writes = any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("finish", "write")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
        for node in ast.walk(tree)
    )
    return imported and bool(names) and writes


# ---------------------------------------------------------------- every timing job goes through it


def test_the_timing_rules_are_found() -> None:
    """The list the checks below run over: every rule named time_* and the Northstar training."""
    assert {"time_cpu_training", "time_gpu_training", "time_load_convert", "time_transfer"} <= set(TIMING_RULES)
    assert {"time_cost_model", "time_scale", "time_scale_step", "train_northstar"} <= set(TIMING_RULES)
    every_time_rule = {
        name
        for path in (REPO / "workflow" / "rules").glob("*.smk")
        for name in re.findall(r"^rule (time_\w+):", path.read_text(), flags=re.MULTILINE)
    }
    assert every_time_rule <= set(TIMING_RULES)


@pytest.mark.parametrize("rule", sorted(TIMING_RULES))
def test_each_timing_script_writes_its_record_through_the_envelope(rule: str) -> None:
    source = (SCRIPTS / TIMING_RULES[rule]).read_text()
    assert opens_the_envelope(source), f"{TIMING_RULES[rule]}: no `with timing_job(...) as e:` ... `e.finish(...)`"
    assert envelope_copies(source) == [], f"{TIMING_RULES[rule]} copies the envelope instead of using measure.job"


@pytest.mark.parametrize("rule", sorted(TIMING_RULES))
def test_the_measure_modules_a_timing_script_runs_leave_the_envelope_to_it(rule: str) -> None:
    """The measure functions a timing script calls (training, grid, loadconv, transfer, scale...), found by its
    import closure, leave the wall interval, the environment and the write to the envelope; their own
    sentinels and meters time narrower windows than the whole job."""
    modules = [
        path
        for path in imports.closure(SCRIPTS / TIMING_RULES[rule], SCRIPTS)
        if path.parent == MEASURE and path.name != "job.py"
    ]
    assert modules, f"{TIMING_RULES[rule]} imports no measure module"
    found = {path.name: envelope_copies(path.read_text(), allowed=frozenset(SCRIPT_ONLY_CALLS)) for path in modules}
    assert {name: calls for name, calls in found.items() if calls} == {}


# Analysis and drawing belong to the jobs that read the records: scipy alone costs a timing job about a
# second of start-up (and a GPU machine may lack it). These timing jobs compute an interval of their own
# measurement as they finish, and may import it: the Northstar run its test ROC AUC interval, the
# streaming study its rates.
MAY_ANALYZE = {"train_northstar", "time_scale", "time_scale_step"}


@pytest.mark.parametrize("rule", sorted(set(TIMING_RULES) - MAY_ANALYZE))
def test_a_timing_job_imports_no_analysis_or_drawing_library(rule: str) -> None:
    from conftest import _needs

    needs = _needs(SCRIPTS / TIMING_RULES[rule])
    assert "torch" in needs  # the closure is read: a timing job needs torch
    assert not needs & {"scipy", "matplotlib", "sklearn"}, f"{TIMING_RULES[rule]} needs {sorted(needs)}"


def test_a_timing_script_that_copies_the_envelope_is_caught() -> None:
    copied = (
        "import time\n"
        "from accel_choice.io import atomic, envinfo\n"
        "started = time.time()\n"
        "sentinel = Sentinel(device)\n"
        "atomic.write_record(out, Job(wall_interval=(started, time.time()), environment=envinfo.quick_environment(1)))\n"
    )
    assert not opens_the_envelope(copied)
    assert envelope_copies(copied) == [
        "line 3: time.time()",
        "line 4: Sentinel()",
        "line 5: quick_environment()",
        "line 5: time.time()",
        "line 5: write_record()",
    ]
    half = "from accel_choice.measure.job import timing_job\nwith timing_job(out, seed=1) as e:\n    pass\n"
    assert not opens_the_envelope(half)  # opened, but the record is written some other way (or not at all)


# ---------------------------------------------------------------- the envelope itself


@record(schema="test_envelope_job", version=1)
class Timed:
    value: int
    wall_interval: tuple[float, float]
    environment: Environment


@record(schema="test_envelope_bracketed", version=1)
class Bracketed:
    value: int
    environment: Environment
    foreign_cpu_share: float | None
    sentinel: SentinelReadings


def test_the_wall_interval_spans_the_body_and_the_record_reads_back(tmp_path: Path) -> None:
    before = time.time()
    with timing_job(tmp_path / "job.json", seed=11) as envelope:
        time.sleep(0.05)
        made = envelope.finish(Timed, value=3)
    after = time.time()
    start, end = made.wall_interval
    assert before <= start <= end <= after and end - start >= 0.05
    assert made.environment.seed == 11 and made.environment.python_version == envinfo.quick_environment().python_version
    assert records.read(Timed, tmp_path / "job.json") == made


def test_the_environment_is_described_after_the_wall_interval_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = envinfo.quick_environment
    monkeypatch.setattr(measure_job.envinfo, "quick_environment", lambda seed: calls.append(time.time()) or real(seed))
    made = Envelope(seed=1).record(Timed, value=1)
    assert len(calls) == 1 and calls[0] >= made.wall_interval[1]


def test_a_failure_inside_the_body_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(ZeroDivisionError):
        with timing_job(tmp_path / "job.json", seed=1) as envelope:
            1 / 0
            envelope.finish(Timed, value=1)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_the_earlier_file_whole_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "job.json"
    with timing_job(target, seed=1) as envelope:
        earlier = envelope.finish(Timed, value=1)

    def broken(source: str, destination: str) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(atomic.os, "replace", broken)
    with pytest.raises(OSError, match="disk gone"):
        with timing_job(target, seed=1) as envelope:
            envelope.finish(Timed, value=2)
    assert records.read(Timed, target) == earlier
    assert [path.name for path in tmp_path.iterdir()] == ["job.json"]


def test_a_job_that_ends_without_its_record_or_writes_it_twice_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="without writing its record"):
        with timing_job(tmp_path / "job.json", seed=1):
            pass
    with pytest.raises(RuntimeError, match="written once"):
        with timing_job(tmp_path / "job.json", seed=1) as envelope:
            envelope.finish(Timed, value=1)
            envelope.finish(Timed, value=2)
    with pytest.raises(ValueError, match="no output file"):
        Envelope(seed=1).finish(Timed, value=1)


def test_the_job_cannot_set_what_the_envelope_records() -> None:
    with pytest.raises(TypeError, match="wall_interval: set by the timing job's envelope"):
        Envelope(seed=1).record(Timed, value=1, wall_interval=(0.0, 1.0))
    with pytest.raises(TypeError, match="Timed has no field foreign_cpu_share, sentinel"):
        Envelope(seed=1, sentinel=torch.device("cpu"), meter=True).record(Timed, value=1)


def test_the_sentinel_is_timed_when_the_envelope_opens_and_the_meter_brackets_the_job(tmp_path: Path) -> None:
    with timing_job(tmp_path / "job.json", seed=1, sentinel=torch.device("cpu"), meter=True) as envelope:
        assert len(envelope.sentinel.seconds) == 1  # timed at the start
        envelope.sentinel.tick()
        made = envelope.finish(Bracketed, value=1)
    assert len(made.sentinel.seconds) == 2 and made.sentinel.workload.startswith("cpu:")
    if os.path.exists("/proc/stat"):
        assert made.foreign_cpu_share is not None and made.foreign_cpu_share >= 0
    assert records.read(Bracketed, tmp_path / "job.json") == made
