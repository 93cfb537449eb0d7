"""Decision sheet and verdict claim only what was measured; report, figure and CSV tables."""

from __future__ import annotations

import csv
import re

import pytest

from accel_choice import aggregate, decision, plots, report, tables

ROWS = 8192
WIDTHS = (32, 48, 1)
BATCH_SIZES = (32, 512)

NO_CUDA = {
    "is_cuda_available": False,
    "cuda_compiled_version": None,
    "torch_version": "2.13.0+cpu",
    "nvidia_gpu_models": [],
}
WITH_CUDA = {
    "is_cuda_available": True,
    "cuda_compiled_version": "12.4",
    "torch_version": "2.13.0+cu124",
    "nvidia_gpu_models": ["NVIDIA H200"],
}

STEP_TITLES = (
    "CPU baseline: load, convert, train, eval, repeats",
    "GPU environment: is_available, CUDA version, GPU name",
    "Transfer measured on its own (to(device) + synchronize)",
    "Same model on the GPU, same batches and repeats",
    "Compare the full path, not only the matrix multiply",
    "Memory upper bound: Adam fp32 4·P·4 bytes + activations",
)


def _train_record(batch_size, loader, repeat, epoch_s, finite=True):
    steps = -(-ROWS // batch_size)
    return {
        "batch_size": batch_size, "loader": loader, "device": "cpu", "samples": ROWS, "steps": steps,
        "epoch_s": epoch_s, "samples_per_s": ROWS / epoch_s, "epoch_cpu_s": epoch_s, "eval_s": 0.004,
        "eval_samples": ROWS, "eval_loss": 0.4, "eval_accuracy": 0.9,
        "final_loss": 0.3 if finite else float("nan"), "mean_train_loss": 0.45 if finite else float("nan"),
        "finite": finite, "warmup_steps": 50, "warmup_first_step_s": 0.003, "warmup_steady_step_s": 0.0003,
        "threads": 1, "loadavg_before": [0.25, 0.2, 0.1], "loadavg_after": [1.5, 0.2, 0.1],
        "initial_weights_sha256": "a" * 64, "final_weights_sha256": "b" * 64,
        "invariants": {"samples_eq_rows": True, "eval_samples_eq_rows": True,
                       "steps_eq_ceil_rows_over_batch": True, "samples_per_s_eq_samples_over_epoch_s": True},
        "repeat": repeat, "position_in_job": 0, "same_final_weights_across_variants": True,
    }


# fastpath: B=32 -> 0.040 s over 256 steps (156.25 µs/step); B=512 -> 0.010 s over 16 steps (625 µs/step)
EPOCHS = {
    (32, "dataloader"): [0.120, 0.121, 0.119],
    (32, "fastpath"): [0.040, 0.041, 0.039],
    (512, "dataloader"): [0.030, 0.031, 0.029],
    (512, "fastpath"): [0.010, 0.010, 0.030],  # planted outlier: a noisy cell
}


def _load_record(fmt, repeat, read, to_numpy):
    return {
        "dataset": "benchmark", "format": fmt, "repeat": repeat, "rows": ROWS,
        "file_bytes": 2_000_000 if fmt == "csv" else 1_100_000, "tensor_bytes": ROWS * 33 * 4,
        "read_s": read, "to_pandas_s": 0.0 if fmt == "csv" else 0.001, "to_numpy_s": to_numpy, "to_torch_s": 0.00001,
        "total_s": read + (0.0 if fmt == "csv" else 0.001) + to_numpy + 0.00001,
    }


@pytest.fixture(scope="module")
def train_records():
    recs = [_train_record(b, l, i, t) for (b, l), runs in EPOCHS.items() for i, t in enumerate(runs)]
    recs.append(_train_record(32, "dataloader", 3, 5.0, finite=False))
    return recs


@pytest.fixture(scope="module")
def train_table(train_records):
    return aggregate.aggregate_training(train_records, ROWS)


@pytest.fixture(scope="module")
def load_table():
    recs = [_load_record("csv", i, 0.050 + i * 0.001, 0.003) for i in range(3)]
    recs += [_load_record("parquet", i, 0.004, 0.001) for i in range(3)]
    return aggregate.aggregate_load_convert(recs)


@pytest.fixture(scope="module")
def full_path_rows(train_table, load_table):
    return aggregate.full_path(train_table, load_table)


def _sheet(train_table, load_table, env):
    return decision.decision_sheet(train_table, load_table, env, WIDTHS, BATCH_SIZES)


# --- decision sheet -----------------------------------------------------------------------


def test_sheet_without_cuda(train_table, load_table):
    sheet = _sheet(train_table, load_table, NO_CUDA)
    assert [s["step"] for s in sheet] == ["1", "2", "3", "4", "5", "6"]
    assert tuple(s["title"] for s in sheet) == STEP_TITLES
    status = {s["step"]: s["status"] for s in sheet}
    assert status["1"] == "measured"
    assert status["2"] == "checked"
    assert status["3"] == "not measurable here"
    assert status["4"] == "not measurable here"
    assert status["5"] == "CPU side measured; GPU side not measurable here"
    assert status["6"] == "computed"
    evidence = {s["step"]: s["evidence"] for s in sheet}
    assert evidence["1"] == "2 load/convert cells and 4 training cells, repeats [3]"
    assert evidence["2"] == "no CUDA device visible (torch 2.13.0+cpu, CUDA build: none)"
    assert evidence["6"] == "26,128 bytes + 165,888 bytes of forward activations at B=512"


def test_sheet_with_cuda_visible(train_table, load_table):
    sheet = _sheet(train_table, load_table, WITH_CUDA)
    status = {s["step"]: s["status"] for s in sheet}
    assert status["3"] == status["4"] == "not measured: this workflow version has no GPU timing rules"
    assert "not measurable here" not in status["3"]
    evidence = {s["step"]: s["evidence"] for s in sheet}
    assert evidence["2"] == "CUDA 12.4 visible: NVIDIA H200"


# --- verdict ----------------------------------------------------------------------------


def test_verdict_without_cuda(train_table, full_path_rows):
    v = decision.verdict(train_table, full_path_rows, NO_CUDA, WIDTHS)
    assert v["device"] == "CPU"
    assert v["gpu_measured"] is False
    assert v["cuda_visible"] is False
    assert "theoretical" in v["claim"]
    assert "no speedup is claimed" in v["claim"]
    assert "No CUDA device was visible" in v["claim"]


def test_verdict_with_cuda_claims_no_speedup(train_table, full_path_rows):
    v = decision.verdict(train_table, full_path_rows, WITH_CUDA, WIDTHS)
    assert v["device"] == "CPU"
    assert v["gpu_measured"] is False
    assert v["cuda_visible"] is True
    assert "no GPU timing was taken" in v["claim"]
    assert "no speedup is claimed" in v["claim"]
    assert "NVIDIA H200" in v["claim"]
    assert "theoretical" not in v["claim"]


def test_verdict_reasons_carry_the_numbers(train_table, full_path_rows):
    reasons = decision.verdict(train_table, full_path_rows, NO_CUDA, WIDTHS)["reasons"]
    assert len(reasons) == 4
    # fastest full path: parquet (4 + 1 + 1 + 0.01 ms) + fastpath B=512 (10 ms) + eval 4 ms = 20.01 ms
    best = min(full_path_rows, key=lambda r: r["total_s"])
    assert (best["format"], best["loader"], best["batch_size"]) == ("parquet", "fastpath", 512)
    assert reasons[0].startswith("Fastest measured full path: parquet + fastpath at B=512, 20.0 ms per epoch")
    # 3 x 3168 x 8192 FLOP = 77.9 MFLOP in 10 ms
    assert "~78 MFLOP in 10.0 ms: 7.79 GFLOP/s achieved" in reasons[1]
    # 625 µs / 156.25 µs per step = 4.0x for 16x the samples
    assert "From B=32 to B=512 (16× the samples per step) the time per optimizer step grew 4.0×" in reasons[2]
    assert reasons[3] == "Memory never forces a GPU here: the Adam fp32 bound is 26,128 bytes."


# --- report ---------------------------------------------------------------------------


def _environment():
    quick = {
        "cpu_model": "Test CPU 9000", "logical_cores": 8, "affinity_cores": 2, "os": "Linux 6.1",
        "python_version": "3.12.1", "torch_version": "2.13.0+cpu", "cuda_compiled_version": None,
        "is_cuda_available": False, "nvidia_gpu_models": [],
        "packages": {"torch": "2.13.0", "numpy": "2.4.6"},
        "workflow": {"commit": "0123456789abcdef", "dirty": True},
    }
    return {"quick": quick, "collect_env": {"os": "Ubuntu 24.04 (x86_64)"}}


def _datasets():
    return [
        {
            "name": "benchmark", "rows": ROWS, "feature_columns": [f"x{i:02d}" for i in range(32)], "positive_rate": 0.5012,
            "matrix_sha256": "f00d" * 16,
            "export": {"files": {"parquet": {"bytes": 1_100_000}, "csv": {"bytes": 2_000_000}}},
        }
    ]


@pytest.fixture(scope="module")
def rendered(train_records, train_table, load_table, full_path_rows):
    env = _environment()
    inputs = report.ReportInputs(
        environment=env, datasets=_datasets(), train_table=train_table, load_table=load_table,
        full_path_rows=full_path_rows, non_finite=aggregate.non_finite_records(train_records),
        sheet=_sheet(train_table, load_table, env["quick"]),
        verdict=decision.verdict(train_table, full_path_rows, env["quick"], WIDTHS),
        widths=WIDTHS, rows=ROWS, batch_sizes=BATCH_SIZES, bandwidth_gb_s=8, seed=20261020,
        noise_iqr_ratio=0.10, outlier_factor=2.0,
    )
    return report.render(inputs)


def test_report_verdict_and_claim(rendered):
    assert rendered.startswith("# accel-choice: is a CPU enough for this training job?\n")
    assert "**Verdict: CPU.** No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed." in rendered
    assert "- Memory never forces a GPU here: the Adam fp32 bound is 26,128 bytes." in rendered
    assert rendered.endswith("\n")


def test_report_has_six_steps(rendered):
    for number, title in enumerate(STEP_TITLES, start=1):
        assert re.search(rf"^\| {number} \| {re.escape(title)} \| ", rendered, flags=re.M), title
    assert rendered.count("| not measurable here |") == 2


def test_report_section_headings_in_order(rendered):
    headings = re.findall(r"^## (.+)$", rendered, flags=re.M)
    assert headings == [
        "GPU decision sheet (section 28.3.5)",
        "CPU baseline: one training epoch (ms, medians over repeats)",
        "Full path per epoch on the benchmark matrix (ms, sums of medians)",
        "Load and convert (ms, medians over repeats)",
        "Theoretical estimates (computed, not measured)",
        "Data",
        "Measurement conditions and flags",
        "Environment",
        "Reproduce",
    ]


def test_report_theory_numbers(rendered):
    assert "P = 1,633 parameters; Adam fp32 bound 4·P·4 = 26,128 bytes" in rendered
    assert "Benchmark matrix 8,192 × 32 fp32 = 1,048,576 bytes: 0.131 ms to transfer at 8 GB/s" in rendered
    # B=512 row of the estimates table: 16 steps, 1,622,016 forward, 4,866,048 3x, 3,293,184 counted
    assert "| 512 | 16 | 1,622,016 | 4,866,048 | 3,293,184 | 77.9 | 165,888 |" in rendered


def test_report_flags_noise_and_non_finite(rendered):
    assert "- training B=512 fastpath: " in rendered
    assert "a repeat is 3.00x the median (> 2x)" in rendered
    assert "Non-finite runs, excluded from the medians:\n- B=32 dataloader repeat 3: loss nan" in rendered
    assert "Highest 1-minute load average seen around a training measurement: 1.50." in rendered


def test_report_cpu_and_data_tables(rendered):
    # B=32 dataloader: median 120 ms, 3.00x the fast path
    assert re.search(r"^\| 32 \| dataloader \| 3 \| 256 \| 120\.00 \| 119\.00–121\.00 \|", rendered, flags=re.M)
    assert "| 3.00× |" in rendered
    assert "the final weights were bitwise identical across loaders in every job." in rendered
    assert "| benchmark | 8,192 × 32 | 0.501 | `f00df00df00df00d…` | 1,100,000 | 2,000,000 |" in rendered
    assert "0123456789abcdef (uncommitted changes)" in rendered
    assert "Ubuntu 24.04 (x86_64)" in rendered
    assert "seed 20261020" in rendered


def test_report_table_helper():
    assert report.table(("a", "b"), [(1, 2), ("x", "y")]) == "| a | b |\n|---|---|\n| 1 | 2 |\n| x | y |"


# --- figure ---------------------------------------------------------------------------


def test_decision_figure_writes_png_and_svg(tmp_path, train_table, full_path_rows):
    png, svg = tmp_path / "fig" / "decision.png", tmp_path / "fig" / "decision.svg"
    plots.decision_figure(train_table, full_path_rows, png, svg, title="test figure")
    assert png.stat().st_size > 1000
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = svg.read_text()
    assert "<svg" in text and text.rstrip().endswith("</svg>")
    assert sorted(p.name for p in png.parent.iterdir()) == ["decision.png", "decision.svg"]


# --- CSV tables -----------------------------------------------------------------------


def test_write_csv_joins_lists(tmp_path):
    path = tmp_path / "t.csv"
    tables.write_csv(path, [{"a": 1, "runs": [0.1, 0.2, 0.3], "flag": True}, {"a": 2, "runs": ("x", "y"), "flag": False}])
    assert path.read_text() == "a,runs,flag\n1,0.1;0.2;0.3,True\n2,x;y,False\n"
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["runs"].split(";") == ["0.1", "0.2", "0.3"]


def test_write_csv_of_aggregated_table_has_one_line_per_row(tmp_path, train_table):
    path = tmp_path / "cpu_training.csv"
    tables.write_csv(path, train_table)
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + len(train_table)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["epoch_s_runs"] == "0.12;0.121;0.119"
    assert rows[0]["threads"] == "1"


def test_write_csv_refuses_empty_table(tmp_path):
    path = tmp_path / "empty.csv"
    with pytest.raises(ValueError, match="empty table"):
        tables.write_csv(path, [])
    assert not path.exists()
