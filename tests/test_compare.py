"""Comparing two archived results/ folders: matched rows, ratios, warnings, outputs and the CLI.

The folders are built here from records run through the real aggregation functions, so their tables
carry exactly the keys the workflow writes; no test needs a finished run's results/.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import errno
import json
import math
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import compare_results
from accel_choice.analyze.figures import Figures
from accel_choice import records
from accel_choice.analyze import (
    aggregate,
    compare,
    compare_match,
    compare_warnings,
    decision,
    fullpath,
    job_intervals,
    loads,
)
from accel_choice.analyze.sentinel import summarize_sentinels
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import atomic, folder_checks, manifest, paths, results_folder
from accel_choice.records.decision import Decision, FullPathTable
from accel_choice.records.environment import Environment, Workflow
from accel_choice.records.loads import LoadCell, TransferTable
from accel_choice.records.sentinel import SentinelReadings, SentinelSummary
from accel_choice.records.training import VARIANT_KEYS, TrainingCell, TrainingRecord, TrainingTable, Variant
from accel_choice.render import comparison, comparison_figure
from builders_data import copy_timing, library, load_job, transfer_job
from builders_training import environment, environment_report, training_cell, training_record

ROWS = 2048
CONFIG: dict[str, Any] = {
    "seed": 20261020,
    "accelerator": "auto",
    "data": {
        "benchmark": {"rows": ROWS, "features": 32, "noise": 0.2},
        "northstar": {"rows": 2400, "late_rate": 0.18, "table": None},
        "parquet_compression": "zstd",
    },
    "model": {"hidden": 48, "lr": 0.001},
    "timing": {
        "batch_sizes": [32, 512],
        "repeats": 3,
        "loaders": ["dataloader", "fastpath"],
        "formats": ["csv", "parquet"],
        "warmup_steps": 50,
        "load_passes": 5,
        "threads": 1,
    },
    "aggregate": {"noise_iqr_ratio": 0.1, "outlier_factor": 2.0, "foreign_cpu_share": 0.25, "loadavg_rise": 0.5},
    "gpu": {
        "precisions": ["fp32", "fp16", "bf16"],
        "placements": ["resident", "streamed"],
        "grad_scaler": True,
        "speedup_threshold": 1.5,
        "transfer_passes": 5,
    },
    "report": {"bandwidth_gb_s": 8},
}
QUICK = environment(
    torch_version="2.13.0+cpu",
    cpu_model="AMD EPYC",
    logical_cores=2,
    affinity_cores=2,
    torch_threads=1,
    torch_interop_threads=2,
    python_version="3.11.7",
    python_platform="Linux-6.1-x86_64-with-glibc2.36",
    packages={
        "torch": "2.13.0+cpu",
        "numpy": "2.4.6",
        "pandas": "3.1.1",
        "pyarrow": "26.0.1",
        "matplotlib": "3.11.2",
        "snakemake": "9.27.1",
    },
    workflow=Workflow(commit="d" * 40, dirty=False, library=library()),
)
COLLECT_ENV: dict[str, Any] = {
    "torch_version": "2.13.0+cpu",
    "cuda_compiled_version": None,
    "cuda_runtime_version": None,
    "nvidia_gpu_models": None,
    "nvidia_driver_version": None,
    "cudnn_version": None,
    "os": "Debian GNU/Linux 12 (bookworm) (x86_64)",
    "is_cuda_available": "False",
    "cpu_info": "Architecture: x86_64\nModel name:                              AMD EPYC\n",
}
FAST_EPOCH_S = {32: 0.040, 64: 0.025, 128: 0.018, 256: 0.013, 512: 0.010}  # fastpath; the DataLoader 1.5×
GPU_VARIANTS = (("fp32", "resident"), ("fp16", "streamed"))
WIDTHS = (32, 48, 1)


def _record(
    batch_size: int,
    loader: str,
    repeat: int,
    epochs: tuple[float, ...],
    *,
    device: str = "cpu",
    precision: str = "fp32",
    placement: str = "host",
    finite: bool = True,
    foreign: float = 0.01,
    threads: int = 1,
) -> TrainingRecord:
    """One timing job's epochs of one variant with the values the comparison's tests need."""
    return training_record(
        batch_size=batch_size,
        loader=loader,
        repeat=repeat,
        epoch_s_each=epochs,
        rows=ROWS,
        device=device,
        precision=precision,
        placement=placement,
        finite=finite,
        eval_s=statistics.median(epochs) / 3,
        eval_s_each=tuple(epoch / 3 for epoch in epochs),  # one evaluation after each timed epoch
        foreign_cpu_share=foreign,
        threads=threads,
        loadavg_before=(0.5, 0.2, 0.1),
        loadavg_after=(0.6, 0.2, 0.1),
        warmup_first_step_s=0.003,
        warmup_steady_step_s=0.0003,
    )


@dataclasses.dataclass(frozen=True)
class Draws:
    """How a folder's epochs are made: `epochs` per job; with a `seed`, every job drawn at random around its
    median (the job's drift, sd `job_sd`, and each epoch's, sd `epoch_sd`) instead of the fixed jitter; `slower`:
    a factor on the CPU rows of some (loader, batch size)."""

    epochs: int = 1
    seed: int | None = None
    job_sd: float = 0.006  # the machine's drift between jobs, as the sentinel sees it (SENTINEL_DRIFT: ±1 %)
    epoch_sd: float = 0.02
    slower: tuple[tuple[tuple[str, int], float], ...] = ()

    def epochs_of(self, median: float, jitter: float, rng: np.random.Generator | None) -> tuple[float, ...]:
        if rng is None:
            return (median * jitter,) * self.epochs
        job = median * (1 + rng.normal(0, self.job_sd))
        return tuple(float(job * (1 + e)) for e in rng.normal(0, self.epoch_sd, self.epochs))


def _cpu_records(batch_sizes, scale: float, noisy: bool, busy: bool, threads: int, draws: Draws) -> list:
    found = []
    rng = None if draws.seed is None else np.random.default_rng(draws.seed)
    slower = dict(draws.slower)
    for size in batch_sizes:
        for loader, factor in (("dataloader", 1.5), ("fastpath", 1.0)):
            for repeat, jitter in enumerate((1.0, 1.01, 0.99)):
                # A third repeat at 3× the median is the outlier rule's noise flag.
                if noisy and loader == "fastpath" and size == batch_sizes[0] and repeat == 2:
                    jitter = 3.0
                median = FAST_EPOCH_S[size] * factor * scale * slower.get((loader, size), 1.0)
                found.append(
                    _record(
                        size,
                        loader,
                        repeat,
                        draws.epochs_of(median, jitter, rng),
                        threads=threads,
                        foreign=0.9 if busy and repeat == 0 else 0.01,
                    )
                )
    return found


def _gpu_records(batch_sizes, non_finite: bool, draws: Draws) -> list[TrainingRecord]:
    found = []
    rng = None if draws.seed is None else np.random.default_rng(draws.seed + 1)
    for size in batch_sizes:
        for precision, placement in GPU_VARIANTS:
            for repeat in range(3):
                finite = not (non_finite and precision == "fp16" and repeat == 0)
                found.append(
                    _record(
                        size,
                        "fastpath",
                        repeat,
                        draws.epochs_of(FAST_EPOCH_S[size] / 8, 1 + repeat / 100, rng),
                        device="cuda",
                        precision=precision,
                        placement=placement,
                        finite=finite,
                    )
                )
    return found


def _load_table(noisy_csv: bool = False) -> tuple[LoadCell, ...]:
    """Load + convert cells; with noisy_csv a third CSV repeat at 3× the others (its read) flags the CSV row noisy."""

    def read_s(fmt: str, seconds: float, repeat: int) -> float:
        return (seconds + 0.00071) * 3.0 - 0.00071 if noisy_csv and fmt == "csv" and repeat == 2 else seconds

    found = [
        load_job(
            dataset="benchmark",
            format=fmt,
            repeat=repeat,
            rows=ROWS,
            file_bytes=300_000,
            tensor_bytes=ROWS * 33 * 4,
            read_s=read_s(fmt, seconds, repeat),
            to_pandas_s=0.0005,
            to_numpy_s=0.0002,
            to_torch_s=0.00001,
            loadavg_before=(0.5, 0.2, 0.1),
            loadavg_after=(0.5, 0.2, 0.1),
        )
        for fmt, seconds in (("csv", 0.012), ("parquet", 0.004))
        for repeat in range(3)
    ]
    return loads.aggregate_load_convert(found)


def _transfers() -> TransferTable:
    copies = tuple(
        copy_timing(what, direction, "pageable", bytes=1 << 18, seconds=0.0001)
        for what, direction in (
            ("matrix", "host_to_device"),
            ("target", "host_to_device"),
            ("predictions", "device_to_host"),
        )
    )
    return loads.aggregate_transfers(
        [
            transfer_job(device="cuda", repeat=r, context_startup_s=0.2, pin_memory_s=None, copies=copies)
            for r in range(3)
        ]
    )


# The sentinel's job medians over its reference time: a run whose machine drifted by about ±1 %.
SENTINEL_DRIFT = (1.0, 1.012, 0.99, 1.005, 0.995, 1.008, 0.992, 1.003)
MEASURED = "measured"  # make_results' noise_floor: the one summarize_sentinels finds in the readings


def _sentinel(measured: list[TrainingRecord], device: str, noise_floor: float | str | None) -> SentinelSummary:
    """The table's sentinel as the workflow summarises it, one reading per timing job (batch size, repeat);
    `noise_floor` other than MEASURED replaces the floor found (None: a run without one)."""
    jobs = sorted({(r.batch_size, r.repeat) for r in measured})
    workload = "cpu: 64 x mm(256x256) fp32" if device == "cpu" else "cuda: 64 x mm(1024x1024) fp32"
    readings = []
    for number, (size, repeat) in enumerate(jobs):
        seconds = (0.01 * SENTINEL_DRIFT[number % len(SENTINEL_DRIFT)],) * 3
        readings.append(
            (
                f"bs{size}.rep{repeat}",
                SentinelReadings(
                    workload=workload,
                    seconds=seconds,
                    median_s=seconds[0],
                    steal_share=0.0,
                    cpu_mhz=None,
                    governor=None,
                ),
            )
        )
    summary = summarize_sentinels(readings, NoiseRules())
    return summary if noise_floor == MEASURED else dataclasses.replace(summary, noise_floor=noise_floor)


def _table(measured: list[TrainingRecord], quick: Environment, noise_floor: float | str | None) -> TrainingTable:
    return TrainingTable(
        table=tuple(aggregate.aggregate_training(measured, ROWS)),
        non_finite=aggregate.non_finite_runs(measured),
        sentinel=_sentinel(measured, measured[0].device, noise_floor),
        host_memory_bytes=quick.host_memory_bytes,
        environment=quick,
    )


def make_results(
    root: Path,
    name: str,
    *,
    scale: float = 1.0,
    batch_sizes=(32, 512),
    gpu: bool = False,
    config: dict[str, Any] | None = None,
    quick: Environment | None = None,
    noisy: bool = False,
    busy: bool = False,
    non_finite: bool = False,
    threads: int = 1,
    provenance: dict[str, Any] | None = None,
    manifest: bool = True,
    full_path_in_decision: bool = True,
    noisy_csv_load: bool = False,
    draws: Draws = Draws(),
    noise_floor: float | str | None = MEASURED,
) -> Path:
    """A results folder with the records the comparison reads, made as the workflow makes them."""
    folder = root / name
    quick = quick or QUICK
    cpu = _table(_cpu_records(batch_sizes, scale, noisy, busy, threads, draws), quick, noise_floor)
    atomic.write_record(folder / paths.CPU_TABLE, cpu)
    train_table, transfers = list(cpu.table), None
    if gpu:
        gpu_table = _table(_gpu_records(batch_sizes, non_finite, draws), quick, noise_floor)
        atomic.write_record(folder / paths.GPU_TABLE, gpu_table)
        train_table, transfers = train_table + list(gpu_table.table), _transfers()
    full_path = fullpath.full_path(train_table, _load_table(noisy_csv_load), transfers)
    if full_path_in_decision:
        atomic.write_record(
            folder / paths.DECISION,
            Decision(
                verdict=decision.verdict(
                    train_table, full_path, quick, Figures(WIDTHS), rows=ROWS, host_memory_bytes=2**34
                ),
                sheet=decision.decision_sheet(
                    train_table, _load_table(), quick, Figures(WIDTHS), batch_sizes, transfers=transfers
                ),
                full_path=tuple(full_path),
                gpu_memory=decision.gpu_memory(train_table, Figures(WIDTHS), ROWS),
                environment=quick,
            ),
        )
    else:
        atomic.write_record(folder / paths.FULL_PATH, FullPathTable(rows=tuple(full_path)))
    atomic.write_record(folder / paths.ENVIRONMENT, environment_report(quick, **COLLECT_ENV))
    atomic.write_text(folder / paths.CONFIG, yaml.safe_dump(config or CONFIG, sort_keys=False))
    atomic.write_text(folder / "REPORT.md", "# report\n")
    if provenance is not None:
        atomic.write_json(folder / paths.PROVENANCE, provenance)
    if manifest:
        write_manifest(folder)
    return folder


def write_manifest(folder: Path) -> None:
    """What `cd folder && find . -type f ! -name MANIFEST.sha256 | sed 's|^./||' | xargs sha256sum` writes."""
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.name != paths.MANIFEST and not p.name.startswith(".")
    )
    lines = [f"{atomic.sha256_file(p)}  {p.relative_to(folder).as_posix()}" for p in files]
    (folder / paths.MANIFEST).write_text("\n".join(lines) + "\n")


def _compare(a: Path, b: Path, label_a: str = "laptop", label_b: str = "server") -> compare.Comparison:
    return compare.compare(results_folder.load_results(a, label_a), results_folder.load_results(b, label_b))


def _with(base: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(base)
    *parents, last = dotted.split(".")
    node = changed
    for key in parents:
        node = node[key]
    node[last] = value
    return changed


def _mentioning(result: compare.Comparison, text: str) -> list[str]:
    return [w for w in result.warnings if text in w]


# ---------------------------------------------------------------- the same folder twice


def test_a_folder_against_itself_gives_ratio_one_and_no_config_warning(tmp_path):
    folder = make_results(tmp_path, "run", gpu=True)
    result = _compare(folder, folder)
    assert len(result.rows) == 2 * (2 + len(GPU_VARIANTS))
    for row in result.rows:
        assert row.present == "both"
        for name in ("epoch_s", "samples_per_s", "full_path_s"):
            assert row.ratio_values(name)[0] == 1.0
        for name in ("epoch_s", "eval_s"):
            assert row.part(name).ratio.low <= 1.0 <= row.part(name).ratio.high
            assert row.part(name).outcome == "no measurable difference"
        assert row.samples_per_s.ratio.low <= 1.0 <= row.samples_per_s.ratio.high
        assert row.full_path.outcome == "no interval" and row.ratio_values("full_path_s")[1:] == (None, None)
        assert row.epoch_comparison == "same median"
        assert not any(key.endswith("spreads_overlap") for key in row.table_row())
    assert result.config_differences == [] and result.environment_differences == []
    assert result.warnings == []
    assert result.full_path_format == "parquet"


def test_rows_are_matched_on_the_real_variant_keys(tmp_path):
    folder = make_results(tmp_path, "run", gpu=True)
    result = _compare(folder, folder)
    real_keys = set(json.loads((folder / paths.CPU_TABLE).read_text())["table"][0])
    assert set(VARIANT_KEYS) <= real_keys
    assert {r.key for r in result.rows} == {r.key for r in results_folder.load_results(folder, "x").training}


# ---------------------------------------------------------------- ratios and wording


def test_ratios_are_b_over_a_and_the_wording_names_the_faster_side(tmp_path):
    laptop = make_results(tmp_path, "laptop")
    server = make_results(tmp_path, "server", scale=0.5)
    row = next(r for r in _compare(laptop, server).rows if r.loader == "fastpath" and r.batch_size == 32)
    assert row.epoch_s.ratio.point == pytest.approx(0.5)
    assert row.samples_per_s.ratio.point == pytest.approx(2.0)
    assert row.epoch_comparison == "server 2× faster than laptop"
    assert row.epoch_s.ratio.low <= 0.5 <= row.epoch_s.ratio.high < 1
    assert row.epoch_s.outcome == row.eval_s.outcome == "B faster"
    # samples/s is samples over the median epoch: its interval is the epoch interval's, inverted.
    assert row.samples_per_s.ratio.low == pytest.approx(1 / row.epoch_s.ratio.high)
    assert row.samples_per_s.ratio.high == pytest.approx(1 / row.epoch_s.ratio.low)
    assert row.full_path.ratio < 1
    reverse = next(
        r for r in _compare(server, laptop, "server", "laptop").rows if r.loader == "fastpath" and r.batch_size == 32
    )
    assert reverse.epoch_s.ratio.point == pytest.approx(2.0)
    assert reverse.epoch_comparison == "server 2× faster than laptop"
    assert reverse.epoch_s.outcome == "A faster"


def test_time_wording_for_missing_sides():
    assert compare_match.time_wording(1.0, None, "laptop", "server") == "only in laptop"
    assert compare_match.time_wording(None, 1.0, "laptop", "server") == "only in server"
    assert compare_match.time_wording(0.3, 0.1, "laptop", "server") == "server 3× faster than laptop"
    assert compare_match.time_wording(0.1, 0.3, "laptop", "server") == "laptop 3× faster than server"
    assert compare_match.time_wording(1.002, 1.0, "laptop", "server") == "server 1.0020× faster than laptop"


def test_fastest_full_path_compares_across_devices(tmp_path):
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", gpu=True))
    assert result.fastest["a"]["variant"] == "cpu fastpath 1 thread"
    assert result.fastest["b"]["variant"].startswith("cuda ")
    assert result.fastest["ratio_b_over_a"] < 1
    assert result.fastest["comparison"].startswith("server ")


# ---------------------------------------------------------------- intervals, outcomes and the gate
# Each row's B/A ratio of epoch and eval time carries a bootstrap interval (ratio_interval over the two cells'
# jobs, unpaired) and an outcome decided against the larger of the two runs' noise floors.

TIGHT = Draws(epochs=5, seed=11, job_sd=0.002, epoch_sd=0.004)  # a quiet machine: intervals of about ±0.5 %


def _row(result: compare.Comparison, loader: str = "fastpath", batch_size: int = 32, device: str = "cpu"):
    return next(r for r in result.rows if (r.loader, r.batch_size, r.device) == (loader, batch_size, device))


def _cell(jobs: tuple[tuple[float, ...], ...], **variant: Any) -> TrainingCell:
    """A training cell whose median, interval, job medians and rates are those of `jobs`, as aggregation makes them."""
    estimate = job_intervals.median_interval(jobs)
    return training_cell(**variant, epoch_s_jobs=jobs, epoch_s=estimate)


def _jobs(median: float, seed: int, jobs: int = 3, epochs: int = 5, sd: float = 0.003) -> tuple[tuple[float, ...], ...]:
    rng = np.random.default_rng(seed)
    return tuple(tuple(float(median * (1 + e)) for e in rng.normal(0, sd, epochs)) for _ in range(jobs))


def test_the_cell_builder_keeps_median_and_interval_consistent():
    cell = _cell(_jobs(0.01, 1))
    assert cell.epoch_s.point == pytest.approx(statistics.geometric_mean(cell.epoch_s_runs))
    assert cell.epoch_s.low <= cell.epoch_s.point <= cell.epoch_s.high


def test_a_row_3_percent_slower_inside_a_5_percent_noise_floor_is_no_measurable_difference():
    a, b = _cell(_jobs(0.0100, 1)), _cell(_jobs(0.0103, 2))
    estimate, words = compare_match.time_ratio("epoch_s", a, b, floor=0.05, level=0.95)
    assert estimate.point == pytest.approx(1.03, abs=0.005)
    assert 1.0 < estimate.low and estimate.high < 1.05  # the interval alone says slower ...
    assert words == "no measurable difference"  # ... but not beyond the run's own drift
    assert compare_match.time_ratio("epoch_s", a, b, floor=0.0, level=0.95)[1] == "A faster"
    assert compare_match.time_ratio("epoch_s", b, a, floor=0.0, level=0.95)[1] == "B faster"


def test_the_ratio_interval_is_welch_t_on_the_job_medians_at_the_level_given():
    a, b = _cell(_jobs(0.0100, 1)), _cell(_jobs(0.0103, 2))
    estimate, _ = compare_match.time_ratio("epoch_s", a, b, floor=0.0, level=0.95)
    assert estimate == job_intervals.ratio_interval(a.epoch_s_jobs, b.epoch_s_jobs, level=0.95)
    assert estimate.method == job_intervals.WELCH and estimate.jobs == 3
    wider = compare_match.time_ratio("epoch_s", a, b, floor=0.0, level=0.99)[0]
    assert wider.level == 0.99 and wider.low < estimate.low and wider.high > estimate.high


def test_the_rows_of_a_comparison_are_one_family_held_at_the_tables_level(tmp_path):
    """16 ratios (8 rows, epoch and eval): each at 1 - 0.05/16, so together at 95 % (Bonferroni)."""
    result = _compare(make_results(tmp_path, "a", gpu=True), make_results(tmp_path, "b", gpu=True))
    assert {row.family for row in result.rows} == {16}
    assert {row.family_confidence for row in result.rows} == {0.95}
    assert [row.confidence for row in result.rows] == pytest.approx([1 - 0.05 / 16] * len(result.rows))
    # benchmarks/plant_slowdowns.py --family: another family size, the same rows each at its share
    a, b = (results_folder.load_results(path, label) for path, label in ((tmp_path / "a", "a"), (tmp_path / "b", "b")))
    four = compare.compare(a, b, family=4)
    assert {row.family for row in four.rows} == {4}
    assert [row.confidence for row in four.rows] == pytest.approx([1 - 0.05 / 4] * len(four.rows))
    assert all(f.epoch_s.ratio.high < r.epoch_s.ratio.high for f, r in zip(four.rows, result.rows))


def test_the_row_floor_is_the_larger_of_the_two_sides_and_zero_without_one(tmp_path):
    none = results_folder.load_results(make_results(tmp_path, "none", noise_floor=None), "a")
    low = results_folder.load_results(make_results(tmp_path, "low", noise_floor=0.01), "b")
    high = results_folder.load_results(make_results(tmp_path, "high", noise_floor=0.04), "c")
    assert compare_match.row_floor(none, none, "cpu") == 0.0
    assert compare_match.row_floor(none, low, "cpu") == 0.01
    assert compare_match.row_floor(high, low, "cpu") == compare_match.row_floor(low, high, "cpu") == 0.04
    result = compare.compare(none, low)
    assert {row.noise_floor for row in result.rows} == {0.01}
    assert _mentioning(result, "a: its CPU jobs have no noise floor")


def test_an_a_a_pair_shows_no_measurable_difference_on_every_row_and_passes_the_gate(tmp_path, capsys):
    """Two runs of one distribution, different draws: nothing to see, and the gate stays open."""
    first = make_results(tmp_path, "first", gpu=True, draws=Draws(epochs=5, seed=1))
    second = make_results(tmp_path, "second", gpu=True, draws=Draws(epochs=5, seed=2))
    result = _compare(first, second)
    assert len(result.rows) == 8 and all(r.present == "both" for r in result.rows)
    assert {r.epoch_s.ratio.point for r in result.rows} != {1.0}  # different draws
    for row in result.rows:
        for name in ("epoch_s", "eval_s"):
            assert row.part(name).outcome == "no measurable difference", (row, name)
            ratio = row.part(name).ratio
            assert ratio.low <= ratio.point <= ratio.high
        assert row.noise_floor > 0 and row.family_confidence == 0.95
    assert result.tally["epoch_s"] == {"B faster": 0, "A faster": 0, "no measurable difference": 8}
    assert compare.regressions(result, 5) == []
    out = tmp_path / "cmp"
    assert compare_results.main([str(first), str(second), "--out", str(out), "--fail-if-slower", "5"]) == 0
    assert "no row of B slower than A by more than 5 %" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == sorted(comparison.OUTPUT_NAMES)


def test_the_same_folders_give_the_same_intervals(tmp_path):
    first = make_results(tmp_path, "first", draws=Draws(epochs=5, seed=1))
    second = make_results(tmp_path, "second", draws=Draws(epochs=5, seed=2))
    assert _compare(first, second).rows == _compare(first, second).rows


def _slower_pair(tmp_path: Path, factor: float, **b_options: Any) -> tuple[Path, Path]:
    base = make_results(tmp_path, "base", draws=TIGHT)
    slow = make_results(
        tmp_path, "slow", draws=dataclasses.replace(TIGHT, seed=12, slower=((("fastpath", 32), factor),)), **b_options
    )
    return base, slow


def test_a_row_30_percent_slower_is_a_faster_and_fails_a_5_percent_gate_naming_it(tmp_path, capsys):
    base, slow = _slower_pair(tmp_path, 1.3)
    result = _compare(base, slow, "base", "slow")
    row = _row(result)
    assert row.epoch_s.ratio.point == pytest.approx(1.3, rel=0.02)
    assert row.epoch_s.ratio.low > 1.25 and row.epoch_s.outcome == row.eval_s.outcome == "A faster"
    others = [r for r in result.rows if r is not row]
    assert {r.epoch_s.outcome for r in others} == {"no measurable difference"}
    assert result.tally["epoch_s"] == {"B faster": 0, "A faster": 1, "no measurable difference": 3}
    out = tmp_path / "cmp"
    args = [str(base), str(slow), "--out", str(out), "--label-a", "base", "--label-b", "slow"]
    assert compare_results.main([*args, "--fail-if-slower", "5"]) == compare_results.REGRESSION == 1
    err = capsys.readouterr().err
    regressions = [line for line in err.splitlines() if line.startswith("regression: ")]
    assert (
        [line.split(":")[1].strip() for line in regressions]
        == ["cpu fastpath 1 thread B=32"] * 2
        + [
            "the whole cpu table (4 cells in 1 job group)"  # one CPU job times every batch size  # one cell 30 % slower of four: the table's mean 7 %
        ]
    )
    assert "epoch time slow/base 1.30" in regressions[0] and "eval time slow/base" in regressions[1]
    assert "slow slower by more than 5 %" in regressions[0]
    assert "at their points: cpu fastpath 1 thread B=32 (1.30×)" in regressions[2]
    assert "error: 1 row(s) and the whole cpu table of slow slower than base by more than 5 % (--fail-if-slower)" in err
    # The comparison is written before the gate decides.
    assert sorted(p.name for p in out.iterdir()) == sorted(comparison.OUTPUT_NAMES)
    assert compare_results.main([*args, "--fail-if-slower", "50"]) == 0
    assert "regression" not in capsys.readouterr().err


def test_the_gate_needs_the_whole_interval_beyond_the_threshold(tmp_path):
    base, slow = _slower_pair(tmp_path, 1.3)
    result = _compare(base, slow)
    low = _row(result).epoch_s.ratio.low
    percent = (low - 1) * 100
    assert [(r.row.loader, r.metric) for r in compare.regressions(result, percent - 0.5)][:1] == [
        ("fastpath", "epoch_s")
    ]
    assert "epoch_s" not in {r.metric for r in compare.regressions(result, percent + 0.5) if not r.in_job}
    # over the rest of its job the row has its own, narrower interval: the same rule holds on it
    in_job = (_row(result).epoch_s.in_job.low - 1) * 100
    assert in_job > percent
    assert ("epoch_s", True) in {(r.metric, r.in_job) for r in compare.regressions(result, in_job - 0.5)}
    assert ("epoch_s", True) not in {(r.metric, r.in_job) for r in compare.regressions(result, in_job + 0.5)}


def test_a_slower_row_inside_the_noise_floor_does_not_fail_the_gate(tmp_path):
    base, slow = _slower_pair(tmp_path, 1.03, noise_floor=0.05)
    result = _compare(base, slow)
    row = _row(result)
    assert row.noise_floor == 0.05 and 1.0 < row.epoch_s.ratio.low < 1.05
    assert row.epoch_s.outcome == "no measurable difference"
    assert [r for r in compare.regressions(result, 0) if not r.in_job] == []
    # the machine's own change cancels over the rest of the job: there the floor does not apply
    assert row.epoch_s.in_job_outcome == "A faster"
    quiet_base, quiet_slow = _slower_pair(tmp_path / "quiet", 1.03, noise_floor=0.0)
    quiet = _compare(quiet_base, quiet_slow)
    assert _row(quiet).epoch_s.outcome == "A faster"
    assert {(r.row.loader, r.row.batch_size) for r in compare.regressions(quiet, 0)} == {("fastpath", 32)}


def test_intervals_at_different_levels_use_the_higher_and_say_so(tmp_path):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server")
    _edit_json(
        server,
        paths.CPU_TABLE,
        lambda d: [
            cell[name].__setitem__("level", 0.9)
            for cell in d["table"]
            for name in ("epoch_s", "samples_per_s", "eval_s")
        ],
    )
    result = _compare(laptop, server)
    assert {row.family_confidence for row in result.rows} == {0.95}
    assert _mentioning(result, "intervals are at different levels (laptop: [0.95], server: [0.9])")


@pytest.mark.parametrize("value", ["-5", "-0.1", "abc", "nan", "inf"])
def test_a_gate_percent_that_is_not_a_non_negative_number_is_refused(tmp_path, capsys, value):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server")
    with pytest.raises(SystemExit) as exited:
        compare_results.main([str(laptop), str(server), "--out", str(tmp_path / "cmp"), "--fail-if-slower", value])
    assert exited.value.code == 2
    assert "argument --fail-if-slower" in capsys.readouterr().err
    assert not (tmp_path / "cmp").exists()
    with pytest.raises(ValueError):
        compare.regressions(_compare(laptop, server), float(value) if value != "abc" else -1.0)


def test_full_path_rows_have_a_ratio_but_no_interval(tmp_path):
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", scale=0.5))
    for row in result.rows:
        assert row.full_path.ratio < 1 and row.full_path.outcome == "no interval"
        assert row.ratio_values("full_path_s")[1:] == (None, None)
        assert row.full_path.a.min <= row.full_path.a.median <= row.full_path.a.max
    text = comparison.markdown(result)
    assert "(no interval)" in text


def test_the_outputs_show_intervals_outcomes_floors_and_the_tally(tmp_path):
    base, slow = _slower_pair(tmp_path, 1.3, noise_floor=0.02)
    result = _compare(base, slow, "base", "slow")
    out = tmp_path / "cmp"
    comparison.write_comparison(result, out)
    text = (out / "comparison.md").read_text()
    assert "differences below ±2.0 % on slow's machine that day are not evidence" in text
    assert "| jobs a CPU row | 3 | 3 |" in text  # what the rows' intervals rest on (timing.budget_s may add jobs)
    floor_a = result.sides[0]["sentinels"]["cpu"]["noise_floor"]
    assert f"differences below ±{floor_a:.1%}".replace("%", " %") + " on base's machine that day" in text
    assert (
        "**Epoch time:** 0 rows B faster (slow), 1 row A faster (base), 3 rows no measurable difference; "
        "0 rows on one side only." in text
    )
    row = _row(result)
    shown = f"{row.epoch_s.ratio.point:.3f} ({row.epoch_s.ratio.low:.3f}–{row.epoch_s.ratio.high:.3f})"
    assert shown in text and "**A faster** (base 1.3× faster than slow)" in text
    assert "epoch slow/base (95 % CI)" in text and "**no measurable difference** (medians: " in text
    document = json.loads((out / "comparison.json").read_text())
    assert document["tally"]["epoch_s"] == result.tally["epoch_s"] and document["tally"]["one_sided"] == 0
    assert document["sides"]["b"]["sentinels"]["cpu"]["noise_floor"] == 0.02
    with open(out / "comparison.csv", newline="") as handle:
        csv_row = next(r for r in csv.DictReader(handle) if (r["loader"], r["batch_size"]) == ("fastpath", "32"))
    assert csv_row["epoch_s_outcome"] == "A faster" and float(csv_row["epoch_s_ratio_ci_low"]) > 1.25
    assert csv_row["full_path_s_outcome"] == "no interval" and csv_row["full_path_s_ratio_ci_low"] == ""


def test_the_figure_draws_each_interval_and_hollow_markers_for_no_measurable_difference(tmp_path):
    base, slow = _slower_pair(tmp_path, 1.3, noise_floor=0.02)
    result = _compare(base, slow)
    figure = comparison.comparison_figure(result, tmp_path / "cmp.png", tmp_path / "cmp.svg")
    time_ratio = figure.axes[2]
    # One interval bar per row measured on both sides, for the epoch time (the full path has none).
    bars = [c for c in time_ratio.containers if c.has_yerr]
    assert sum(len(c.lines[2][0].get_segments()) for c in bars) == len(result.rows)
    hollow = [line for line in time_ratio.get_lines() if line.get_markerfacecolor() == "white"]
    assert sum(len(line.get_xdata()) for line in hollow) == 3  # every row but the slower one
    assert any(patch.get_label() == "largest noise floor ±2.0%" for patch in time_ratio.get_legend().get_patches())


# ---------------------------------------------------------------- one-sided rows and GPU rows


def test_gpu_rows_on_one_side_are_listed_and_the_cpu_only_side_is_named(tmp_path):
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", gpu=True))
    only = [r for r in result.rows if r.present == "b_only"]
    assert len(only) == 2 * len(GPU_VARIANTS) and all(r.device == "cuda" for r in only)
    assert all(r.epoch_s.a is None and r.epoch_s.ratio is None for r in only)
    assert all(r.epoch_comparison == "only in server" for r in only)
    assert _mentioning(result, "laptop has no GPU rows (no tables/gpu_training.json)")
    assert _mentioning(result, f"{len(only)} row(s) exist only in server")


def test_batch_sizes_on_one_side_only_are_warned_about_and_kept(tmp_path):
    result = _compare(make_results(tmp_path, "laptop", batch_sizes=(32,)), make_results(tmp_path, "server"))
    assert _mentioning(result, "Batch size(s) 512 were measured only in server")
    assert {r.present for r in result.rows if r.batch_size == 512} == {"b_only"}


# ---------------------------------------------------------------- fairness warnings


@pytest.mark.parametrize(
    "key, value",
    [
        ("data.benchmark.rows", 4096),
        ("data.benchmark.features", 16),
        ("data.benchmark.noise", 0.5),
        ("model.hidden", 64),
        ("model.lr", 0.01),
        ("seed", 1),
        ("timing.repeats", 5),
        ("timing.warmup_steps", 10),
        ("timing.threads", 2),
        ("timing.loaders", ["fastpath"]),
        ("gpu.precisions", ["fp32"]),
        ("aggregate.noise_iqr_ratio", 0.2),
        ("aggregate.outlier_factor", 3.0),
        ("aggregate.foreign_cpu_share", 0.5),
        ("aggregate.loadavg_rise", 1.0),
    ],
)
def test_config_that_makes_the_comparison_unfair_is_a_warning(tmp_path, key, value):
    result = _compare(
        make_results(tmp_path, "laptop"), make_results(tmp_path, "server", config=_with(CONFIG, key, value))
    )
    warned = _mentioning(result, f"Config {key} differs")
    assert len(warned) == 1 and "laptop" in warned[0] and "server" in warned[0]
    assert [d["key"] for d in result.config_differences] == [key]


def test_epochs_timed_after_different_rehearsals_are_a_warning_naming_both_counts(tmp_path):
    """An archived run from before measure.rehearsal timed its epochs cold: its short epochs read slower."""
    older = make_results(tmp_path, "before", manifest=False)
    table = records.read(TrainingTable, older / paths.CPU_TABLE)
    cold = tuple(dataclasses.replace(cell, rehearsal_steps=0) for cell in table.table)
    atomic.write_record(older / paths.CPU_TABLE, dataclasses.replace(table, table=cold))
    result = _compare(older, make_results(tmp_path, "after", manifest=False))
    (warned,) = _mentioning(result, "timed their epochs after different untimed rehearsals")
    assert f"{len(cold)} row(s)" in warned and "laptop: 0 updates, server: 8" in warned
    assert not _mentioning(_compare(older, older), "untimed rehearsals")


def test_different_noise_thresholds_are_a_warning_naming_the_key_and_both_values(tmp_path):
    result = _compare(
        make_results(tmp_path, "laptop"),
        make_results(tmp_path, "server", config=_with(CONFIG, "aggregate.noise_iqr_ratio", 0.2)),
    )
    warned = _mentioning(result, "Config aggregate.noise_iqr_ratio differs (laptop: 0.1, server: 0.2)")
    assert len(warned) == 1 and "noisy" in warned[0]


def test_a_threshold_absent_on_one_side_is_a_warning(tmp_path):
    older = copy.deepcopy(CONFIG)
    del older["aggregate"]["loadavg_rise"]
    result = _compare(make_results(tmp_path, "laptop", config=older), make_results(tmp_path, "server"))
    assert _mentioning(result, "Config aggregate.loadavg_rise differs (laptop: absent, server: 0.5)")


def test_a_config_difference_that_does_not_touch_timings_is_listed_but_not_warned(tmp_path):
    result = _compare(
        make_results(tmp_path, "laptop"),
        make_results(tmp_path, "server", config=_with(CONFIG, "report.bandwidth_gb_s", 16)),
    )
    assert result.config_differences == [{"key": "report.bandwidth_gb_s", "a": 8, "b": 16}]
    assert not _mentioning(result, "Config")


def test_environment_differences_in_threads_and_torch_are_warnings(tmp_path):
    server_env = dataclasses.replace(QUICK, torch_version="2.13.0+cu130", nvidia_gpu_models=("NVIDIA H200",))
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", quick=server_env, threads=2))
    keys = {d["key"]: (d["a"], d["b"]) for d in result.environment_differences}
    assert keys["quick.torch_version"] == ("2.13.0+cpu", "2.13.0+cu130")
    assert keys["quick.nvidia_gpu_models"] == ([], ["NVIDIA H200"])
    assert keys["training_threads"] == ([1], [2])
    assert _mentioning(result, "different torch thread counts (laptop: [1], server: [2])")
    assert _mentioning(result, "the same release in different builds")


# ---------------------------------------------------------------- noise


def test_noisy_busy_and_non_finite_sides_are_named(tmp_path):
    clean = make_results(tmp_path, "laptop")
    flagged = make_results(tmp_path, "server", gpu=True, noisy=True, busy=True, non_finite=True)
    result = _compare(clean, flagged)
    assert _mentioning(result, "server: 1 of 8 training cells are flagged noisy")
    assert _mentioning(result, "cpu fastpath 1 thread B=32")
    assert _mentioning(result, "ran on a busy machine")
    assert _mentioning(result, "server: 2 training run(s) went NaN/inf")
    assert not _mentioning(result, "laptop:")
    noisy_row = next(r for r in result.rows if r.loader == "fastpath" and r.batch_size == 32 and r.device == "cpu")
    assert (noisy_row.noisy_a, noisy_row.noisy_b) == (False, True)


def _full_path_warnings(result: compare.Comparison) -> list[str]:
    return _mentioning(result, "full-path row(s) are flagged noisy")


def test_full_path_rows_of_a_noisy_training_cell_are_not_warned_twice(tmp_path):
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", noisy=True))
    assert _mentioning(result, "server: 1 of 4 training cells are flagged noisy")
    # Its full-path rows (CSV and Parquet) are noisy through the training cell, which is already named.
    assert _full_path_warnings(result) == []


def test_noisy_full_path_rows_of_clean_training_cells_are_warned(tmp_path):
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", noisy_csv_load=True))
    warned = _full_path_warnings(result)
    assert len(warned) == 1 and warned[0].startswith("server: 4 full-path row(s)")
    assert "cpu dataloader 1 thread B=32 (csv)" in warned[0]


def test_only_the_full_path_rows_of_the_flagged_training_cell_are_hidden(tmp_path):
    result = _compare(
        make_results(tmp_path, "laptop"), make_results(tmp_path, "server", noisy=True, noisy_csv_load=True)
    )
    assert _mentioning(result, "server: 1 of 4 training cells are flagged noisy")
    warned = _full_path_warnings(result)
    # 4 noisy CSV rows less the one of cpu fastpath B=32, whose training row is flagged.
    assert len(warned) == 1 and warned[0].startswith("server: 3 full-path row(s)")
    assert "cpu fastpath 1 thread B=32 (csv)" not in warned[0]
    assert all(
        cell in warned[0]
        for cell in (
            "cpu dataloader 1 thread B=32 (csv)",
            "cpu dataloader 1 thread B=512 (csv)",
            "cpu fastpath 1 thread B=512 (csv)",
        )
    )


# ---------------------------------------------------------------- manifest


def test_manifest_that_verifies_gives_no_warning(tmp_path):
    folder = make_results(tmp_path, "run")
    check = results_folder.verify_manifest(folder)
    assert check.verified and check.result.listed == len([p for p in folder.rglob("*") if p.is_file()]) - 1


def test_edited_missing_and_extra_files_fail_the_manifest(tmp_path):
    folder = make_results(tmp_path, "run", gpu=True)
    (folder / "REPORT.md").write_text("# edited\n")
    (folder / paths.GPU_TABLE).unlink()
    (folder / "notes.txt").write_text("added later\n")
    check = results_folder.verify_manifest(folder)
    assert (check.result.changed, check.result.missing, check.result.added) == (
        ("REPORT.md",),
        (paths.GPU_TABLE,),
        ("notes.txt",),
    )
    warning = compare_warnings.manifest_warnings(results_folder.load_results(folder, "laptop"))
    assert len(warning) == 1 and "MANIFEST.sha256 does not verify" in warning[0] and "REPORT.md" in warning[0]
    assert "1 added (notes.txt)" in warning[0]


def test_files_written_after_the_manifest_are_not_added_but_a_hidden_file_is(tmp_path):
    folder = make_results(tmp_path, "run")
    for name in manifest.AFTER_THE_MANIFEST:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("written later\n")
    # ... except the HTML report, vouched for by what it embeds: a stand-in that embeds nothing fails
    assert not results_folder.verify_manifest(folder).verified
    (folder / paths.SNAKEMAKE_REPORT_HTML).unlink()
    assert results_folder.verify_manifest(folder).verified
    (folder / "tables" / ".decision.json.abc.tmp").write_text("written later\n")
    assert results_folder.verify_manifest(folder).result.added == ("tables/.decision.json.abc.tmp",)


def test_a_listed_file_replaced_by_a_link_fails_the_manifest(tmp_path):
    folder = make_results(tmp_path, "run")
    copy = tmp_path / "REPORT.copy.md"
    copy.write_bytes((folder / "REPORT.md").read_bytes())
    (folder / "REPORT.md").unlink()
    (folder / "REPORT.md").symlink_to(copy)
    warning = compare_warnings.manifest_warnings(results_folder.load_results(folder, "laptop"))
    assert len(warning) == 1 and "1 symbolic link (not followed) (REPORT.md)" in warning[0]


def test_manifest_lines_leaving_the_folder_or_repeated_cannot_be_checked(tmp_path):
    folder = make_results(tmp_path, "run")
    with open(folder / paths.MANIFEST, "a") as handle:
        handle.write(f"{'0' * 64}  ../outside.txt\nnot a manifest line\n")
    check = results_folder.verify_manifest(folder)
    assert not check.verified and check.result is None and "not a sha256sum line" in check.error
    warning = compare_warnings.manifest_warnings(results_folder.load_results(folder, "laptop"))
    assert len(warning) == 1 and "MANIFEST.sha256 cannot be checked" in warning[0] and "and 1 more line" in warning[0]


def test_manifest_written_by_find_and_sha256sum_in_binary_mode_verifies(tmp_path):
    folder = make_results(tmp_path, "run")
    manifest_file = folder / paths.MANIFEST
    manifest_file.write_text(
        "".join(line.replace("  ", " *./", 1) + "\n" for line in manifest_file.read_text().splitlines())
    )
    assert results_folder.verify_manifest(folder).verified


def test_no_manifest_cannot_verify(tmp_path):
    result = _compare(make_results(tmp_path, "laptop", manifest=False), make_results(tmp_path, "server"))
    assert _mentioning(result, "laptop has no MANIFEST.sha256: cannot verify that nothing was edited")


# ---------------------------------------------------------------- provenance and inputs


def test_provenance_fills_the_header_and_every_key_is_optional(tmp_path):
    provenance = {
        "workflow": {"commit": "c" * 40, "dirty": True},
        "snakemake_version": "9.99.0",
        "command_line": "snakemake --cores 4",
        "created": "2026-05-01T10:00:00+00:00",
        "invocation": {"host": "node17"},
        "record_commits": {"c" * 40: 40, "e" * 40 + " (dirty)": 2},
    }
    result = _compare(
        make_results(tmp_path, "laptop", provenance=provenance), make_results(tmp_path, "server", provenance={})
    )
    a, b = result.sides
    assert (a["workflow_commit"], a["snakemake_version"], a["commit_source"]) == ("c" * 40, "9.99.0", "provenance.json")
    assert (b["workflow_commit"], b["snakemake_version"]) == ("d" * 40, "9.27.1")
    assert _mentioning(result, "laptop: the workflow had uncommitted changes")
    assert _mentioning(
        result, f"laptop: its records come from more than one workflow version ({'c' * 40}, {'e' * 40} (dirty))"
    )
    assert not _mentioning(result, "server:")
    text = comparison.markdown(result)
    assert "9.99.0" in text and "snakemake --cores 4" in text and "node17" in text


def test_record_commits_may_be_a_list():
    assert compare_warnings.distinct_record_commits(["a", "b", "a"]) == ["a", "b"]
    assert compare_warnings.distinct_record_commits(None) == []


def test_full_path_is_read_from_its_table_when_there_is_no_decision(tmp_path):
    from_table = make_results(tmp_path, "table", full_path_in_decision=False)
    from_decision = make_results(tmp_path, "decision")
    assert (
        results_folder.load_results(from_table, "a").full_path
        == results_folder.load_results(from_decision, "b").full_path
    )
    assert results_folder.load_results(from_table, "a").verdict is None


@pytest.mark.parametrize("name", [paths.CONFIG, paths.CPU_TABLE, paths.ENVIRONMENT])
def test_a_folder_without_a_required_file_is_refused_naming_it(tmp_path, name):
    folder = make_results(tmp_path, "run")
    (folder / name).unlink()
    with pytest.raises(folder_checks.NotAResultsFolder, match=name.replace(".", r"\.")):
        results_folder.load_results(folder, "a")


def test_a_folder_without_decision_or_full_path_table_is_refused_naming_both(tmp_path):
    folder = make_results(tmp_path, "run")
    (folder / paths.DECISION).unlink()
    with pytest.raises(
        folder_checks.NotAResultsFolder, match=r"full_path\.json: missing, and there is no tables/decision"
    ):
        results_folder.load_results(folder, "a")


def test_an_empty_cpu_table_is_refused(tmp_path):
    folder = make_results(tmp_path, "run")
    written = records.read(TrainingTable, folder / paths.CPU_TABLE)
    atomic.write_record(folder / paths.CPU_TABLE, dataclasses.replace(written, table=(), non_finite=()))
    with pytest.raises(folder_checks.NotAResultsFolder, match="cpu_training.json: has no rows"):
        results_folder.load_results(folder, "a")


def test_a_damaged_table_is_refused_naming_it(tmp_path):
    folder = make_results(tmp_path, "run")
    (folder / paths.CPU_TABLE).write_text('{"table": [')
    with pytest.raises(folder_checks.NotAResultsFolder, match="cpu_training.json: not valid JSON"):
        results_folder.load_results(folder, "a")


def test_a_table_from_before_records_had_versions_is_refused_naming_the_schema(tmp_path):
    folder = make_results(tmp_path, "run")
    _edit_json(folder, paths.CPU_TABLE, lambda document: [document.pop(k) for k in ("schema", "schema_version")])
    with pytest.raises(folder_checks.DamagedRecord) as refused:
        results_folder.load_results(folder, "a")
    assert str(refused.value) == (
        f"{folder / paths.CPU_TABLE}: has no schema (written by a workflow before "
        f"records were versioned); this workflow reads {TrainingTable.SCHEMA} version "
        f"{TrainingTable.VERSION}"
    )


# ---------------------------------------------------------------- bad values
# Every table is a record (accel_choice.records): a value no run writes is refused as the file is read, naming the
# file, the field and the value found. An archived folder is compared as it is, so no advice to re-run is given.


def _edit_json(folder: Path, name: str, edit: Callable[[Any], Any]) -> None:
    """Change a table in place; json.dumps writes NaN and inf as the literals NaN and Infinity."""
    document = json.loads((folder / name).read_text())
    edit(document)
    (folder / name).write_text(json.dumps(document))


def _set(part: str, row: int, key: str, value: Any) -> Callable[[Any], Any]:
    return lambda document: document[part][row].__setitem__(key, value)


def _old_outputs(out: Path) -> dict[str, tuple[bytes | None, int]]:
    """An --out from an earlier call (part of a set, and a file of the user's), dated in the past."""
    out.mkdir(parents=True)
    for name in ("comparison.md", "comparison.png", "comparison.svg", "notes.txt"):
        (out / name).write_text(f"earlier {name}\n")
        os.utime(out / name, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))
    return _snapshot(out)


