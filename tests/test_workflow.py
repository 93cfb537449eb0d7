"""End-to-end: the Snakemake CLI on a tiny config in a temporary directory.

One real run (about a minute on 2 cores), then dry runs that count the jobs Snakemake
plans after one config change, then bad configs that must fail before any job runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from accel_choice import records
from accel_choice.records.loads import LoadConvertJob
from accel_choice.records.northstar import (
    GradientVariance,
    NorthstarHistory,
    NorthstarPrepare,
    SeedLimits,
)
from accel_choice.records.time_to_target import TimeToTarget
import workflow_runs
from workflow_runs import REPO, SCHEMA, TINY, checkout, copy_of, planned_jobs, seeded, snakemake

pytestmark = pytest.mark.workflow

TINY_SPLIT = {"train": 0.6, "val": 0.2, "test": 0.2}  # the schema's default selection.split


# The planner's jobs that fit the cost models (what a change to the fit's inputs re-runs), and all four.
PLANNER_FIT = {"planner_cost_model": 1, "planner_break_even": 1, "planner_scenario": 1}
PLANNER = {**PLANNER_FIT, "planner_flop_check": 1}


def changed(**overrides: dict) -> dict:
    config = json.loads(json.dumps(TINY))
    for section, values in overrides.items():
        if isinstance(values, dict):
            config.setdefault(section, {}).update(values)
        else:
            config[section] = values
    return config


@pytest.fixture(scope="session")
def timeline(shared_run: dict) -> dict:
    """The shared tiny run's interruptions and resumes (tests/workflow_runs.py: made once a session)."""
    return shared_run