def _snapshot(out: Path) -> dict[str, tuple[bytes | None, int]]:
    return {p.name: (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns) for p in out.iterdir()}


def _assert_as_it_was(out: Path, before: dict[str, tuple[bytes | None, int]] | None) -> None:
    """Contents and mtimes as before (or still no folder), and no temporary folder left beside it."""
    if before is None:
        assert not out.exists()
    else:
        assert _snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")) == []


@pytest.mark.parametrize(
    "value, shown",
    [
        (-1.0, "table[1].epoch_s.point: Input should be greater than 0 (found -1.0)"),
        (0, "table[1].epoch_s.point: Input should be greater than 0 (found 0)"),
        (math.nan, "holds NaN, which no record writes (JSON has no NaN or infinity)"),
        (math.inf, "holds Infinity, which no record writes (JSON has no NaN or infinity)"),
        ("0.01", "table[1].epoch_s.point: Input should be a valid number (found '0.01')"),
        (True, "table[1].epoch_s.point: Input should be a valid number (found True)"),
        (None, "table[1].epoch_s.point: Input should be a valid number (found None)"),
    ],
    ids=["negative", "zero", "nan", "inf", "string", "bool", "null"],
)
def test_a_bad_epoch_time_exits_2_naming_file_row_and_field_and_leaves_out_as_it_was(tmp_path, capsys, value, shown):
    good, bad = make_results(tmp_path, "laptop"), make_results(tmp_path, "server")
    _edit_json(bad, paths.CPU_TABLE, lambda document: document["table"][1]["epoch_s"].__setitem__("point", value))
    out = tmp_path / "cmp"
    before = _old_outputs(out)
    assert compare_results.main([str(good), str(bad), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: {bad / paths.CPU_TABLE}: {shown}\n"
    _assert_as_it_was(out, before)


def _median_moved_to_its_interval(document: dict[str, Any]) -> None:
    estimate = document["table"][1]["epoch_s"]
    estimate["point"] = estimate["low"]


def _empty_job(document: dict[str, Any]) -> None:
    document["table"][1]["eval_s_jobs"][0] = []


@pytest.mark.parametrize(
    "edit, shown",
    [
        (
            _median_moved_to_its_interval,
            r"table\[1\]: Value error, epoch_s\.point [0-9.e-]+ is not what 't on log job medians' makes of epoch_s_jobs",
        ),
        (_empty_job, r"table\[1\]\.eval_s_jobs: a job without a time"),
    ],
    ids=["median", "empty job"],
)
def test_a_median_apart_from_its_jobs_is_refused_naming_the_field(tmp_path, capsys, edit, shown):
    """The ratio intervals resample the per-job times: a median edited apart from them is a damaged record."""
    good, bad = make_results(tmp_path, "laptop", draws=TIGHT), make_results(tmp_path, "server", draws=TIGHT)
    _edit_json(bad, paths.CPU_TABLE, edit)
    assert compare_results.main([str(good), str(bad), "--out", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad / paths.CPU_TABLE}: ") and re.search(shown, err), err
    assert not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("in_decision", [True, False], ids=["decision.json", "full_path.json"])
def test_a_bad_full_path_total_exits_2_naming_file_row_and_field(tmp_path, capsys, in_decision):
    good, bad = make_results(tmp_path, "laptop"), make_results(tmp_path, "server", full_path_in_decision=in_decision)
    name, part = (paths.DECISION, "full_path") if in_decision else (paths.FULL_PATH, "rows")
    _edit_json(bad, name, _set(part, 2, "total_s", -0.5))
    out = tmp_path / "cmp"
    before = _old_outputs(out)
    assert compare_results.main([str(bad), str(good), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad / name}: {part}[2].total_s: Input should be greater than 0 (found -0.5)\n"
    )
    _assert_as_it_was(out, before)


def test_a_bad_samples_per_s_exits_2_from_the_script(tmp_path, repo):
    good, bad = make_results(tmp_path, "laptop", gpu=True), make_results(tmp_path, "server", gpu=True)
    _edit_json(bad, paths.GPU_TABLE, lambda document: document["table"][0]["samples_per_s"].__setitem__("low", -3.0))
    out = tmp_path / "cmp"
    before = _old_outputs(out)
    script = repo / "workflow" / "scripts" / "compare_results.py"
    done = subprocess.run(
        [sys.executable, str(script), str(good), str(bad), "--out", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: {bad / paths.GPU_TABLE}: table[0].samples_per_s.low: Input should be greater than 0 (found -3.0)\n"
    )
    _assert_as_it_was(out, before)


ORDER = "does not hold: a damaged record"


@pytest.mark.parametrize(
    "name, part, row, key, value, message",
    [
        (
            paths.CPU_TABLE,
            "table",
            1,
            "epoch_s_jobs",
            [[0.04]],
            "table[1]: Value error, 1 epoch_s_jobs for 3 repeats",
        ),
        (
            paths.CPU_TABLE,
            "table",
            1,
            "samples_per_s",
            {"point": 1.0, "low": 0.5, "high": 2.0, "level": 0.95, "method": "edited", "jobs": 3, "flags": []},
            "table[1]: Value error, samples_per_s 1.0 is not samples / epoch_s",
        ),
        (
            paths.CPU_TABLE,
            "table",
            1,
            "batch_size",
            True,
            "table[1].batch_size: Input should be a valid integer (found True)",
        ),
        (
            paths.CPU_TABLE,
            "table",
            1,
            "batch_size",
            32.0,
            "table[1].batch_size: Input should be a valid integer (found 32.0)",
        ),
        (
            paths.CPU_TABLE,
            "table",
            1,
            "batch_size",
            0,
            "table[1].batch_size: Input should be greater than or equal to 1 (found 0)",
        ),
        (paths.CPU_TABLE, "table", 1, "loader", ["fastpath"], "table[1].loader: Input should be a valid string"),
        (paths.CPU_TABLE, "table", 1, "device", None, "table[1].device: Input should be a valid string (found None)"),
        (paths.CPU_TABLE, "table", 1, "noisy", "no", "table[1].noisy: Input should be a valid boolean (found 'no')"),
        (paths.CPU_TABLE, "table", 1, "noisy", 0, "table[1].noisy: Input should be a valid boolean (found 0)"),
        (
            paths.CPU_TABLE,
            "table",
            1,
            "threads",
            "1",
            "table[1].threads: Input should be a valid integer (found '1')",
        ),
        (
            paths.CPU_TABLE,
            "table",
            1,
            "contaminated",
            2,
            "table[1].contaminated: Input should be a valid array (found 2)",
        ),
        (paths.CPU_TABLE, "table", 1, "epoch_s_jobs", [[math.nan]] * 3, "holds NaN, which no record writes"),
        (paths.CPU_TABLE, "table", 1, "epoch_s_iqr", 0.01, "table[1].epoch_s_iqr: Unexpected keyword argument"),
        (paths.CPU_TABLE, "table", 1, "gpu_speedup", 2.0, "table[1].gpu_speedup: Unexpected keyword argument"),
        (
            paths.DECISION,
            "full_path",
            2,
            "startup_s",
            -0.1,
            "full_path[2].startup_s: Input should be greater than or equal to 0 (found -0.1)",
        ),
        (paths.DECISION, "full_path", 2, "total_min_s", 9.0, "full_path[2]: Value error, total_min_s 9.0 <= total_s"),
        (paths.DECISION, "full_path", 2, "format", 7, "full_path[2].format: Input should be a valid string (found 7)"),
        (
            paths.DECISION,
            "full_path",
            2,
            "noisy",
            "yes",
            "full_path[2].noisy: Input should be a valid boolean (found 'yes')",
        ),
        (paths.ENVIRONMENT, "quick", 0, "logical_cores", math.inf, "holds Infinity, which no record writes"),
    ],
)
def test_a_damaged_value_is_refused_naming_the_file_and_the_field(tmp_path, name, part, row, key, value, message):
    folder = make_results(tmp_path, "run")
    edit = (lambda d: d[part].__setitem__(key, value)) if part == "quick" else _set(part, row, key, value)
    _edit_json(folder, name, edit)
    with pytest.raises(folder_checks.DamagedRecord) as refused:
        results_folder.load_results(folder, "a")
    text = str(refused.value)
    assert text.startswith(f"{folder / name}: ") and message in text, text
    assert "re-run" not in text and isinstance(refused.value, folder_checks.NotAResultsFolder)


def test_a_bad_non_finite_run_and_a_bad_verdict_are_refused(tmp_path):
    folder = make_results(tmp_path, "run", gpu=True, non_finite=True)
    _edit_json(folder, paths.GPU_TABLE, _set("non_finite", 0, "batch_size", "32"))
    with pytest.raises(
        folder_checks.DamagedRecord,
        match=r"gpu_training\.json: non_finite\[0\]\.batch_size: Input should "
        r"be a valid integer \(found '32'\)$",
    ):
        results_folder.load_results(folder, "a")
    folder = make_results(tmp_path, "other")
    _edit_json(folder, paths.DECISION, lambda d: d.__setitem__("verdict", "GPU"))
    with pytest.raises(
        folder_checks.DamagedRecord,
        match=r"decision\.json: verdict: Input should be an object "
        r"\(found 'GPU'\)$",
    ):
        results_folder.load_results(folder, "a")


def test_nan_in_the_config_is_refused_naming_the_key(tmp_path):
    folder = make_results(tmp_path, "run", config=_with(CONFIG, "model.lr", math.nan))
    assert "lr: .nan" in (folder / paths.CONFIG).read_text()
    with pytest.raises(folder_checks.DamagedRecord, match=r"config\.yaml: model\.lr is NaN; expected a finite number"):
        results_folder.load_results(folder, "a")


def test_a_missing_field_is_refused_naming_it_and_counting_the_rest(tmp_path):
    """No field is optional by absence: a row without `threads` is a record of another version or a damaged one."""
    folder = make_results(tmp_path, "run")
    _edit_json(folder, paths.CPU_TABLE, lambda document: [row.pop("threads") for row in document["table"]])
    with pytest.raises(
        folder_checks.DamagedRecord,
        match=r"cpu_training\.json: table\[0\]\.threads: Field required "
        r"and 3 more problem\(s\)$",
    ):
        results_folder.load_results(folder, "a")


def test_start_up_is_zero_on_the_cpu_and_absent_for_a_row_one_side_lacks(tmp_path):
    """A CPU full-path row has no CUDA context to start (0 s); a row only one side measured carries None, not 0."""
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server", gpu=True)
    assert {row.startup_s for row in results_folder.load_results(laptop, "a").full_path} == {0.0}
    result = _compare(laptop, server)
    gpu_only = [row for row in result.rows if row.present == "b_only"]
    assert gpu_only and all(row.full_path.startup_s_a is None and row.full_path.startup_s_b > 0 for row in gpu_only)


# ---------------------------------------------------------------- outputs and the CLI


def test_cli_writes_every_output_with_the_same_rows(tmp_path, capsys):
    laptop = make_results(tmp_path, "laptop", manifest=False)
    server = make_results(tmp_path, "server", gpu=True, scale=0.5)
    out = tmp_path / "out" / "cmp"
    code = compare_results.main(
        [str(laptop), str(server), "--out", str(out), "--label-a", "laptop", "--label-b", "gpu-server"]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(comparison.OUTPUT_NAMES)
    assert "warning: laptop has no MANIFEST.sha256" in capsys.readouterr().err
    document = json.loads((out / "comparison.json").read_text())
    with open(out / "comparison.csv", newline="") as handle:
        csv_rows = list(csv.DictReader(handle))
    assert len(csv_rows) == len(document["rows"]) == 2 * (2 + len(GPU_VARIANTS))
    assert list(csv_rows[0]) == list(document["rows"][0])
    text = (out / "comparison.md").read_text()
    for expected in (
        "# Comparison: laptop (A) vs gpu-server (B)",
        "## Batch size 32",
        "## Batch size 512",
        "epoch gpu-server/laptop",
        "gpu-server 2× faster than laptop",
        "only in gpu-server",
        "## Environment differences",
        "## Warnings",
        str(laptop.resolve()),
    ):
        assert expected in text
    assert (out / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in (out / "comparison.svg").read_bytes()


def _ratio_labels(axes) -> set[str]:
    return {line.get_label() for line in axes.get_lines() if not line.get_label().startswith("_")}


def test_figure_has_time_and_full_path_panels_and_a_ratio_for_every_metric(tmp_path):
    result = _compare(make_results(tmp_path, "laptop"), make_results(tmp_path, "server", scale=0.5))
    png, svg = tmp_path / "cmp.png", tmp_path / "cmp.svg"
    figure = comparison.comparison_figure(result, png, svg)
    assert png.read_bytes()[:4] == b"\x89PNG" and b"<svg" in svg.read_bytes()
    assert len(figure.axes) == 4
    epoch, path, time_ratio, rate_ratio = figure.axes
    assert "epoch" in epoch.get_ylabel() and "full path" in path.get_ylabel() and "parquet" in path.get_ylabel()
    assert epoch.has_data() and path.has_data()
    assert time_ratio.get_ylabel() == "time server/laptop (below 1: server faster)"
    assert rate_ratio.get_ylabel() == "samples/s server/laptop (above 1: server faster)"
    variants = ("cpu dataloader 1 thread", "cpu fastpath 1 thread")
    assert _ratio_labels(time_ratio) == {f"{v} · {m}" for v in variants for m in ("epoch_s", "full_path_s")}
    assert _ratio_labels(rate_ratio) == {f"{v} · samples_per_s" for v in variants}
    epoch_line = next(line for line in time_ratio.get_lines() if line.get_label() == "cpu fastpath 1 thread · epoch_s")
    assert list(epoch_line.get_ydata()) == pytest.approx([0.5, 0.5])


def test_figure_with_rows_on_one_side_only_and_no_common_format(tmp_path):
    laptop = results_folder.load_results(make_results(tmp_path, "laptop"), "laptop")
    server = results_folder.load_results(make_results(tmp_path, "server", gpu=True), "server")
    result = compare.compare(laptop, server)
    figure = comparison.comparison_figure(result, tmp_path / "cmp.png", tmp_path / "cmp.svg")
    assert len(figure.axes) == 4 and (tmp_path / "cmp.png").stat().st_size > 0
    # GPU rows exist only in server: plotted as times, never as ratios.
    assert any("cuda" in text.get_text() for text in figure.legends[0].get_texts())
    assert not any("cuda" in label for label in _ratio_labels(figure.axes[2]) | _ratio_labels(figure.axes[3]))
    no_format = compare.compare(laptop, server, full_path_format="feather")
    figure = comparison.comparison_figure(no_format, tmp_path / "none.png", tmp_path / "none.svg")
    assert not any(line.get_label().endswith("full_path_s") for line in figure.axes[2].get_lines())
    assert _ratio_labels(figure.axes[2]) == {"cpu dataloader 1 thread · epoch_s", "cpu fastpath 1 thread · epoch_s"}


def test_cli_exits_2_with_one_line_naming_the_missing_file(tmp_path, capsys):
    good = make_results(tmp_path, "good")
    bad = make_results(tmp_path, "bad")
    (bad / paths.ENVIRONMENT).unlink()
    assert compare_results.main([str(good), str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "env/collect_env.json: missing" in err
    assert not (tmp_path / "out").exists()


def test_cli_refuses_an_output_folder_inside_a_results_folder(tmp_path, capsys):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server")
    with pytest.raises(SystemExit) as exited:
        compare_results.main([str(laptop), str(server), "--out", str(server / "cmp")])
    assert exited.value.code == 2
    assert f"error: --out {server / 'cmp'} is inside the results folder {server}" in capsys.readouterr().err
    assert not (server / "cmp").exists()


def test_cli_runs_as_a_script_from_another_directory(tmp_path, repo):
    folder = make_results(tmp_path, "run")
    script = repo / "workflow" / "scripts" / "compare_results.py"
    done = subprocess.run(
        [sys.executable, str(script), str(folder), "/nonexistent", "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "error: /nonexistent: no such folder (expected an accel-choice results/ folder)"


def test_cli_refuses_an_existing_file_as_out(tmp_path, capsys):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server")
    out = tmp_path / "comparison.md"
    out.write_text("mine\n")
    with pytest.raises(SystemExit) as exited:
        compare_results.main([str(laptop), str(server), "--out", str(out)])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: --out {out} is a file; give a folder")
    assert out.read_text() == "mine\n"


@pytest.mark.parametrize("second", ["run", "./run", "link", "../here/run"])
def test_cli_refuses_the_same_folder_twice_however_it_is_spelled(tmp_path, monkeypatch, capsys, second):
    folder = make_results(tmp_path / "here", "run")
    (tmp_path / "here" / "link").symlink_to("run")
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(SystemExit) as exited:
        compare_results.main(["run", second, "--out", "cmp"])
    assert exited.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(
            f"error: RESULTS_A and RESULTS_B are the same folder ({folder.resolve()}): every ratio would be 1 by "
            "construction; compare two runs"
        )
    )
    assert not (tmp_path / "here" / "cmp").exists()


def _draw_then_fail(axes, *args) -> None:
    raise RuntimeError("drawing failed")


def _png_then_fail(result, png_path, svg_path) -> None:
    Path(png_path).write_bytes(b"\x89PNG half a figure")  # four of five outputs exist, the SVG never does
    raise RuntimeError("drawing failed")


@pytest.mark.parametrize("earlier", [True, False], ids=["earlier outputs", "no folder yet"])
@pytest.mark.parametrize(
    "module, name, failing",
    [(comparison_figure, "_style_ratios", _draw_then_fail), (comparison, "comparison_figure", _png_then_fail)],
)
def test_a_failure_while_drawing_the_figure_leaves_out_as_it_was(tmp_path, monkeypatch, earlier, module, name, failing):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server", scale=0.5)
    out = tmp_path / "cmp"
    before = _old_outputs(out) if earlier else None
    monkeypatch.setattr(module, name, failing)
    with pytest.raises(RuntimeError, match="drawing failed"):
        compare_results.main([str(laptop), str(server), "--out", str(out)])
    _assert_as_it_was(out, before)


def test_a_failure_while_moving_the_set_into_out_puts_back_what_was_moved(tmp_path, monkeypatch, capsys):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server", scale=0.5)
    out = tmp_path / "cmp"
    before = _old_outputs(out)
    replace = os.replace

    def disk_full_at_the_json(source, target):
        # comparison.md (replacing the earlier one) and comparison.csv (new) are in by then.
        if Path(target) == out / "comparison.json":
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        replace(source, target)

    monkeypatch.setattr(os, "replace", disk_full_at_the_json)
    assert compare_results.main([str(laptop), str(server), "--out", str(out)]) == compare_results.NOT_WRITTEN == 3
    assert capsys.readouterr().err == (
        f"error: cannot write the comparison into {out} ({out / 'comparison.json'}: "
        f"No space left on device); {out} is left as it was\n"
    )
    _assert_as_it_was(out, before)


def test_a_comparison_name_in_out_that_is_not_a_file_is_not_replaced(tmp_path, capsys):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server", scale=0.5)
    out = tmp_path / "cmp"
    _old_outputs(out)
    (out / "comparison.json").mkdir()
    (out / "comparison.json" / "kept.txt").write_text("the user's\n")
    before = _snapshot(out)
    assert compare_results.main([str(laptop), str(server), "--out", str(out)]) == 3
    assert capsys.readouterr().err == (
        f"error: cannot write the comparison into {out} ({out / 'comparison.json'} exists "
        f"and is not a plain file; not replaced); {out} is left as it was\n"
    )
    _assert_as_it_was(out, before)
    assert (out / "comparison.json" / "kept.txt").read_text() == "the user's\n"


def test_cli_replaces_its_own_outputs_and_keeps_other_files(tmp_path):
    laptop, server = make_results(tmp_path, "laptop"), make_results(tmp_path, "server", scale=0.5)
    out = tmp_path / "cmp"
    before = _old_outputs(out)
    assert compare_results.main([str(laptop), str(server), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted((*comparison.OUTPUT_NAMES, "notes.txt"))
    assert _snapshot(out)["notes.txt"] == before["notes.txt"]
    assert (out / "comparison.md").read_text().startswith("# Comparison: A (A) vs B (B)")
    _assert_as_it_was(out, _snapshot(out))


# ---------------------------------------------------------------- what a comparison could see


def test_the_comparison_states_the_slowdown_it_could_catch_and_the_gate_raises_it(tmp_path, capsys):
    """Issue 25: compare says which slowdown a row would catch with 80 % power, from the spread of its jobs."""
    first = make_results(tmp_path, "first", draws=Draws(epochs=5, seed=1))
    second = make_results(tmp_path, "second", draws=Draws(epochs=5, seed=2))
    a, b = (results_folder.load_results(path, label) for path, label in ((first, "first"), (second, "second")))
    plain, gated = compare.compare(a, b), compare.compare(a, b, gate=50.0)
    found = plain.detectable["epoch_s"]
    assert found["rows"] == len(plain.rows) and 1 < found["best"] <= found["median"] <= found["worst"]
    for row in plain.rows:  # beyond the row's noise floor, at the row's level, from its jobs
        ta, tb = (next(c for c in side.training if c.key == row.key) for side in (a, b))
        assert row.epoch_s.detectable_ratio == job_intervals.detectable_ratio(
            ta.epoch_s_jobs, tb.epoch_s_jobs, 1 + row.noise_floor, row.confidence
        )
    assert gated.detectable["epoch_s"]["best"] > 1.5 > found["worst"]  # a 50 % gate sees nothing below 50 %
    # ... and how many repeats a side a typical row would need to catch a 10 % slowdown
    assert found["sized_for"] == 1.1 and (found["jobs_to_catch"] is None or found["jobs_to_catch"] >= 2)
    assert gated.detectable["epoch_s"]["jobs_to_catch"] is None  # 10 % never gets past a 50 % gate
    assert compare_results.main([str(first), str(second), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert (
        "Epoch time, raw rows (each job's own speed in them): this comparison would catch a slowdown of B of at least"
        in out
    )
    assert "with 80 % power" in out
    assert "Catching a 10 % slowdown in a typical row would take about" in out or "Even 200 repeats a side" in out
    assert "## What this comparison could see" in (tmp_path / "cmp" / "comparison.md").read_text()


def test_a_machine_that_ran_slower_is_seen_through_the_two_runs_sentinels(tmp_path):
    first, second = make_results(tmp_path, "first"), make_results(tmp_path, "second")
    same = _compare(first, second)
    (cpu,) = same.machine_speed
    assert cpu.table == "cpu" and cpu.outcome == "no measurable difference"
    assert cpu.ratio.point == pytest.approx(1.0) and cpu.jobs_a == cpu.jobs_b > 1
    flat = same.as_json()["machine_speed"][0]  # comparison.json spells it flat, as before
    assert (flat["ratio_b_over_a"], flat["ratio_ci_low"], flat["ratio_ci_high"]) == (
        cpu.ratio.point,
        cpu.ratio.low,
        cpu.ratio.high,
    )
    assert flat["confidence"] == cpu.ratio.level and flat["outcome"] == cpu.outcome

    def slower(document: Any) -> None:  # every job's sentinel 30 % slower: the machine, not the code
        sentinel = document["sentinel"]
        sentinel["run_median_s"] *= 1.3
        for job in sentinel["jobs"]:
            job["median_s"] *= 1.3

    _edit_json(second, paths.CPU_TABLE, slower)
    moved = _compare(first, second)
    (cpu,) = moved.machine_speed
    assert cpu.outcome == "A faster" and cpu.ratio.low > 1.2
    assert _mentioning(moved, "the machines themselves ran at different speeds: the cpu sentinel")


def test_the_repeats_to_catch_a_slowdown_grow_with_the_spread_and_shrink_with_the_slowdown():
    rng = np.random.default_rng(3)
    steady = [[float(x)] for x in rng.lognormal(0, 0.03, 4)]
    drifting = [[float(x)] for x in rng.lognormal(0, 0.15, 4)]
    quiet = job_intervals.jobs_to_detect(steady, steady, 1.10)
    noisy = job_intervals.jobs_to_detect(drifting, drifting, 1.10)
    assert quiet is not None and noisy is not None and 2 <= quiet < noisy
    assert job_intervals.jobs_to_detect(drifting, drifting, 1.30) < noisy
    assert job_intervals.jobs_to_detect(steady, steady, 1.10, beyond=1.2) is None  # nothing to catch beyond 20 %
    # the repeats that settle an undecided verdict grow with the spread, not with the ratio's nearness
    # to the threshold (the least known figure of an undecided run); none past 200
    settle = job_intervals.jobs_to_settle(steady, steady, 1.5)
    assert settle is not None and settle < job_intervals.jobs_to_settle(drifting, drifting, 1.5)
    assert job_intervals.jobs_to_settle(steady, steady, 1.3) == settle
    assert job_intervals.jobs_to_settle([[1.0], [3.0], [9.0]], [[1.0], [3.0], [9.0]], 1.5) is None


def test_rows_are_listed_in_one_order_whatever_order_the_variants_arrive_in():
    """Rows differing only in threads (or compiled) once kept the order a set's hashing gave them, which changes
    from one process to the next: two runs of the same comparison wrote different files."""
    variants = [
        Variant(
            device="cpu", precision="fp32", placement="host", loader=loader, batch_size=32, threads=threads, compiled=c
        )
        for loader in ("fastpath", "dataloader")
        for threads in (2, 1)
        for c in (True, False)
    ]
    orders = {
        tuple(sorted((v.key for v in arrived), key=compare_match._sort_key)) for arrived in (variants, variants[::-1])
    }
    assert len(orders) == 1
    (order,) = orders
    assert [(key[3], key[5], key[6]) for key in order][:2] == [("dataloader", 1, False), ("dataloader", 1, True)]


# ---------------------------------------------------------------- the whole table (analyze.compare_table)

DRIFTING = Draws(seed=31, job_sd=0.15)  # jobs 15 % apart: no single row of three jobs can see 30 %
SIZES = (32, 64, 128, 256, 512)


def test_every_row_30_percent_slower_on_a_drifting_machine_fails_the_gate_as_a_whole_table(tmp_path, capsys):
    from accel_choice.analyze.compare_table import TableRegression

    base = make_results(tmp_path, "base", batch_sizes=SIZES, draws=DRIFTING)
    slow = make_results(tmp_path, "slow", batch_sizes=SIZES, scale=1.3, draws=dataclasses.replace(DRIFTING, seed=32))
    result = _compare(base, slow, "base", "slow")
    (shift,) = result.whole_table
    assert (shift.device, shift.cells, shift.groups) == ("cpu", 10, 1)  # the three jobs timed every batch size
    assert 1.15 < shift.ratio.point < 1.45 and shift.ratio.low > 1.05 and shift.fails(5)
    # Most rows alone see nothing: each has 2-4 degrees of freedom
    rows = {id(r.row) for r in compare.regressions(result, 5) if r.metric == "epoch_s"}
    assert len(rows) <= len(result.rows) // 2
    assert isinstance(compare.all_regressions(result, 5)[-1], TableRegression)
    out = tmp_path / "cmp"
    args = [str(base), str(slow), "--out", str(out), "--label-a", "base", "--label-b", "slow", "--fail-if-slower", "5"]
    assert compare_results.main(args) == compare_results.REGRESSION
    err = capsys.readouterr().err
    assert "regression: the whole cpu table (10 cells in 1 job group): epoch time slow/base" in err
    assert "the cells slower than that at their points: cpu " in err  # named, each with its ratio
    assert "the whole cpu table of slow slower than base by more than 5 % (--fail-if-slower)" in err
    document = json.loads((out / "comparison.json").read_text())
    assert document["whole_table"][0]["job_groups"] == 1 and document["whole_table"][0]["confidence"] == 0.99
    assert compare_results.main([*args[:-1], "40"]) == 0  # 30 % is inside a 40 % gate


def test_an_a_a_pair_on_a_drifting_machine_passes_the_whole_table_gate(tmp_path, capsys):
    first = make_results(tmp_path, "first", batch_sizes=SIZES, draws=DRIFTING)
    second = make_results(tmp_path, "second", batch_sizes=SIZES, draws=dataclasses.replace(DRIFTING, seed=33))
    (shift,) = _compare(first, second).whole_table
    assert shift.ratio.low < 1 < shift.ratio.high and not shift.fails(0)
    out = tmp_path / "cmp"
    assert compare_results.main([str(first), str(second), "--out", str(out), "--fail-if-slower", "5"]) == 0
    assert "nor a whole table" in capsys.readouterr().out


def test_a_machine_slower_by_itself_does_not_fail_the_whole_table_gate():
    from accel_choice.analyze.compare_table import TableShift
    from accel_choice.records.estimate import Estimate

    ratio = Estimate(point=1.2, low=1.1, high=1.3, level=0.99, method="m", jobs=30)
    assert TableShift("cpu", 20, 10, ratio, machine_high=None).fails(5)
    assert TableShift("cpu", 20, 10, ratio, machine_high=1.04).fails(5)
    assert not TableShift("cpu", 20, 10, ratio, machine_high=1.12).fails(5)  # the sentinel saw up to 12 %
    assert not TableShift("cpu", 20, 10, ratio, machine_high=None).fails(10)


def test_the_table_ratio_pools_the_job_groups_and_leaves_out_those_without_spread():
    from accel_choice.analyze.job_intervals import table_ratio

    a = [(1.0, 1.1, 0.9), (2.0, 2.2, 1.8), (3.0, 3.3, 2.7)]
    b = [tuple(1.2 * v for v in reversed(group)) for group in a]
    one = table_ratio([(a[0], b[0])], 0.95)
    pooled = table_ratio(list(zip(a, b)), 0.95)
    assert one.point == pytest.approx(1.2) and pooled.point == pytest.approx(1.2)
    assert pooled.high / pooled.low < one.high / one.low  # three groups: more degrees of freedom, a smaller se
    assert pooled.jobs == 9
    assert table_ratio([*zip(a, b), ((1.0,), (1.0, 2.0))], 0.95) == pooled
    with pytest.raises(ValueError, match="no job group with two jobs on each side"):
        table_ratio([((1.0,), (1.0,))], 0.95)


def test_a_row_is_not_called_slower_because_other_cells_of_its_job_got_faster(tmp_path):
    """Review of the rows over the rest of their job: B's fastpath B=32 30 % faster, nothing slower. The other
    rows of its job keep their quotients (the reference is the others' median), they say the rest of their job
    moved, and the gate passes."""
    from accel_choice.analyze.compare_match import REST_OF_JOB_MOVED

    base, fast = _slower_pair(tmp_path, 0.7)
    result = _compare(base, fast)
    assert compare.regressions(result, 5) == [] and compare.regressions(result, 0) == []
    assert _row(result).epoch_s.in_job_outcome == "B faster"
    others = [r for r in result.rows if r is not _row(result)]
    assert {r.epoch_s.in_job_outcome for r in others} == {REST_OF_JOB_MOVED}
    assert all(0.98 < r.epoch_s.in_job.point < 1.02 for r in others)