@pytest.fixture(scope="session")
def finished(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This process's copy of the shared finished run: the tests that take it may write to it (dry runs,
    refused configs, Snakemake's HTML report), never to the shared one."""
    return copy_of(pristine, tmp_path_factory.mktemp("finished") / "run")


def read(path: Path):
    return json.loads(path.read_text())


def test_interrupted_runs_keep_what_finished_and_rerun_only_the_rest(timeline: dict) -> None:
    for stop, after in (("sigint", "after_sigint"), ("sigkill", "after_sigkill")):
        done, in_flight = timeline[stop]["done"], timeline[stop]["in_flight"]
        for path, mtime in done.items():  # nothing that had finished was lost or redone
            assert timeline["final"][path] == mtime, f"{path} was re-run after {stop}"
        # The interrupted job's output - absent, or written after the signal - is never taken
        # as a result: Snakemake marks it incomplete and the resume measures it again.
        assert in_flight not in timeline[after], f"{stop}: {in_flight} counted as finished"
        assert timeline["final"][in_flight] > timeline[stop]["killed_at"], f"{stop}: {in_flight} was not re-run"
    assert timeline["unlock"].returncode == 0
    assert len(timeline["final"]) == 3 + 3 + 3  # CPU training, load/convert, the grid: one job per repeat each


def started_timing_repeats(log: str) -> list[tuple[str, int]]:
    """(rule, repeat) of every timing job in the order Snakemake's log shows them starting."""
    started, rule = [], None
    for line in log.splitlines():
        if found := re.match(r"^(?:local)?rule (\w+):$", line):
            rule = found.group(1)
        elif rule and rule.startswith("time_") and (found := re.search(r"^\s+wildcards: .*\brepeat=(\d+)", line)):
            started.append((rule, int(found.group(1))))
            rule = None
    return started


def test_timing_jobs_run_repeat_by_repeat(timeline: dict) -> None:
    """Repeat r of every timing cell starts before repeat r+1 of any (priority: repeat_priority), so a
    slow minute lands on one repeat of many cells, not on every repeat of one. The data jobs go first
    (DATA_PRIORITY): else the planner's grid, which needs no data, ran its later repeats while the data
    waited. Each invocation of the shared run shows it: from scratch until Ctrl-C, resumed until a hard
    kill, resumed to the end."""
    workdir = Path(timeline["workdir"])
    logs = [(workdir / f"interrupted-{name}.log").read_text() for name in ("SIGINT", "SIGKILL")]
    started = []
    for log in [*logs, timeline["resume"].stdout + timeline["resume"].stderr]:
        repeats = [repeat for _, repeat in started_timing_repeats(log)]
        assert repeats == sorted(repeats), (
            f"a later repeat started before an earlier one: {started_timing_repeats(log)}"
        )
        started += started_timing_repeats(log)
    assert {rule for rule, _ in started} >= {"time_cpu_training", "time_load_convert", "time_cost_model"}, started
    assert {repeat for _, repeat in started} == {0, 1, 2}, started


def test_a_second_invocation_meets_the_lock(timeline: dict) -> None:
    # Without rerun-incomplete (set in profiles/default) Snakemake 9 would stop earlier, on the
    # running job's outputs being "incomplete", and suggest --rerun-incomplete: wrong advice
    # while another run is active. With it, the second invocation stops at the lock.
    second = timeline["sigint"]["second"]
    assert second.returncode != 0
    output = second.stdout + second.stderr
    assert "cannot be locked" in output, output[-2000:]
    assert "Job stats" not in output


def test_resumed_report_has_the_structure_of_a_clean_run(finished: Path) -> None:
    report = (finished / "results/REPORT.md").read_text()
    headings = [line for line in report.splitlines() if line.startswith("## ")]
    assert headings == [
        "## GPU decision sheet (section 28.3.5)",
        "## CPU baseline: one training epoch (ms, geometric mean of the jobs' median epochs)",
        "## Full path per epoch on the benchmark matrix (ms, sums of medians)",
        "## Northstar model selection: early stopping, test once, time to target",
        "## Seed limits (measured)",
        "## Gradient variance vs batch size (the 1/B rule, measured)",
        "## Load and convert (ms, medians over repeats)",
        "## Theoretical estimates (computed, not measured)",
        "## FLOP formula against torch's FLOP counter",
        "## Planner: the scale scenario (exercise 4; computed, not measured)",
        "## Planner: cost model and break-even (modelled)",
        "## Data",
        "## The run's noise floor (drift sentinel)",
        "## Accuracy: the pipeline against a plain loop",
        "## Measurement conditions and flags",
        "## Environment",
        "## Resources per rule (Snakemake `benchmark:` beside the in-script timings)",
        "## Provenance",
        "## Reproduce",
    ]
    table = read(finished / "results/tables/cpu_training.json")["table"]
    assert [(r["batch_size"], r["loader"], r["repeats"]) for r in table] == [
        (16, "dataloader", 3),
        (16, "fastpath", 3),
        (64, "dataloader", 3),
        (64, "fastpath", 3),
    ]


def test_the_first_screen_says_what_narrowing_its_widest_interval_would_take(finished: Path) -> None:
    """Without a timing plan, the report's line is what analyze.timing_plan.narrowing makes of the run's records
    (none where the widest tie or growth is within timing.target, or the run was contaminated)."""
    from accel_choice.analyze.timing_plan import narrowing
    from accel_choice.io import paths
    from accel_choice.records.decision import Decision
    from accel_choice.records.resources import ResourceTable
    from accel_choice.records.training import TrainingTable
    from accel_choice.render.timing_plan import budget_hint

    results = finished / "results"
    verdict = records.read(Decision, results / paths.DECISION).verdict
    cells = records.read(TrainingTable, results / paths.CPU_TABLE).table
    resources = records.read(ResourceTable, results / paths.RESOURCES)
    narrowed = narrowing(verdict, 0.10, cells, resources)  # the schema's timing.target
    report = (results / "REPORT.md").read_text()
    assert (budget_hint(narrowed) in report) and (narrowed is not None) == ("Widest interval ±" in report)
    assert narrowed is None or narrowed.more_s > 0


def test_a_bad_config_leaves_existing_results_untouched(finished: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in (finished / "results").rglob("*") if p.is_file()}
    result = snakemake(finished, changed(timing={"repeats": 0}))
    assert result.returncode != 0 and "config key timing.repeats" in result.stderr
    assert {p: p.stat().st_mtime_ns for p in (finished / "results").rglob("*") if p.is_file()} == before


def test_an_edited_export_is_refused_naming_the_file(finished: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(finished, copy, ignore=shutil.ignore_patterns(".snakemake"))
    parquet = copy / "results/data/benchmark.parquet"
    data = bytearray(parquet.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one damaged byte
    parquet.write_bytes(bytes(data))
    # One load-and-convert job, run again on it (each of the three reads the same export)
    result = snakemake(copy, TINY, "--force", "results/timing/load_convert/rep0.json")
    assert result.returncode != 0
    logs = (copy / "results/logs/time_load_convert/rep0.log").read_text()
    assert "benchmark.parquet has sha256" in logs and "the file was changed or damaged" in logs
    assert "re-run the workflow to regenerate it with the export_data rule" in logs


def _vouch(record: Path) -> None:
    """Append to the record's job log the line its job writes for it (records.ledger): a test that plants a
    value in a record stands in for the job that would have measured it."""
    log = record.parent / json.loads(record.read_text())["log"]
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(records.ledger.line(record, log, record.read_bytes()) + "\n")


def test_a_timing_record_edited_by_hand_is_refused_and_nothing_vouches_for_it(finished: Path, tmp_path: Path) -> None:
    """The fast path's epochs at one batch size divided by 10 in every repeat (issue 28's probe): the
    next run re-reads them, refuses them naming the file and its job's log, and the report, the
    manifest and the tables stay as the jobs wrote them."""
    finished = copy_of(finished, tmp_path / "run")
    kept = {name: (finished / "results" / name).read_bytes() for name in ("REPORT.md", "MANIFEST.sha256")}
    for repeat in range(3):
        path = finished / f"results/timing/cpu/rep{repeat}.json"
        job = read(path)
        for record in job["records"]:
            if (record["loader"], record["batch_size"]) == ("fastpath", 64):
                record["epoch_s_each"] = [t / 10 for t in record["epoch_s_each"]]
        path.write_text(json.dumps(job, indent=2) + "\n")
    result = snakemake(finished, TINY, "--until", "aggregate_training")  # the first job that reads them
    assert result.returncode != 0
    assert "timing/cpu/rep0.json: its bytes (sha256 " in result.stderr
    assert "are not what its job wrote (sha256 " in result.stderr and "logs/time_cpu_training" in result.stderr
    assert "measure it again: delete it and re-run the workflow" in result.stderr
    assert "Traceback" not in result.stderr  # one line, no traceback (UserInputError)
    assert {name: (finished / "results" / name).read_bytes() for name in kept} == kept


def test_memory_is_judged_on_the_nodes_that_measured_not_on_the_one_that_decides(
    finished: Path, tmp_path: Path
) -> None:
    """The CPU table carries its timing nodes' memory (the smallest); made 1000 bytes, the decision
    and the planner's scenario find nothing fits, whatever the machine running them has."""
    copy = copy_of(finished, tmp_path / "copy")
    path = copy / "results/tables/cpu_training.json"
    table = read(path)
    jobs = [read(job) for job in (copy / "results/timing/cpu").glob("*.json")]
    assert table["host_memory_bytes"] == min(job["environment"]["host_memory_bytes"] for job in jobs) > 0
    table["host_memory_bytes"] = 1000
    path.write_text(json.dumps(table))
    _vouch(path)  # as if its job had written it: the ledger refuses an edit by hand (test above)
    result = snakemake(copy, TINY, "--until", "decide", "planner_scenario")
    assert result.returncode == 0, result.stderr[-3000:]
    memory = read(copy / "results/tables/decision.json")["verdict"]["memory"]
    assert (memory["host_memory_bytes"], memory["fits_host"]) == (1000, False)
    scenario = read(copy / "results/tables/scenario.json")
    assert (scenario["host_memory_bytes"], scenario["fits_in_host_memory"], scenario["must_stream"]) == (
        1000,
        False,
        True,
    )


def test_outputs_stay_inside_results(finished: Path) -> None:
    result = snakemake(finished, TINY, "--summary")
    assert result.returncode == 0, result.stderr[-2000:]
    files = [line.split("\t")[0] for line in result.stdout.splitlines()[1:] if line.strip()]
    assert files and all(f.startswith("results/") for f in files), [f for f in files if not f.startswith("results/")]


def test_run_writes_the_lab_report(finished: Path) -> None:
    results = finished / "results"
    report = (results / "REPORT.md").read_text()
    assert "**Verdict: CPU.**" in report
    assert "the GPU plan is theoretical and no speedup is claimed" in report
    # the first screen (everything above the decision sheet; landing.rst shows it too) answers at a glance
    first = report.split("\n## GPU decision sheet (section 28.3.5)", 1)[0].rstrip("\n")
    words = [len(line.split()) for line in first.splitlines()]
    assert len(words) <= 25 and sum(words) <= 220 and max(words) <= 40, (len(words), sum(words), max(words), first)
    assert "\n- Fastest CPU configuration: " in first and "\n- Step time grew " in first
    for step in range(1, 7):
        assert f"\n| {step} |" in report
    for name in (
        "figures/decision.png",
        "figures/decision.svg",
        "tables/cpu_training.csv",
        "tables/load_convert.csv",
        "tables/full_path.csv",
        "tables/decision.json",
        "env/collect_env.txt",
        "config.yaml",
    ):
        assert (results / name).stat().st_size > 0, name
    assert (results / "figures/decision.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_exercise2_json_has_the_textbook_shape(finished: Path) -> None:
    rows = read(finished / "results/s111_cpu_results.json")
    assert [row["batch_size"] for row in rows] == [16, 64]
    for row in rows:
        assert set(row) == {"batch_size", "samples", "epoch_s_runs", "epoch_s_median", "samples_per_s"}
        assert row["samples"] == 256
        assert len(row["epoch_s_runs"]) == 3
        assert row["samples_per_s"] == pytest.approx(256 / row["epoch_s_median"], rel=1e-12)
        assert row["epoch_s_median"] == statistics.median(row["epoch_s_runs"])  # the exercise's "their median"


def test_every_training_record_holds_the_invariants(finished: Path) -> None:
    files = sorted((finished / "results/timing/cpu").glob("*.json"))
    assert len(files) == 3  # one thread count × 3 repeats, each job every batch size
    initial = set()
    for path in files:
        job = read(path)
        assert sorted((r["batch_size"], r["loader"]) for r in job["records"]) == [
            (b, loader) for b in (16, 64) for loader in ("dataloader", "fastpath")
        ]
        assert all(r["same_final_weights_across_variants"] for r in job["records"])  # within each batch size
        for record in job["records"]:
            assert record["samples"] == 256 and all(record["invariants"].values())
            assert len(record["epoch_s_each"]) == len(record["eval_s_each"]) > 1  # one epoch and evaluation a round
            assert {"epoch_s", "eval_s", "samples_per_s"}.isdisjoint(record)  # the raw times only, stored once
            assert record["threads"] == 1
            # issue 26: the matmul precision set by config, the fused optimizer, no GradScaler on the CPU
            assert (record["matmul_precision"], record["optimizer_impl"]) == ("highest", "Adam fused")
            assert record["scaler_skipped_steps"] is None
            assert len(record["loadavg_before"]) == len(record["loadavg_after"]) == 3
            initial.add(record["initial_weights_sha256"])
        assert job["environment"]["torch_version"]
    assert len(initial) == 1, "every batch size must start from the same seeded weights"


def test_no_two_timing_jobs_overlapped(finished: Path) -> None:
    intervals = sorted(read(path)["wall_interval"] for path in (finished / "results/timing").rglob("*.json"))
    assert len(intervals) == 3 + 3 + 3  # CPU training, load/convert, the grid: one job per repeat each
    for (_, end), (start, _) in zip(intervals, intervals[1:]):
        assert start >= end, "two timing jobs measured at the same time"


def test_same_seed_gives_byte_identical_data(finished: Path, tmp_path: Path) -> None:
    meta = read(finished / "results/data/benchmark.meta.json")
    export = read(finished / "results/data/benchmark.export.json")
    from accel_choice.io import atomic

    assert atomic.sha256_file(finished / "results/data/benchmark.npy") == meta["file_sha256"]
    assert atomic.sha256_file(finished / "results/data/benchmark.parquet") == export["files"]["parquet"]["sha256"]
    assert export["files"]["parquet"]["schema"]["x00"] == "float"
    assert export["files"]["parquet"]["schema"]["y"] == "int8"


def test_second_run_has_nothing_to_do(finished: Path) -> None:
    assert planned_jobs(snakemake(finished, TINY, "-n")) == {}


def test_a_checkout_moved_with_its_results_plans_nothing(finished: Path, tmp_path: Path) -> None:
    # cp -a of a finished run: code inputs are relative to the working directory, so nothing changed.
    moved = copy_of(finished, tmp_path / "elsewhere" / "deeper" / "run")
    assert planned_jobs(snakemake(moved, TINY, "-n")) == {}


def _rules_of_scripts() -> dict[str, str]:
    """Rule name -> the script it runs, read from the rule files."""
    found = {}
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        for block in re.split(r"(?m)^(?=rule \w+:)", smk.read_text()):
            rule, script = re.match(r"rule (\w+):", block), re.search(r'script:\n\s+"\.\./scripts/(\w+\.py)"', block)
            if rule and script:
                found[rule.group(1)] = script.group(1)
    return found


@pytest.mark.parametrize("module", ["measure/contention.py", "analyze/stats.py", "render/decision.py"])
def test_editing_a_module_reruns_exactly_the_rules_whose_scripts_import_it(
    finished: Path, tmp_path: Path, module: str
) -> None:
    from accel_choice.io import imports

    copy = copy_of(finished, tmp_path / "run")
    edited = copy / "workflow/scripts/accel_choice" / module
    edited.write_text(edited.read_text() + "\n# an edit that changes the content\n")
    dry = snakemake(copy, TINY, "-n")
    assert dry.returncode == 0, dry.stderr[-2000:]
    # Each job block of the dry run names its rule and why it runs: its own changed input, or an
    # input another planned job will rewrite (Snakemake names only that reason for a job downstream
    # of one that re-runs).
    reasons = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", dry.stdout + dry.stderr):
        rule, reason = re.match(r"(?:local)?rule (\w+):", block), re.search(r"reason: (.*)", block)
        if rule and reason:
            reasons.setdefault(rule.group(1), set()).add(reason.group(1))
    scripts = REPO / "workflow/scripts"
    importing = {
        rule
        for rule, script in _rules_of_scripts().items()
        if (scripts / "accel_choice" / module).resolve() in imports.closure(scripts / script, scripts)
    }
    no_gpu = {"time_gpu_training", "time_transfer", "aggregate_gpu"}  # no GPU here: no jobs
    no_scale = {"time_scale", "time_scale_step", "scale_table"}  # the streaming study is off in TINY
    with_jobs = importing - no_gpu - no_scale
    assert with_jobs and with_jobs <= set(reasons), (with_jobs, sorted(reasons))
    for rule, why in reasons.items():
        if rule in importing:
            continue
        # A rule that does not import the module runs only because an upstream job rewrites its input.
        assert all("Updated input files" not in text and "updated by another job" in text for text in why), (rule, why)
    direct = {rule for rule, why in reasons.items() if any("Updated input files" in text for text in why)}
    assert direct and direct <= importing
    for rule in direct:
        assert any(f"workflow/scripts/accel_choice/{module}" in text for text in reasons[rule]), reasons[rule]


def test_changing_one_batch_size_reruns_the_cpu_timing_and_no_data_northstar_or_grid_job(finished: Path) -> None:
    result = snakemake(finished, changed(timing={"batch_sizes": [16, 32]}), "-n")
    plan = planned_jobs(result)
    # Every CPU job times every batch size (paired): all three re-run, and the dry run says why.
    # config_snapshot (results/config.yaml) re-runs on any change; decide reads the CPU table.
    assert "time_cpu_training" in result.stdout and "Params have changed since last execution" in result.stdout
    assert plan == {
        "time_cpu_training": 3,
        "profile_model": 1,  # counted at every timing batch size
        "aggregate_training": 1,
        "resource_table": 1,
        **PLANNER,
        "decide": 1,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


def test_reordering_the_selection_batch_sizes_retrains_nothing(finished: Path) -> None:
    plan = planned_jobs(snakemake(finished, changed(selection={"batch_sizes": [64, 16]}), "-n"))
    assert "train_northstar" not in plan and "seed_limits" not in plan, plan


def test_changing_a_selection_batch_size_retrains_the_northstar_job_and_does_not_resplit(finished: Path) -> None:
    # The split does not depend on the batch sizes: 64 -> 32 re-runs the one Northstar job of the device (every
    # batch size in one process), then what reads every history (selection, seed limits) or every job's
    # benchmark (the resource table) and the report; prepare_northstar stays.
    result = snakemake(finished, changed(selection={"batch_sizes": [16, 32]}), "-n")
    plan = planned_jobs(result)
    assert "results/northstar/cpu/bs32/history.json" in result.stdout
    # The decision reads the selection's epochs to target (the default of gpu.epochs): decide re-runs too.
    assert plan == {
        "decide": 1,
        "train_northstar": 1,
        "northstar_selection": 1,
        "seed_limits": 1,
        "resource_table": 1,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


def test_changing_the_bandwidth_reruns_only_the_planner_the_decision_and_report(finished: Path) -> None:
    # The assumed bandwidth enters the planner's curves and scenario (through its cost-model table's
    # copy rate) and the decision's transfer estimate; the FLOP check does not read it.
    plan = planned_jobs(snakemake(finished, changed(report={"bandwidth_gb_s": 16}), "-n"))
    assert plan == {
        **PLANNER_FIT,
        "decide": 1,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


def test_no_gpu_here_so_auto_planned_no_gpu_jobs(finished: Path) -> None:
    probe = read(finished / "results/env/devices.json")
    assert probe["cuda_available"] is False and probe["fingerprint"] == "none"
    assert not (finished / "results/timing/gpu").exists()
    assert (
        "| 3 | Transfer measured on its own (to(device) + synchronize) | not measurable here |"
        in (finished / "results/REPORT.md").read_text()
    )


def test_a_change_of_visible_devices_reruns_only_what_used_the_probe(finished: Path) -> None:
    # Switching accelerator changes the probe's fingerprint param, exactly as a new GPU would:
    # the probe and what reads it (the planner's scenario, the decision, the report) re-run, no CPU
    # measurement does.
    plan = planned_jobs(snakemake(finished, changed(accelerator="off"), "-n"))
    assert plan == {
        "probe_devices": 1,
        "planner_scenario": 1,
        "decide": 1,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


def test_require_plans_gpu_jobs_without_a_gpu_on_the_submit_host(finished: Path) -> None:
    plan = planned_jobs(snakemake(finished, changed(accelerator="require"), "-n"))
    assert plan == {
        "probe_devices": 1,
        "time_transfer": 3,
        "time_gpu_training": 6,
        "aggregate_gpu": 1,
        "train_northstar": 1,  # the cuda job: every selection batch size
        "northstar_selection": 1,
        "seed_limits": 1,
        "time_cost_model": 3,
        # The GPU's grid and table enter the fit; the FLOP check reads the CPU table alone.
        **PLANNER_FIT,
        "resource_table": 1,
        "decide": 1,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


def test_require_fails_clearly_on_a_machine_without_gpu(pristine: Path, tmp_path: Path) -> None:
    # On a copy of the finished run: its exported data are there, so only the probe and the job run.
    workdir = copy_of(pristine, tmp_path / "run")
    result = snakemake(workdir, changed(accelerator="require"), "results/timing/gpu/transfer.rep0.json")
    assert result.returncode != 0
    log = (workdir / "results/logs/time_transfer/rep0.log").read_text()
    assert "DeviceUnavailable: this job needs a CUDA device, but none is visible" in log
    assert not (workdir / "results/timing/gpu/transfer.rep0.json").exists()


def test_northstar_selection_outputs(finished: Path) -> None:
    import torch

    results = finished / "results"
    prepare = records.read(NorthstarPrepare, results / "northstar/prepare.json")
    import pyarrow.parquet as pq

    frame = pq.read_table(results / "northstar/splits.parquet").to_pandas()
    train = frame[frame["split"] == "train"][list(prepare.feature_columns)].to_numpy(dtype="float64")
    assert prepare.standardizer.mean == pytest.approx(train.mean(axis=0).tolist(), rel=1e-6)
    assert (prepare.splits.train.rows, prepare.splits.val.rows, prepare.splits.test.rows) == (120, 40, 40)
    for batch_size in (16, 64):
        run = records.read(NorthstarHistory, results / f"northstar/cpu/bs{batch_size}/history.json")
        assert (run.batch_size, run.device) == (batch_size, "cpu")  # one job wrote both: each its own record
        assert run.test_evaluations == 1 and 0 <= run.test.roc_auc <= 1
        assert run.best_val_loss == min(row.val_loss for row in run.history)
        state = torch.load(results / f"northstar/cpu/bs{batch_size}/best_model.pt", weights_only=True)
        assert set(state) == {"0.weight", "0.bias", "2.weight", "2.bias"}
        events = list((results / f"northstar/tensorboard/cpu_bs{batch_size}").glob("events.out.tfevents.*"))
        assert len(events) == 1 and events[0].stat().st_size > 0
    target = records.read(TimeToTarget, results / "tables/time_to_target.json")
    assert target.fastest in {"cpu B=16", "cpu B=64"}
    seed = records.read(SeedLimits, results / "northstar/seed_limits.json")
    assert seed.numeric.identical_weights is True and len(seed.runs) == 3
    # The seed-limits table is the seed_limits job's: one row per metric and check.
    assert [row["check"] for row in read(results / "tables/seed_limits.json")][:2] == [
        "statistical: test log_loss",
        "statistical: test roc_auc",
    ]
    variance = records.read(GradientVariance, results / "tables/gradient_variance.json")
    assert [row.batch_size for row in variance.table] == [1, 16, 64]
    report = (results / "REPORT.md").read_text()
    for heading in ("## Northstar model selection", "## Seed limits (measured)", "## Gradient variance vs batch size"):
        assert heading in report


def test_own_table_runs_and_a_bad_one_fails_before_training(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    # A feature called "split", the name of the split labels prepare_northstar adds: they take another.
    frame = pd.DataFrame({"a": rng.normal(size=200), "split": rng.normal(size=200)})
    frame["late"] = (frame["a"] + rng.normal(size=200) > 0.8).astype(int)
    frame.to_csv(tmp_path / "orders.csv", index=False)
    own = {"path": str(tmp_path / "orders.csv"), "target": "late", "features": ["a", "split"]}
    good = changed(data={"northstar": {"table": own}})
    seeded(tmp_path)
    assert "generate_northstar" not in planned_jobs(snakemake(tmp_path, good, "-n"))  # nobody asked for it
    loaded = "results/timing/load_convert/rep0.json"
    result = snakemake(tmp_path, good, "results/northstar/cpu/bs16/history.json", loaded)
    assert result.returncode == 0, result.stderr[-3000:]
    prepare = records.read(NorthstarPrepare, tmp_path / "results/northstar/prepare.json")
    assert prepare.source.kind == "user table" and prepare.split_column == "split_1"
    assert prepare.source.sha256 == hashlib.sha256((tmp_path / "orders.csv").read_bytes()).hexdigest()
    assert records.read(NorthstarHistory, tmp_path / "results/northstar/cpu/bs16/history.json").test.rows == 40
    # Issue 27: everything that speaks of the Northstar data is of your table - its metadata (the Data
    # section's source) and the files whose load and conversion are timed
    meta = read(tmp_path / "results/data/northstar.meta.json")
    assert meta["generator"]["files"] == [own["path"]] and meta["generator"]["sha256"] == [prepare.source.sha256]
    assert meta["rows"] == 200 and meta["feature_columns"] == ["a", "split"]
    timed = [load for load in records.read(LoadConvertJob, tmp_path / loaded).loads if load.dataset == "northstar"]
    assert timed and {(load.rows, load.features) for load in timed} == {(200, 2)}

    # The one Northstar job trained every selection batch size; the bad table stops before it runs again.
    trained = (tmp_path / "results/northstar/cpu/bs64/history.json").stat().st_mtime_ns
    frame.rename(columns={"split": "c"}).to_csv(tmp_path / "orders.csv", index=False)
    result = snakemake(tmp_path, good, "results/northstar/cpu/bs64/history.json")
    assert result.returncode != 0
    log = (tmp_path / "results/logs/import_northstar.log").read_text()
    assert "column(s) split not found; the table has a, c, late" in log
    assert (tmp_path / "results/northstar/cpu/bs64/history.json").stat().st_mtime_ns == trained


def test_own_table_smaller_than_a_batch_size_stops_the_northstar_job_before_it_trains(tmp_path: Path) -> None:
    # 200 orders: a training split of about 120 rows. The split is made once, whatever the batch
    # sizes; the Northstar job stops naming the rows and the batch size before it trains any.
    import numpy as np
    import pandas as pd
    from accel_choice.analyze.selection import stratified_split

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.normal(size=200)})
    frame["late"] = (frame["a"] + rng.normal(size=200) > 0.8).astype(int)
    frame.to_csv(tmp_path / "orders.csv", index=False)
    train_rows = int((stratified_split(frame["late"].to_numpy(), TINY_SPLIT, TINY["seed"]) == "train").sum())
    assert train_rows < 128
    own = {"path": str(tmp_path / "orders.csv"), "target": "late", "features": ["a"]}
    config = changed(data={"northstar": {"table": own}}, selection={"batch_sizes": [16, 128]})
    seeded(tmp_path)
    result = snakemake(tmp_path, config, "results/northstar/cpu/bs128/history.json")
    assert result.returncode != 0
    log = (tmp_path / "results/logs/train_northstar/cpu.log").read_text()
    assert (
        f"results/northstar/prepare.json: the training split has {train_rows} rows, fewer than the batch size 128 "
        f"(selection.batch_sizes); use batch sizes of at most {train_rows} in selection.batch_sizes"
    ) in log, log[-2000:]
    assert "Traceback" not in log and "Traceback" not in result.stderr
    assert records.read(NorthstarPrepare, tmp_path / "results/northstar/prepare.json").splits.train.rows == train_rows
    assert not (tmp_path / "results/northstar/cpu/bs128/history.json").exists()
    assert not (tmp_path / "results/northstar/cpu/bs16/history.json").exists()


def test_own_table_with_inf_in_val_and_test_rows_stops_at_import_northstar(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd
    from accel_choice.analyze.selection import stratified_split

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    frame["late"] = (frame["a"] + rng.normal(size=200) > 0.8).astype(int)
    # The rows the workflow will put into val and test (TINY's seed, the default ratios): the
    # training rows are clean, so the standardiser alone would not notice.
    labels = stratified_split(frame["late"].to_numpy(), TINY_SPLIT, TINY["seed"])
    frame.loc[np.flatnonzero(labels == "val")[0], "a"] = np.inf
    frame.loc[np.flatnonzero(labels == "test")[:2], "b"] = 1e39  # a float64, beyond float32: inf after the cast
    frame.to_csv(tmp_path / "orders.csv", index=False)
    own = {"path": str(tmp_path / "orders.csv"), "target": "late", "features": ["a", "b"]}
    result = snakemake(
        seeded(tmp_path), changed(data={"northstar": {"table": own}}), "results/northstar/cpu/bs16/history.json"
    )
    assert result.returncode != 0
    log = (tmp_path / "results/logs/import_northstar.log").read_text()
    assert (
        f"{tmp_path / 'orders.csv'}: column(s) a (1 row), b (2 rows) hold values that are not finite as float32" in log
    ), log[-2000:]
    assert "Traceback" not in log and "Traceback" not in result.stderr  # a user's mistake: one line
    assert not (tmp_path / "results/northstar/prepare.json").exists()
    assert not (tmp_path / "results/northstar/cpu").exists()


def test_changing_the_seed_reruns_everything(finished: Path) -> None:
    plan = planned_jobs(snakemake(finished, changed(seed=8), "-n"))
    assert plan == {
        "generate_benchmark": 1,
        "generate_northstar": 1,
        "export_data": 2,
        "time_load_convert": 3,
        "time_cpu_training": 3,
        "profile_model": 1,  # the model's initial weights follow the seed
        "aggregate_load_convert": 1,
        "aggregate_training": 1,
        "prepare_northstar": 1,
        "train_northstar": 1,
        "northstar_selection": 1,
        "seed_limits": 1,
        "gradient_variance": 1,
        "time_cost_model": 3,
        **PLANNER,
        "resource_table": 1,
        "decide": 1,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


BAD_CONFIGS = [
    ("negative batch size", {"timing": {"batch_sizes": [-16]}}, "batch_sizes"),
    ("zero batch size", {"timing": {"batch_sizes": [0, 16]}}, "batch_sizes"),
    ("empty batch sizes", {"timing": {"batch_sizes": []}}, "batch_sizes"),
    ("duplicate batch sizes", {"timing": {"batch_sizes": [16, 16]}}, "batch_sizes"),
    ("batch size larger than the data", {"timing": {"batch_sizes": [16, 512]}}, "timing.batch_sizes"),
    ("batch size as text", {"timing": {"batch_sizes": ["16"]}}, "batch_sizes"),
    ("repeats 0", {"timing": {"repeats": 0}}, "repeats"),
    ("planner sweep upside down", {"planner": {"sweep": {"rows": [1000, 10]}}}, "planner.sweep.rows"),
    (
        "planner grid too small to fit",
        {"planner": {"grid": {"rows": [16], "features": [4], "hidden": [8], "batch_sizes": [16, 64]}}},
        "planner.grid",
    ),
    (
        "GPU assumption of zero",
        {
            "planner": {
                "gpu_assumed": {
                    "seconds_per_step": 1e-4,
                    "tflop_per_s": 0,
                    "memory_gb_s": 1000,
                    "memory_gb": 80,
                    "startup_s": 0.3,
                }
            }
        },
        "planner.gpu_assumed.tflop_per_s",
    ),
    ("GPU assumption incomplete", {"planner": {"gpu_assumed": {"tflop_per_s": 20}}}, "planner.gpu_assumed"),
    ("unknown GPU profile", {"planner": {"gpu_profile": "h900"}}, "planner.gpu_profile"),
    ("unknown planner key", {"planner": {"epoch": 5}}, "planner"),
    ("unknown loader", {"timing": {"loaders": ["dataloader", "turbo"]}}, "loaders"),
    ("typo in a key", {"timing": {"batch_size": [16]}}, "batch_size"),
    ("bandwidth 0", {"report": {"bandwidth_gb_s": 0}}, "bandwidth_gb_s"),
    ("rows as a float", {"data": {"benchmark": {"rows": 256.5}}}, "rows"),
    ("late rate of 1", {"data": {"northstar": {"late_rate": 1.0}}}, "late_rate"),
    ("unknown precision", {"gpu": {"precisions": ["fp32", "fp8"]}}, "gpu.precisions"),
    ("speedup threshold below 1", {"gpu": {"speedup_threshold": 0.5}}, "gpu.speedup_threshold"),
    ("patience below 0", {"selection": {"patience": -1}}, "selection.patience"),
    ("split not adding up to 1", {"selection": {"split": {"train": 0.7, "val": 0.2, "test": 0.2}}}, "selection.split"),
    (
        "own table that does not exist",
        {"data": {"northstar": {"table": {"path": "/nonexistent/orders.csv", "target": "late", "features": ["a"]}}}},
        "data.northstar.table.path",
    ),
    (
        "own table path that is a directory",
        {"data": {"northstar": {"table": {"path": str(REPO / "config"), "target": "late", "features": ["a"]}}}},
        f"config key data.northstar.table.path: {REPO / 'config'} is a directory, not a file",
    ),
    ("learning rate NaN", {"model": {"lr": float("nan")}}, "config key model.lr: nan is not a finite number"),
    (
        "noise ratio inf",
        {"aggregate": {"noise_iqr_ratio": float("inf")}},
        "config key aggregate.noise_iqr_ratio: inf is not a finite number; allowed: a number > 0",
    ),
    ("seed written as a float", {"seed": 1000.0}, "config key seed: 1000.0 is not an integer"),
    ("seed beyond 64 bits", {"seed": 2**70}, "config key seed: 1180591620717411303424 is too large"),
    (
        "seed that overflows with the seed-limits offset",
        {"seed": 2**64 - 1},
        "config key seed: 18446744073709551615 is too large: the workflow seeds torch with seed + 2 (selection.seeds − 1), "
        "and torch accepts at most 2**64 − 1; allowed: an integer between 0 and 18446744073709551613",
    ),
]


def test_unknown_accelerator_mode_fails_naming_the_key(tmp_path: Path) -> None:
    result = snakemake(tmp_path, changed(accelerator="turbo"), "-n")
    assert result.returncode != 0
    assert "config key accelerator" in result.stdout + result.stderr
    assert not (tmp_path / "results").exists()


def _bad(override: dict) -> dict:
    """TINY with `override` merged in, as the CLI reads it back from a config file (YAML's floats, NaN, inf)."""
    config = json.loads(json.dumps(TINY))
    for section, values in override.items():
        if not isinstance(values, dict):  # a top-level key such as seed
            config[section] = values
            continue
        target = config.setdefault(section, {})
        for name, value in values.items():
            if isinstance(value, dict):
                target.setdefault(name, {}).update(value)
            else:
                target[name] = value
    return yaml.safe_load(yaml.safe_dump(config))


def _prepare(config: dict, configfiles: list[Path], monkeypatch: pytest.MonkeyPatch, where: Path) -> None:
    """What the Snakefile runs on the config when Snakemake parses it (measure.parse_time.prepare), in this
    process: every check that refuses a config before a job is planned is in it."""
    from accel_choice.io.provenance import INVOCATION_VARIABLE
    from accel_choice.measure.parse_time import prepare

    monkeypatch.setenv(INVOCATION_VARIABLE, "{}")  # prepare records the command line for the run's jobs
    monkeypatch.chdir(where)
    prepare(config, configfiles, SCHEMA)


@pytest.mark.parametrize(("case", "override", "key"), BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_is_refused_when_the_workflow_is_parsed_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, override: dict, key: str
) -> None:
    from accel_choice.records import UserInputError

    with pytest.raises(UserInputError) as refused:
        _prepare(_bad(override), [], monkeypatch, tmp_path)
    assert key in str(refused.value), case
    assert not (tmp_path / "results").exists()


# One refused config of each kind of check, through the CLI: the schema, a relation between keys, a file
# named by a key, the seed's range. The CLI shows prepare's message and plans no job; every case is refused
# by that one call (the test above).
CLI_BAD_CONFIGS = [
    case
    for case in BAD_CONFIGS
    if case[0]
    in {
        "negative batch size",
        "batch size larger than the data",
        "own table path that is a directory",
        "seed that overflows with the seed-limits offset",
    }
]


@pytest.mark.parametrize(("case", "override", "key"), CLI_BAD_CONFIGS, ids=[c[0] for c in CLI_BAD_CONFIGS])
def test_bad_config_fails_before_any_job_naming_the_key(tmp_path: Path, case: str, override: dict, key: str) -> None:
    result = snakemake(tmp_path, _bad(override), "-n")
    output = result.stdout + result.stderr
    assert result.returncode != 0, case
    assert key in output, output[-2000:]
    assert "Job stats" not in output
    assert not (tmp_path / "results").exists()


def _set_twice(nested: bool) -> tuple[str, str, list[int]]:
    """TINY's YAML with a key set twice: the text, the key and the two lines."""
    text = yaml.safe_dump(TINY)
    if nested:  # a second `repeats: 4` as the first line of the timing block; TINY's repeats: 3 comes later
        text = text.replace("timing:\n", "timing:\n  repeats: 4\n", 1)
        key, lines = (
            "timing.repeats",
            [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("  repeats:")],
        )
    else:
        text += "seed: 8\n"
        key, lines = "seed", [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("seed:")]
    assert len(lines) == 2
    return text, key, lines


def _said_twice(file: Path, key: str, lines: list[int]) -> str:
    return (
        f"config file {file}: key {key} is set twice, on lines {lines[0]} and {lines[1]}; only the last would count: "
        "keep one"
    )


@pytest.mark.parametrize("nested", [False, True], ids=["seed twice", "timing.repeats twice"])
def test_a_key_set_twice_in_a_config_file_is_refused_naming_file_key_and_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nested: bool
) -> None:
    from accel_choice.records import UserInputError

    text, key, lines = _set_twice(nested)
    file = tmp_path / "config.yaml"
    file.write_text(text)
    with pytest.raises(UserInputError) as refused:
        _prepare(yaml.safe_load(text), [file], monkeypatch, tmp_path)
    assert _said_twice(file, key, lines) in str(refused.value)


def test_a_key_set_twice_in_a_config_file_fails_naming_file_key_and_lines(tmp_path: Path) -> None:
    text, key, lines = _set_twice(nested=True)
    result = snakemake(tmp_path, text, "-n")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert _said_twice(tmp_path / "test-config.yaml", key, lines) in output, output[-2000:]
    assert "Job stats" not in output
    assert not (tmp_path / "results").exists()


def test_lint_is_clean() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "--snakefile", str(REPO / "Snakefile")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def test_the_test_config_runs_from_its_catalog_folder(tmp_path: Path) -> None:
    """`snakemake --directory .test` (the Snakemake workflow catalog's convention) reads .test/config/config.yaml
    as the workflow's own config: a dry run in a copy of the checkout plans the whole tiny DAG there."""
    copy = checkout(tmp_path / "checkout")
    seeded(copy / ".test")
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--directory", ".test"],
        capture_output=True,
        text=True,
        cwd=copy,
        timeout=300,
    )
    plan = planned_jobs(result)
    assert plan["time_cpu_training"] == TINY["timing"]["repeats"]  # one thread count: one job per repeat
    assert plan["time_load_convert"] == TINY["timing"]["repeats"]  # one job per repeat loads every file
    assert not (copy / "results").exists()


# Written after MANIFEST.sha256 by design (accel_choice.archive.AFTER_THE_MANIFEST).
AFTER_THE_MANIFEST = {"MANIFEST.sha256", "logs/archive.log", "snakemake-report.html", "snakemake-report.zip"}


def _sha256sum_check(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sha256sum", "--check", "--quiet", "MANIFEST.sha256"], cwd=folder, capture_output=True, text=True, timeout=120
    )


def test_manifest_lists_every_file_and_sha256sum_finds_an_edit(finished: Path, tmp_path: Path) -> None:
    results = finished / "results"
    listed = {line.split("  ", 1)[1] for line in (results / "MANIFEST.sha256").read_text().splitlines()}
    provenance = read(results / "provenance.json")
    leftovers = {entry["path"] for entry in provenance["files"]["not_made_by_this_configuration"]}
    # Every entry of the folder, hidden ones too (Snakemake's .snakemake_timestamp in directory
    # outputs), is listed, written after the manifest, or named in provenance.json. After the hard
    # kill the only thing this configuration did not make is an interrupted write's temporary.
    on_disk = {p.relative_to(results).as_posix() for p in results.rglob("*") if p.is_file() or p.is_symlink()}
    assert on_disk - listed - leftovers == AFTER_THE_MANIFEST & on_disk | {"MANIFEST.sha256"}
    assert all(Path(name).name.startswith(".") and name.endswith(".tmp") for name in leftovers), leftovers
    assert not listed & leftovers
    assert {
        "REPORT.md",
        "provenance.json",
        "config.yaml",
        "env/collect_env.json",
        "tables/cost_model.json",
        "benchmarks/time_cpu_training/rep0.tsv",
        "logs/report.log",
        "data/benchmark.parquet",
        "timing/cpu/rep2.json",
    } <= listed
    assert any(name.endswith("/.snakemake_timestamp") for name in listed)
    assert provenance["files"]["made_by_this_configuration"] == len(listed) - 1  # provenance.json itself
    archive = tmp_path / "archive"
    shutil.copytree(results, archive, symlinks=True)  # what a reader receives: the folder alone
    assert _sha256sum_check(archive).returncode == 0
    assert _verify_results(archive).returncode == 0
    table = archive / "tables/cpu_training.csv"
    table.write_text(table.read_text().replace("fastpath", "fastpatH", 1))
    check = _sha256sum_check(archive)
    assert check.returncode != 0 and "tables/cpu_training.csv: FAILED" in check.stdout


def _verify_results(results: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "workflow/scripts/verify_results.py"), str(results)],
        capture_output=True,
        text=True,
        timeout=120,
    )


TINY_SCALE = {
    "enabled": True,
    "sizes_gb": [0.002, 0.004],
    "features": 15,
    "hidden": 8,
    "batch_size": 128,
    "row_group_rows": 512,
    "part_gb": 0.002,
    "workers": [0, 1],
    "step_blocks": 2,
    "step_steps": 5,
}


PRICES = {"per_hour": {"cpu": 0.17, "cuda": 3.2}, "currency": "EUR"}
# The finished run after a user's usual changes at once (made once a session, `varied`): a second thread count,
# prices, and the streaming study.
VARIED = changed(timing={"threads": [1, 2]}, cost=PRICES, scale=TINY_SCALE)
# What an earlier configuration (timing.repeats: 4) left behind: planted before the run of VARIED.
LEFTOVER = [("timing/cpu", "json"), ("logs/time_cpu_training", "log"), ("benchmarks/time_cpu_training", "tsv")]


@pytest.fixture(scope="session")
def varied(pristine: Path, shared_folder: Path) -> dict:
    """A finished run that loses a record, then is run with VARIED: a second thread count, prices and the
    streaming study, beside the files of an earlier configuration (LEFTOVER) (made once a session: workflow_runs.shared). What each change alone
    plans (the lost record's too) is dry-run first; then one run measures the lost record again with the
    changes' jobs, and what follows them (aggregation, the planner, the report, the archive) runs once."""
    return workflow_runs.shared(shared_folder, "varied", lambda folder: _vary(pristine, folder))


def _vary(pristine: Path, folder: Path) -> dict:
    workdir = copy_of(pristine, folder / "run")
    results = workdir / "results"
    # A lost record (of a cell VARIED keeps): what its loss alone plans, then, put back for the dry runs of
    # each change alone, lost again before the run of them all, which measures it again with them.
    lost = results / "timing/cpu/rep1.json"
    before = read(lost)
    kept_record = shutil.copy2(lost, workdir / "lost-record.json.kept")
    lost.unlink()
    events = {"workdir": workdir, "before": before, "plan": planned_jobs(snakemake(workdir, TINY, "-n"))}
    shutil.copy2(kept_record, lost)
    parquet = results / "data/benchmark.parquet"
    kept = shutil.copy2(parquet, workdir / "benchmark.parquet.kept")
    parquet.unlink()  # what the sha256 message tells the user to do with a damaged export
    events["data_plan"] = planned_jobs(snakemake(workdir, TINY, "-n"))
    shutil.copy2(kept, parquet)  # put back: writing it again would re-measure every job that reads it
    # What each change alone plans on the finished run, then the run of all of them.
    events["threads_plan"] = planned_jobs(snakemake(workdir, changed(timing=VARIED["timing"]), "-n"))
    events["prices_plan"] = planned_jobs(snakemake(workdir, changed(cost=PRICES), "-n"))
    events["scale_plan"] = planned_jobs(snakemake(workdir, changed(scale=TINY_SCALE), "-n"))
    lost.unlink()
    for folder_name, ext in LEFTOVER:  # a fourth repeat's job of an earlier configuration, as it left its files
        shutil.copy2(results / f"{folder_name}/rep0.{ext}", results / f"{folder_name}/rep3.{ext}")
    events["varied"] = snakemake(workdir, VARIED)
    events["after"] = read(lost) if lost.exists() else None
    events["verify_varied"] = _verify_results(results)
    events["noop"] = planned_jobs(snakemake(workdir, VARIED, "-n"))
    cheaper = {**VARIED, "cost": {**PRICES, "per_hour": {"cpu": 0.1, "cuda": 3.2}}}
    events["cheaper_plan"] = planned_jobs(snakemake(workdir, cheaper, "-n"))
    # With fewer cores than its largest thread count, a job refuses to time another configuration (asked for
    # alone); in a copy, whose log of the refused job is no file of VARIED's.
    more = {**VARIED, "timing": {**VARIED["timing"], "repeats": 5}}  # repeat 4: rep3 is a leftover (LEFTOVER)
    refusing = copy_of(workdir, folder / "refused")
    events["refused"] = snakemake(refusing, more, "results/timing/cpu/rep4.json", "--cores", "1")
    events["refused_made"] = [str(p) for p in (refusing / "results/timing/cpu").glob("rep4.json")]
    return events


def test_a_lost_record_is_measured_again_and_the_archive_verifies(varied: dict) -> None:
    assert varied["plan"] == {
        "time_cpu_training": 1,
        "aggregate_training": 1,
        "resource_table": 1,
        **PLANNER,
        "decide": 1,
        "report": 1,
        "archive": 1,
        "all": 1,
    }
    # The run of the user's changes (_vary) measures it again with them: its job started after the first ended.
    rerun = varied["varied"]
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "results/timing/cpu/rep1.json" in rerun.stdout + rerun.stderr
    after = varied["after"]
    assert after is not None and after["wall_interval"][0] > varied["before"]["wall_interval"][1]
    verify = varied["verify_varied"]
    assert verify.returncode == 0 and "all" in verify.stdout and "listed files match" in verify.stdout, verify.stdout


def test_a_deleted_data_file_is_written_again_with_everything_that_read_it(varied: dict) -> None:
    plan = varied["data_plan"]
    assert plan["export_data"] == 1 and plan["time_load_convert"] == 3 and plan["time_cpu_training"] == 3
    assert plan["gradient_variance"] == 1 and plan["archive"] == 1
    assert "generate_benchmark" not in plan and "train_northstar" not in plan


def test_files_of_an_earlier_configuration_are_listed_not_vouched_for(varied: dict, tmp_path: Path) -> None:
    run = varied["varied"]
    assert run.returncode == 0, run.stderr[-3000:]
    results = varied["workdir"] / "results"
    listed = {line.split("  ", 1)[1] for line in (results / "MANIFEST.sha256").read_text().splitlines()}
    provenance = read(results / "provenance.json")
    stale = {
        entry["path"]
        for entry in provenance["files"]["not_made_by_this_configuration"]
        if not entry["path"].endswith(".tmp")
    }
    assert stale == {f"{folder}/rep3.{ext}" for folder, ext in LEFTOVER}
    assert not stale & listed and (results / "timing/cpu/rep3.json").exists()  # listed, not deleted
    # Each batch size: both loaders at each thread count
    assert [row["batch_size"] for row in read(results / "tables/cpu_training.json")["table"]] == [16] * 4 + [64] * 4
    verify = varied["verify_varied"]
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "not made by this configuration, listed in provenance.json, unchanged" in verify.stdout
    # The leftovers are checked too: an edit to one of them is a difference (in a copy: the run is shared).
    copy = shutil.copytree(results, tmp_path / "results", symlinks=True)
    (copy / "timing/cpu/rep3.json").write_text("{}\n")
    verify = _verify_results(copy)
    assert verify.returncode == 1 and "timing/cpu/rep3.json" in verify.stdout


def test_a_second_thread_count_adds_its_own_cells_and_the_verdict_names_the_best(varied: dict) -> None:
    # One job a repeat times every thread count: its 3 jobs again, with the new cells; load/convert and the grid stay.
    plan = varied["threads_plan"]
    assert plan["time_cpu_training"] == 3 and "time_load_convert" not in plan and "time_cost_model" not in plan
    assert varied["varied"].returncode == 0, varied["varied"].stderr[-3000:]
    results = varied["workdir"] / "results"
    cells = read(results / "tables/cpu_training.json")["table"]
    assert sorted({(c["batch_size"], c["threads"]) for c in cells}) == [(16, 1), (16, 2), (64, 1), (64, 2)]
    fastest = read(results / "tables/decision.json")["verdict"]["fastest_cpu_epoch"]
    report = (results / "REPORT.md").read_text()
    words = "thread" if fastest["threads"] == 1 else "threads"
    assert (
        f"The fastest CPU epoch ({fastest['loader']}, B={fastest['batch_size']}, {fastest['threads']} {words})"
        in report
    )
    # With fewer cores than a cell's threads, its job refuses to time another configuration (_vary).
    refused = varied["refused"]
    assert refused.returncode != 0
    assert "config key timing.threads: this job times cells at up to 2 torch threads, but it was given 1" in (
        refused.stdout + refused.stderr
    )
    assert varied["refused_made"] == []


def test_the_streaming_study_measures_every_stage_and_leaves_no_data_behind(varied: dict) -> None:
    plan = varied["scale_plan"]
    # The study's own jobs, and what reads them: the planner (the storage line) and the report.
    assert plan["time_scale"] == 2 and plan["time_scale_step"] == 1 and plan["scale_table"] == 1
    assert plan["planner_break_even"] == 1 and "time_cpu_training" not in plan and "time_cost_model" not in plan
    assert not {"planner_cost_model", "planner_flop_check", "planner_scenario"} & set(plan)
    assert varied["varied"].returncode == 0, varied["varied"].stderr[-3000:]
    workdir = varied["workdir"]
    results = workdir / "results"
    for fmt in ("parquet", "npy"):
        job = read(results / f"timing/scale/{fmt}.json")
        assert [s["target_gb"] for s in job["sizes"]] == [0.002, 0.004]
        # none, 1 worker process, 1 thread; cold and warm (the tiny files fit in the page cache)
        assert all(len(s["readers"]) == 6 and s["decode"] is not None for s in job["sizes"])
        # what could contaminate it: other CPU and steal per size, the sentinel at the start and after each
        assert all(s["foreign_cpu_share"] is not None and s["steal_share"] is not None for s in job["sizes"])
        assert len(job["sentinel"]["seconds"]) == 3
    table = read(results / "tables/scale.json")
    assert [s["device"] for s in table["scenario"]] == ["cpu", "gpu"] and table["bottlenecks"]
    report = (results / "REPORT.md").read_text()
    assert (
        "## Streaming data beyond memory (measured)" in report and "The scale scenario with measured storage" in report
    )
    assert "shared the machine" in report and "| other CPU / steal (cores) |" in report
    assert (results / "figures/scale.png").stat().st_size > 0
    # The datasets are scratch: deleted once timed.
    assert not list((workdir / "scratch/scale").rglob("part-*"))
    assert varied["noop"] == {}


def test_prices_add_a_cost_section_and_rerun_no_measurement(varied: dict) -> None:
    assert set(varied["prices_plan"]) == {"cost_table", "report", "config_snapshot", "archive", "all"}
    assert varied["varied"].returncode == 0, varied["varied"].stderr[-3000:]
    results = varied["workdir"] / "results"
    table = read(results / "tables/cost.json")
    assert table["currency"] == "EUR" and [line["device"] for line in table["lines"]] == ["cpu"]
    report = (results / "REPORT.md").read_text()
    assert "## Cost at your prices" in report
    assert "No GPU was measured in this run: the CPU's costs alone, no comparison." in report
    # A new price re-runs the cost table and what renders it, nothing measured.
    assert set(varied["cheaper_plan"]) == {"cost_table", "report", "config_snapshot", "archive", "all"}


def test_provenance_names_the_commit_snakemake_version_and_command(finished: Path, timeline: dict) -> None:
    import importlib.metadata

    provenance = read(finished / "results/provenance.json")
    assert provenance["snakemake_version"] == importlib.metadata.version("snakemake")
    # The last invocation, the resume after the hard kill, wrote the report and the manifest (in the
    # shared run's folder: `finished` is this module's copy of it).
    command_line = provenance["command_line"]
    assert "--rerun-incomplete" in command_line and str(timeline["workdir"]) in command_line
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:
        assert provenance["workflow"]["commit"] == head.stdout.strip()
    assert provenance["mixed_commits"] is False and sum(provenance["record_commits"].values()) > 20
    report = (finished / "results/REPORT.md").read_text()
    assert f"| command line | `{provenance['command_line']}` |" in report
    assert f"| Snakemake | {provenance['snakemake_version']} |" in report


def test_every_table_is_written_as_csv_and_json(finished: Path) -> None:
    tables = sorted((finished / "results/tables").glob("*.csv"))
    assert len(tables) >= 12
    for table in tables:
        # a tidy table (one observation a row) has Parquet for its twin
        twins = (table.with_suffix(".json"), table.with_suffix(".parquet"))
        assert any(twin.is_file() for twin in twins), f"{table.name} has no JSON or Parquet twin"


def test_every_timed_epoch_is_one_row_of_the_epochs_table(finished: Path) -> None:
    """Issue 46: tables/cpu_epochs.parquet unpacks the cells' epochs, one row per job, variant and round."""
    import pandas as pd

    results = finished / "results"
    epochs = pd.read_parquet(results / "tables/cpu_epochs.parquet")
    cells = read(results / "tables/cpu_training.json")["table"]
    assert len(epochs) == sum(len(job) for cell in cells for job in cell["epoch_s_jobs"])
    cell = cells[0]
    mine = epochs[(epochs["loader"] == cell["loader"]) & (epochs["batch_size"] == cell["batch_size"])]
    mine = mine[mine["threads"] == cell["threads"]].sort_values(["repeat", "round"])
    assert mine["epoch_s"].tolist() == [t for job in cell["epoch_s_jobs"] for t in job]
    assert sorted(mine["job"].unique()) == sorted(cell["jobs"])
    estimates = pd.read_parquet(results / "tables/cpu_estimates.parquet")
    assert len(estimates.query("statistic == 'epoch_s'")) == len(cells)
    first = estimates.query("statistic == 'epoch_s'").iloc[0]
    assert first["point"] == cells[0]["epoch_s"]["point"] and first["low"] == cells[0]["epoch_s"]["low"]


def test_the_run_budget_splits_the_timing_rules_wall_time(finished: Path, tmp_path: Path) -> None:
    """benchmarks/run_budget.py on a finished run: a row per timing rule, shares below 100 %, leftovers ignored."""
    run = copy_of(finished, tmp_path / "run")
    stray = run / "results/northstar/cpu/bs999/history.json"  # an earlier configuration's record, not listed
    stray.parent.mkdir(parents=True)
    stray.write_text("{}")
    shown = subprocess.run(
        [sys.executable, "benchmarks/run_budget.py", str(run / "results")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {line.split(" | ")[1]: line.split(" | ") for line in shown.splitlines()[2:]}
    assert {"time_cpu_training", "time_load_convert", "train_northstar", "time_cost_model"} <= set(rows)
    assert rows["time_cpu_training"][2] == "3" and rows["train_northstar"][2] == "1"
    shares = [int(share) for share in re.findall(r"\((\d+)%\)", shown)]
    assert shares and all(0 <= share < 100 for share in shares) and "(0%)" not in rows["time_cpu_training"][5], shown
    assert any(name.startswith("every timing rule") for name in rows)


def test_resource_table_pairs_each_benchmarked_job_with_its_own_timing(finished: Path) -> None:
    results = finished / "results"
    resources = read(results / "tables/resources.json")
    assert len(resources["jobs"]) == len(list((results / "benchmarks").rglob("*.tsv"))) == 17
    for job in resources["jobs"]:
        # The directive times the whole process; the body is inside it, imports are not.
        assert job["body_wall_s"] is not None and 0 < job["body_wall_s"] < job["process_wall_s"], job
        assert job["peak_rss_mb"] > 50, job
    rules = {r["rule"]: r for r in resources["rules"]}
    assert rules["time_cpu_training"]["jobs"] == 3 and rules["time_cost_model"]["jobs"] == 3
    assert "## Resources per rule" in (results / "REPORT.md").read_text()


def test_planner_reproduces_exercise_4_and_labels_what_is_modelled(finished: Path) -> None:
    from accel_choice import records
    from accel_choice.analyze import theory
    from accel_choice.records.grid import GridJob
    from accel_choice.records.breakeven import BreakEvenSummary, BreakEvenTable
    from accel_choice.records.planner import CostModelTable, FlopCheck, Scenario

    results = finished / "results"
    scenario = records.read(Scenario, results / "tables/scenario.json")
    assert scenario.input_bytes == 51_200_000_000 and scenario.params == 33_025
    assert scenario.adam_fp32_bytes == 528_400 and scenario.transfer_s == pytest.approx(6.4)
    assert (scenario.batch_input_bytes, scenario.batch_hidden_bytes, scenario.batch_logit_bytes) == (
        524_288,
        262_144,
        2_048,
    )
    assert scenario.modelled is not None and scenario.modelled.gpu_model_source == "profile"
    models = {m.device: m for m in records.read(CostModelTable, results / "tables/cost_model.json").models}
    assert models["cpu"].source == "fitted" and models["cpu"].points == 16 + 2  # the grid + the benchmark
    assert models["cpu"].loo_median_abs_rel_error is not None
    # No GPU here and none assumed: the GPU is the shipped profile's (planner.gpu_profile: auto → h200)
    assert models["NVIDIA H200 (profile h200)"].source == "profile"
    break_even = records.read(BreakEvenTable, results / "tables/break_even.json")
    assert break_even.label == "modelled" and break_even.gpu_model_source == "profile"
    assert break_even.gpu_profile is not None and break_even.gpu_profile.file == "h200"
    assert {(s.axis, s.placement) for s in break_even.summary} == {
        (axis, placement) for axis in ("rows", "features", "hidden") for placement in ("resident", "streamed")
    }
    assert records.read(tuple[BreakEvenSummary, ...], results / "tables/break_even_summary.json") == break_even.summary
    for row in records.read(FlopCheck, results / "tables/flop_check.json").table:
        assert row.counted_per_batch == theory.forward_backward_flops_counted(row.batch_size, (8, 8, 1))
        assert row.formula_3x_per_batch == theory.forward_backward_flops(row.batch_size, (8, 8, 1))
    for grid in sorted((results / "timing/cost_model").glob("*.json")):
        assert len(records.read(GridJob, grid).records) == 16
    report = (results / "REPORT.md").read_text()
    assert (
        "**At what size would a GPU pay off?** Modelled on an NVIDIA H200 (profile `h200`), 95 % intervals:" in report
    )
    from accel_choice.render.gpu_profile import never_reason

    # an axis without a crossing says so on the first screen, and why in the planner section (the tiny run's CPU
    # decides which axes those are)
    for summary in break_even.summary:
        if summary.gpu_never_faster:
            assert never_reason(summary) in report.split("\n## Planner: cost model and break-even", 1)[1]
    rows = next(line for line in report.splitlines() if line.startswith("- rows, resident: "))
    # the tiny run's CPU decides which: a crossing, none, the whole sweep or only its start (planner.short_verdict)
    said = ("none up to ", "~", "every size of the sweep", "only up to ")
    assert rows.startswith(tuple(f"- rows, resident: {words}" for words in said)), rows
    assert (results / "figures/break_even.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reordered_config_keys_rerun_nothing(finished: Path) -> None:
    config = json.loads(json.dumps(TINY))
    config["planner"]["grid"] = dict(reversed(list(config["planner"]["grid"].items())))
    config["selection"]["split"] = {"test": 0.2, "val": 0.2, "train": 0.6}
    assert planned_jobs(snakemake(finished, config, "-n")) == {}


GPU_ASSUMED = {"seconds_per_step": 1.5e-4, "tflop_per_s": 20, "memory_gb_s": 1000, "memory_gb": 80, "startup_s": 0.3}


def test_changing_a_gpu_assumption_reruns_only_the_planner_and_what_follows(finished: Path) -> None:
    # The decision does not read the planner: decide stays.
    plan = planned_jobs(snakemake(finished, changed(planner={**TINY["planner"], "gpu_assumed": GPU_ASSUMED}), "-n"))
    # Your GPU numbers replace the profile in the fit: the cost model, the curves and the scenario; not the FLOP check.
    assert plan == {
        **PLANNER_FIT,
        "report": 1,
        "config_snapshot": 1,
        "archive": 1,
        "all": 1,
    }


def test_a_profile_of_yours_reruns_only_the_planner_and_what_follows(
    finished: Path, tmp_path: Path, repo: Path
) -> None:
    mine = tmp_path / "my-gpu.json"  # e.g. what `accel-choice profile --device cuda` wrote on a rented GPU
    mine.write_text((repo / "config/gpu_profiles/h200.json").read_text())
    plan = planned_jobs(snakemake(finished, changed(planner={**TINY["planner"], "gpu_profile": str(mine)}), "-n"))
    assert plan == {**PLANNER_FIT, "report": 1, "config_snapshot": 1, "archive": 1, "all": 1}


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=10000",
]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"chromium-{len(list(tmp_path.iterdir()))}"
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=180
    )


def test_lab_report_profile_writes_a_snakemake_report_that_renders(finished: Path, tmp_path: Path) -> None:
    import zipfile

    results = finished / "results"
    run = snakemake(finished, TINY, "--profile", str(REPO / "profiles/lab-report"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    html = results / "snakemake-report.html"
    assert html.stat().st_size > 100_000
    # Its landing page opens with REPORT.md's first screen: the verdict and the run's trust (issue 27 item 3),
    # and REPORT.md is there as a page with HTML tables too, listed in the manifest like REPORT.md.
    page = html.read_text()
    assert "<strong>Verdict: " in page and "timing jobs" in page and "accel-choice-answer" in page
    assert "decision.png" in page and "cpu_training.html" in page  # the figures and tables as its results
    # the main tables as pages, which the report shows as tables (a CSV it shows as a download link)
    assert "full_path.html" in page and "decision_sheet.html" in page
    assert "<table>" in (results / "tables/cpu_training.html").read_text()
    assert "<table>" in (results / "REPORT.html").read_text()
    # The profile's lab_report job made it inside the run: the manifest lists it like every other file.
    listed = (results / "MANIFEST.sha256").read_text()
    assert "  REPORT.html\n" in listed and "  report/landing.rst\n" in listed
    assert "  snakemake-report.html\n" in listed and "  logs/lab_report.log\n" in listed
    zipped = snakemake(finished, TINY, "--report", str(results / "snakemake-report.zip"))
    assert zipped.returncode == 0, zipped.stderr[-3000:]
    names = zipfile.ZipFile(results / "snakemake-report.zip").namelist()
    assert any(n.endswith("report.html") for n in names) and any(n.endswith("break_even.png") for n in names)
    assert _sha256sum_check(results).returncode == 0, "the report must not touch the archived files"
    # The HTML report is vouched for by the manifest, and every result it embeds is byte-identical to the
    # listed file (issue 28's check, which a report made after the manifest rests on).
    from accel_choice.io import manifest
    from accel_choice.io.report_check import report_problems

    checked = manifest.verify(results)
    assert (
        checked.matches
        and checked.report_vouched == ()
        and set(checked.unchecked) == {"logs/archive.log", "snakemake-report.zip"}
    )
    embedded, problems = report_problems(html, manifest.read_manifest(results / "MANIFEST.sha256"))
    assert embedded >= 10 and problems == []
    # Without the profile the next run's archive deletes it (it shows this run's files), and nothing else reruns.
    again = snakemake(finished, TINY, "-n")
    assert planned_jobs(again) == {"config_snapshot": 1, "report": 1, "archive": 1, "all": 1}, again.stdout[-2000:]
    if CHROMIUM is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("needs chromium (apt-get install chromium)")
    dom = _chromium(tmp_path, "--dump-dom", html.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    # The categories are drawn by the report's JavaScript: present in the DOM only if it ran.
    for category in ("Data", "Load and convert", "CPU training", "Training", "Decision", "Planner", "Resources"):
        assert f">{category}<" in dom.stdout, category
    assert "<strong>Verdict: " in dom.stdout  # the landing page shows it beside the rule graph
    shot = tmp_path / "report.png"
    _chromium(tmp_path, "--window-size=1400,1000", f"--screenshot={shot}", html.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    # The screenshot shows the answer's box from its top: its teal bar starts below the title, on the first
    # screen. (Snakemake's page centres its content in the window: unstyled, a landing text taller than the
    # window lost its top, the verdict, above the window, with no way to scroll to it - the bar then starts at 0.)
    columns, top = _answer_bar(shot)
    assert len(columns) >= 4 and 20 <= top <= 300, (columns, top)


def _answer_bar(png: Path) -> tuple[list[int], int | None]:
    """The columns of a screenshot holding a vertical run of render.html.ANSWER_BAR's colour at least 200 pixels
    long, and the first row of it in the first such column."""
    import numpy as np
    from matplotlib import image

    from accel_choice.render.html import ANSWER_BAR

    pixels = np.rint(image.imread(png)[:, :, :3] * 255).astype(int)
    bar = np.abs(pixels - np.array(ANSWER_BAR)).max(axis=2) <= 8
    columns = np.flatnonzero(bar.sum(axis=0) >= 200).tolist()
    return columns, (int(np.flatnonzero(bar[:, columns[0]])[0]) if columns else None)


def test_no_config_value_is_evaluated_as_code() -> None:
    sources = [*REPO.glob("workflow/**/*.py"), *REPO.glob("workflow/rules/*.smk"), REPO / "Snakefile"]
    for source in sources:
        text = source.read_text()
        assert not re.search(r"(?<![\w.])(eval|exec)\(", text), f"{source} evaluates text as code"


# --- your own model (model.factory) -----------------------------------------------------------------

BAD_FACTORIES = {
    "not module:function": ("", "broken.net", "is not of the form 'package.module:function'"),
    "does not import": ("import not_a_module_anywhere\n", "broken.net:build", "does not import from model.path"),
    "raises": ("def build(shape):\n    raise ValueError('no such width')\n", "broken.net:build", "raised ValueError"),
    "not a Module": ("def build(shape):\n    return [1, 2]\n", "broken.net:build", "returned a builtins.list"),
    "output shape": (
        "from torch import nn\ndef build(shape):\n    return nn.Linear(shape[0], 2)\n",
        "broken.net:build",
        "needs floating-point outputs of shape (2,) or (2, 1)",
    ),
    "rejects the data": (
        "from torch import nn\ndef build(shape):\n    return nn.Linear(3, 1)\n",
        "broken.net:build",
        "rejected a batch of shape (2, 8) (data.benchmark: 8 features per sample)",
    ),
}


def _broken_package(folder: Path, source: str) -> None:
    package = folder / "broken"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "net.py").write_text(source)


@pytest.mark.parametrize("case", list(BAD_FACTORIES))
def test_a_bad_factory_is_refused_when_the_workflow_is_parsed_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    from accel_choice.records import UserInputError

    source, factory, words = BAD_FACTORIES[case]
    _broken_package(tmp_path, source)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the factory's folder goes on it (measure.model.load_factory)
    try:
        with pytest.raises(UserInputError) as refused:
            _prepare(changed(model={"factory": factory, "path": str(tmp_path)}), [], monkeypatch, tmp_path)
    finally:  # each case's own `broken` package, imported afresh
        for name in [name for name in sys.modules if name == "broken" or name.startswith("broken.")]:
            del sys.modules[name]
    assert "config key model.factory" in str(refused.value) and words in str(refused.value), str(refused.value)


def test_a_bad_factory_stops_the_run_naming_the_key_and_leaves_results_untouched(
    finished: Path, tmp_path: Path
) -> None:
    """One of BAD_FACTORIES through the CLI (each is refused by the one parse-time check, the test above)."""
    source, factory, words = BAD_FACTORIES["raises"]
    _broken_package(tmp_path, source)
    before = {p: p.stat().st_mtime_ns for p in (finished / "results").rglob("*") if p.is_file()}
    result = snakemake(finished, changed(model={"factory": factory, "path": str(tmp_path)}))
    assert result.returncode != 0
    assert "config key model.factory" in result.stderr and words in result.stderr, result.stderr[-3000:]
    assert "Job stats" not in result.stdout + result.stderr
    assert {p: p.stat().st_mtime_ns for p in (finished / "results").rglob("*") if p.is_file()} == before


def _example(name: str, data: Path) -> dict:
    """examples/<name>.yaml over the tiny config, its data files replaced by tiny ones made by the same script."""
    example = yaml.safe_load((REPO / "examples" / f"{name}.yaml").read_text())
    bench = example["data"]["benchmark"]
    if "table" in bench:
        bench["table"]["path"] = str(data / "orders.parquet")
    else:
        bench["arrays"] = {"x": str(data / "sequences_x.npy"), "y": str(data / "sequences_y.npy")}
    config = changed(model=example["model"])
    config["data"] = {**config["data"], "benchmark": bench}
    # One batch size: what an example checks (its data and model re-timed, its counted figures, its
    # classes) holds at any; the second would double the timing jobs of a run made twice a session.
    config["timing"] = {**config["timing"], "batch_sizes": [16]}
    return config


@pytest.fixture(scope="session")
def example_data(shared_folder: Path) -> Path:
    return workflow_runs.shared(shared_folder, "example-data", _example_data)["folder"]


def _example_data(folder: Path) -> dict:
    sys.path.insert(0, str(REPO / "examples"))
    import make_data

    folder.mkdir()
    make_data.write(folder, order_rows=300, sequence_rows=256, seed=5)
    return {"folder": folder}


def _run_example(finished: Path, destination: Path, config: dict, edit: str | None = None, plans: bool = True) -> dict:
    """The example's run on a copy of `finished`; with `plans`, the dry runs before and after it (and after
    an `edit` of a file of the copy)."""
    workdir = copy_of(finished, destination)
    events = (
        {"workdir": workdir, "plan": planned_jobs(snakemake(workdir, config, "-n"))} if plans else {"workdir": workdir}
    )
    events["run"] = snakemake(workdir, config)
    if not plans:
        return events
    events["noop"] = planned_jobs(snakemake(workdir, config, "-n"))
    if edit:
        source = workdir / edit
        source.write_text(source.read_text() + "\n# edited\n")
        events["edited"] = planned_jobs(snakemake(workdir, config, "-n"))
    return events


@pytest.fixture(scope="session")
def residual_mlp(pristine: Path, example_data: Path, shared_folder: Path) -> dict:
    """The finished run with worked example 1: the residual MLP on the (tiny) delivery table, with
    BatchNorm1d in place of LayerNorm (issue 44: a model with batch normalisation and dropout runs end to end)."""
    config = _example("residual_mlp", example_data)
    config["model"]["kwargs"] = {**config["model"]["kwargs"], "norm": "batch"}
    edit = "examples/models/residual_mlp.py"
    return workflow_runs.shared(
        shared_folder, "resmlp", lambda folder: _run_example(pristine, folder / "run", config, edit=edit)
    )


@pytest.fixture(scope="session")
def conv1d(pristine: Path, example_data: Path, shared_folder: Path) -> dict:
    """The finished run with worked example 2: the 1-D conv net on (tiny) sequences, three classes."""
    config = _example("conv1d", example_data)
    # its plans are the residual MLP's test's
    return workflow_runs.shared(
        shared_folder, "conv1d", lambda folder: _run_example(pristine, folder / "run", config, plans=False)
    )


def test_an_example_reruns_what_its_data_and_model_change_and_nothing_of_the_case_study(residual_mlp: dict) -> None:
    plan = residual_mlp["plan"]
    assert plan["import_benchmark"] == 1 and plan["export_data"] == 1 and plan["time_load_convert"] == 3
    assert plan["time_cpu_training"] == 3 and plan["profile_model"] == 1  # one thread count × 3 repeats
    for case_study in ("generate_benchmark", "time_cost_model", "train_northstar", "gradient_variance"):
        assert case_study not in plan
    assert residual_mlp["run"].returncode == 0, residual_mlp["run"].stderr[-3000:]
    assert residual_mlp["noop"] == {}
    # Editing the model's source re-times it: the module is an input of the rules that build it.
    edited = residual_mlp["edited"]
    assert edited["time_cpu_training"] == 3 and edited["profile_model"] == 1 and "import_benchmark" not in edited
    # the planner reads the model's profile and its timed cells; the FLOP check the timed cells
    assert all(edited[job] == 1 for job in PLANNER)


def test_the_residual_mlp_example_reports_counted_figures_matching_a_count_by_hand(residual_mlp: dict) -> None:
    results = residual_mlp["workdir"] / "results"
    # Issue 27: the report names the file the benchmark data came from, with its sha256
    data = (results / "REPORT.md").read_text().split("## Data", 1)[1]
    assert "| your table: `" in data and "orders" in data and "(sha256 `" in data
    profile = read(results / "tables/model_profile.json")
    assert profile["model"] == "models.residual_mlp:build" and profile["widths"] is None
    assert profile["input_shape"] == [19] and profile["optimizer"] == "adamw"
    w, d, blocks = 64, 19, 2  # examples/residual_mlp.yaml: width 64, 2 blocks; 19 encoded features
    per_block = (2 * w) + (w * 2 * w + 2 * w) + (2 * w * w + w)  # BatchNorm1d (as LayerNorm), up, down
    assert profile["params"] == d * w + w + blocks * per_block + 2 * w + w + 1
    # each BatchNorm1d's running mean and variance (fp32) and its step count (int64), counted as training holds them
    assert profile["buffer_bytes"] == (blocks + 1) * (2 * w * 4 + 8)
    assert (profile["param_dtype"], profile["output_dtype"], profile["compute_dtype"]) == ("fp32",) * 3
    for row in profile["table"]:
        b = row["batch_size"]
        assert row["forward_flop"] == 2 * b * (d * w + blocks * 4 * w * w + w)
        # the embedding's weight gradient only (its input is the data); every later layer's weight and input
        assert row["backward_flop"] == 2 * b * d * w + 2 * 2 * b * (blocks * 4 * w * w + w)
    theory = read(results / "tables/theory.json")
    assert theory["figures"] == "counted" and theory["params"] == profile["params"]
    meta = read(results / "data/benchmark.meta.json")
    assert meta["generator"]["kind"] == "table" and meta["rows"] == 300 and meta["sample_shape"] == [19]
    report = (results / "REPORT.md").read_text()
    assert "## Model figures (counted)" in report and "Model `models.residual_mlp:build`" in report
    assert "| benchmark | 300 × 19 |" in report
    assert "**The planner models `models.residual_mlp:build` from its counted profile**" in report
    assert (
        "| 6 | Memory upper bound: parameters, gradients, buffers and optimizer state (counted) + activations |"
        in report
    )
    # The planner fits the example's fast-path cells with its counted FLOP and bytes, and grows it along rows.
    cost_model = read(results / "tables/cost_model.json")
    mine = [p for p in cost_model["points"] if p["source"] == "benchmark"]
    assert mine and all(p["model"] == "models.residual_mlp:build" and p["features"] is None for p in mine)
    assert {p["model"] for p in cost_model["points"] if p["source"] == "grid"} == {"textbook MLP"}
    summary = read(results / "tables/break_even.json")["summary"]
    assert {s["axis"] for s in summary} == {"rows"} and {s["base_model"] for s in summary} == {profile["model"]}
    assert "## FLOP formula against torch's FLOP counter" not in report
    assert "the parameters, gradients, buffers and optimizer state, counted," in report
    # dropout draws the same masks in every epoch and loader: the check of identical work still holds
    assert "the final weights were bitwise identical across loaders in every job" in report


def test_the_conv1d_example_trains_three_classes_on_sequences(conv1d: dict) -> None:
    assert conv1d["run"].returncode == 0, conv1d["run"].stderr[-3000:]
    results = conv1d["workdir"] / "results"
    profile = read(results / "tables/model_profile.json")
    assert profile["input_shape"] == [1, 128] and profile["output_shape"] == [3] and profile["loss"] == "ce"
    c, k, length = 32, 5, 128  # examples/conv1d.yaml: 32 channels, kernel 5 (length kept by padding)
    assert profile["params"] == (1 * c * k + c) + (c * c * k + c) + (c * 3 + 3)
    for row in profile["table"]:
        b = row["batch_size"]
        first, second, head = 2 * b * c * length * k, 2 * b * c * length * c * k, 2 * b * c * 3
        assert row["forward_flop"] == first + second + head
        assert row["backward_flop"] == first + 2 * second + 2 * head
    cells = read(results / "tables/cpu_training.json")["table"]
    assert all(cell["eval_accuracy_median"] is not None for cell in cells)
    report = (results / "REPORT.md").read_text()
    assert "| benchmark | 256 × 128 | — |" in report  # flattened samples; a class target has no positive rate
    assert "## Gradient variance" not in report


def test_a_streaming_study_larger_than_the_free_disk_is_refused_before_writing(finished: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in (finished / "results").rglob("*") if p.is_file()}
    result = snakemake(finished, changed(scale={**TINY_SCALE, "sizes_gb": [0.002, 10**6]}), "-n")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config key scale.sizes_gb: the largest dataset (1,000,000 GB) needs about" in output
    assert "GB free; lower scale.sizes_gb or set scale.scratch" in output
    assert {p: p.stat().st_mtime_ns for p in (finished / "results").rglob("*") if p.is_file()} == before
    assert not (finished / "scratch").exists()


@pytest.mark.parametrize("name", ["residual_mlp", "conv1d"])
def test_each_example_plans_at_full_size_with_its_one_command(tmp_path: Path, name: str) -> None:
    """`snakemake --cores 4 --configfile examples/<name>.yaml` from a checkout (config/config.yaml's repeats of CPU
    training, each job every thread count and batch size): its shipped data and model parse
    and check, and the whole workflow is planned on them."""
    workdir = seeded(checkout(tmp_path / "checkout"))
    command = [sys.executable, "-m", "snakemake", "--cores", "4", "--configfile", f"examples/{name}.yaml", "-n"]
    result = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=300)
    plan = planned_jobs(result)
    repeats = yaml.safe_load((REPO / "config/config.yaml").read_text())["timing"]["repeats"]
    assert plan["import_benchmark"] == 1 and plan["time_cpu_training"] == repeats == 4 and plan["profile_model"] == 1


def test_the_run_ends_by_saying_its_verdict_and_where_its_report_is(timeline: dict) -> None:
    """Issue 27: the last lines of a finished `snakemake` run say the answer (the report.smk onsuccess)."""
    said = timeline["resume"].stdout + timeline["resume"].stderr
    assert "accel-choice verdict: CPU. No CUDA device was visible" in said
    assert "Report: results/REPORT.md" in said and "accel-choice verify results" in said


def test_a_time_budget_plans_a_round_and_reruns_no_data_load_or_grid_job(finished: Path, tmp_path: Path) -> None:
    """timing.budget_s: a dry run lists every job but those the plan may add, its first round among them; on a
    finished run it re-runs no data, load or grid job. tests/test_module_import.py runs a budget to its end."""
    config = changed(timing={"budget_s": 100.0, "target": 0.001})
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    ahead = planned_jobs(snakemake(fresh, config, "-n"))
    assert ahead["plan_timing"] == 1 and ahead["time_cpu_training"] == TINY["timing"]["repeats"]
    assert ahead["aggregate_training"] == ahead["report"] == ahead["archive"] == 1
    dry = planned_jobs(snakemake(finished, config, "-n"))
    assert dry["plan_timing"] == 1
    assert not {"export_data", "time_load_convert", "train_northstar", "time_cost_model"} & set(dry), dry
