"""Decision sheet and verdict claim only what was measured (records), said in words (render); report,
figure and CSV tables."""

from __future__ import annotations

import csv
import dataclasses
import re
import math
import statistics

import pytest

from accel_choice.analyze.figures import Figures
from accel_choice.analyze import (
    aggregate,
    decision,
    decision_intervals,
    decision_tables,
    fullpath,
    job_intervals,
    loads,
    same_jobs,
    theory,
)
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io import tables
from accel_choice import records
from accel_choice.records.decision import Decision
from accel_choice.render import decision as words
from accel_choice.render import decision_sheet as sheet_words
from accel_choice.render.decision_figure import decision_figure
from accel_choice.render import formatting, report
from builders_data import (
    copy_timing,
    dataset_export,
    dataset_meta,
    exported_file,
    load_job,
    transfer_job,
    visible_devices,
)
from builders_training import environment, environment_report, replaced, training_cell, training_record

ROWS = 8192
WIDTHS = (32, 48, 1)
BATCH_SIZES = (32, 512)
HOST_MEMORY = 16 * 2**30

NO_CUDA = environment()
WITH_CUDA = environment(
    is_cuda_available=True,
    cuda_compiled_version="12.4",
    torch_version="2.13.0+cu124",
    nvidia_gpu_models=("NVIDIA H200",),
)

STEP_TITLES = tuple(sheet_words.STEP_TITLES[step] for step in range(1, 7))


def _train_record(
    batch_size,
    loader,
    repeat,
    epoch_s,
    finite=True,
    *,
    device="cpu",
    precision="fp32",
    placement="host",
    grad_scaler=False,
    eval_s=0.004,
    peak=None,
    startup=None,
    nonfinite_step=17,
):
    return training_record(
        batch_size=batch_size,
        loader=loader,
        repeat=repeat,
        epoch_s=epoch_s,
        rows=ROWS,
        finite=finite,
        device=device,
        precision=precision,
        placement=placement,
        grad_scaler=grad_scaler,
        eval_s=eval_s,
        peak_memory_bytes=peak,
        context_startup_s=startup,
        nonfinite_step=None if finite else nonfinite_step,
        final_loss=0.3 if finite else None,
        loadavg_before=(1.25, 0.2, 0.1),
        loadavg_after=(1.5, 0.2, 0.1),
        foreign_cpu_share=0.01,
        warmup_first_step_s=0.003,
        warmup_steady_step_s=0.0003,
        position_in_job=0,
    )


# fastpath: B=32 -> 0.040 s over 256 steps (156.25 µs/step); B=512 -> 0.010 s over 16 steps (625 µs/step)
def _around(point: float, step: float) -> list[float]:
    """Three jobs whose median and geometric mean are both `point`: point, point·step, point/step."""
    return [point, point * step, point / step]


EPOCHS = {
    (32, "dataloader"): _around(0.120, 121 / 120),
    (32, "fastpath"): _around(0.040, 41 / 40),
    (512, "dataloader"): [0.0095, 0.010, 0.030],  # planted outlier: a noisy cell (not the fastest one), tied with it
    (512, "fastpath"): _around(0.010, 1.04),
}


def _load_record(fmt, repeat, read, to_numpy):
    return load_job(
        dataset="benchmark",
        format=fmt,
        repeat=repeat,
        rows=ROWS,
        file_bytes=2_000_000 if fmt == "csv" else 1_100_000,
        tensor_bytes=ROWS * 33 * 4,
        read_s=read,
        to_pandas_s=0.0 if fmt == "csv" else 0.001,
        to_numpy_s=to_numpy,
        to_torch_s=0.00001,
        total_s=read + (0.0 if fmt == "csv" else 0.001) + to_numpy + 0.00001,
        loadavg_before=(0.2, 0.2, 0.2),
        loadavg_after=(0.2, 0.2, 0.2),
        foreign_cpu_share=0.01,
    )


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
    return loads.aggregate_load_convert(recs)


@pytest.fixture(scope="module")
def full_path_rows(train_table, load_table):
    return fullpath.full_path(train_table, load_table)


def _sheet(train_table, load_table, env, **options):
    return decision.decision_sheet(train_table, load_table, env, Figures(WIDTHS), BATCH_SIZES, **options)


def _said(sheet, env, probe=None):
    """Each step's status and evidence in the report's words."""
    gpu = decision.gpu_visibility(probe, env)
    return (
        {s.step: sheet_words.status_words(s) for s in sheet},
        {s.step: sheet_words.evidence_words(s, gpu) for s in sheet},
    )


def _verdict(train_table, full_path_rows, env=NO_CUDA, **options):
    options.setdefault("host_memory_bytes", HOST_MEMORY)
    return decision.verdict(train_table, full_path_rows, env, Figures(WIDTHS), rows=ROWS, **options)


# --- decision sheet -----------------------------------------------------------------------


def test_sheet_without_cuda(train_table, load_table):
    sheet = _sheet(train_table, load_table, NO_CUDA)
    assert [s.step for s in sheet] == [1, 2, 3, 4, 5, 6]
    assert [(s.status, s.missing) for s in sheet] == [
        ("measured", None),
        ("checked", None),
        ("missing", "not_measurable_here"),
        ("missing", "not_measurable_here"),
        ("cpu_measured_gpu_missing", "not_measurable_here"),
        ("computed", None),
    ]
    assert sheet[5].value("adam_bytes") == 26_128 and sheet[5].value("activation_bytes") == 165_888
    status, evidence = _said(sheet, NO_CUDA)
    assert status[3] == status[4] == "not measurable here"
    assert status[5] == "CPU side measured; GPU side not measurable here"
    assert evidence[1] == "2 load/convert cells and 4 training cells, repeats [3]"
    assert evidence[2] == "no CUDA device visible (torch 2.13.0+cpu, CUDA build: none)"
    assert evidence[6] == "26,128 bytes + 165,888 bytes of forward activations at B=512"


def test_sheet_with_cuda_visible_and_accelerator_off(train_table, load_table):
    """CUDA visible but GPU timing switched off: the sheet says why, never "not measurable here"."""
    sheet = _sheet(train_table, load_table, WITH_CUDA, accelerator="off")
    assert sheet[2].missing == sheet[3].missing == "accelerator_off"
    status, evidence = _said(sheet, WITH_CUDA)
    assert status[3] == status[4] == "not measured (accelerator: off)"
    assert status[5] == "CPU side measured; GPU side not measured (accelerator: off)"
    assert evidence[2] == "CUDA 12.4 visible: NVIDIA H200"


def test_sheet_with_cuda_visible_but_no_gpu_rows_does_not_claim_not_measurable(train_table, load_table):
    sheet = _sheet(train_table, load_table, WITH_CUDA)
    status, evidence = _said(sheet, WITH_CUDA)
    assert evidence[2] == "CUDA 12.4 visible: NVIDIA H200"
    assert sheet[2].missing == sheet[3].missing == "not_planned"
    assert status[3] == status[4] == "not measured in this run: a GPU is visible, but no GPU job was planned"


# --- verdict ----------------------------------------------------------------------------


def test_verdict_without_cuda(train_table, full_path_rows):
    v = _verdict(train_table, full_path_rows)
    assert (v.device, v.reason, v.gpu_measured, v.gpu.visible, v.comparison) == (
        "CPU",
        "no_gpu_visible",
        False,
        False,
        None,
    )
    claim = words.claim(v)
    assert "theoretical" in claim and "no speedup is claimed" in claim and "No CUDA device was visible" in claim


def test_verdict_with_cuda_claims_no_speedup(train_table, full_path_rows):
    v = _verdict(train_table, full_path_rows, WITH_CUDA)
    assert (v.device, v.outcome, v.reason, v.gpu_measured, v.gpu.visible) == (
        "CPU",
        "CPU",
        "gpu_visible_not_measured",
        False,
        True,
    )
    assert v.speedup_interval is None and v.repeats_to_settle is None
    claim = words.claim(v)
    assert "no GPU timing was taken" in claim and "no speedup is claimed" in claim and "NVIDIA H200" in claim
    assert "theoretical" not in claim


def test_verdict_reasons_carry_the_numbers(train_table, full_path_rows):
    v = _verdict(train_table, full_path_rows)
    # fastest full path: parquet (4 + 1 + 1 + 0.01 ms) + fastpath B=512 (10 ms) + eval 4 ms = 20.01 ms
    best = v.fastest_cpu_path
    assert (best.format, best.loader, best.batch_size) == ("parquet", "fastpath", 512)
    assert best == min(full_path_rows, key=lambda r: r.total_s)
    # 3 x 3168 x 8192 FLOP = 77.9 MFLOP in 10 ms
    assert v.fastest_cpu_epoch.flop_3x == 77_856_768 and v.fastest_cpu_epoch.epoch_s == pytest.approx(0.010)
    # 625 µs / 156.25 µs per step = 4.0x for 16x the samples, the whole interval below 8x (half the samples'
    # growth): overhead bound
    s = v.scaling
    assert (s.samples_ratio, s.step_time_ratio.point) == (16, pytest.approx(4.0))
    assert s.step_time_ratio.low < 4.0 < s.step_time_ratio.high < 8.0
    assert (s.growth, s.overhead_bound) == ("overhead", True)
    reasons = words.reasons(v)
    assert len(reasons) == 5
    assert reasons[0].startswith("Fastest CPU full path: parquet + fastpath at B=512, 1 thread, 20.0 ms per epoch")
    assert reasons[0].endswith(
        "with no interval: not a measured difference; the fastest epoch and its ties below are decided by intervals)."
    )
    assert "~78 MFLOP in 10.0 ms: 7.79 GFLOP/s achieved" in reasons[1]
    # The DataLoader at B=512 has a planted 30 ms job: paired per job with the fast path of the same jobs the
    # ratios are 0.95, 0.96 and 3.1, and three jobs that disagree that much leave an interval holding 1: tied.
    # Its spread is moderated over the other cells of its jobs (analyze.same_jobs); alone it is wider still.
    # B=32 is measurably slower.
    assert [(t.loader, t.batch_size) for t in v.fastest_cpu_ties] == [("dataloader", 512)]
    tie = v.fastest_cpu_ties[0].over_fastest
    assert tie.low < 1 < tie.high and tie.method == same_jobs.METHOD
    cells = {(c.loader, c.batch_size): c for c in train_table}
    alone = decision_intervals.cell_ratio(cells[("fastpath", 512)], cells[("dataloader", 512)], 0.95)
    assert alone.method == same_jobs.ALONE and alone.low < tie.low and tie.high < alone.high
    assert reasons[2].startswith(
        f"Tied with the fastest (fastpath B=512 on 1 thread): dataloader B=512 on 1 thread ({tie.point:.2f}×, "
        f"{tie.low:.2f}–{tie.high:.2f})"
    )
    assert reasons[3] == (
        f"From B=32 to B=512 (16× the samples per step, 1 thread) the time per optimizer step grew 4.00× (95% interval "
        f"{s.step_time_ratio.low:.2f}–{s.step_time_ratio.high:.2f}×): the whole interval lies below half the samples' "
        "growth (8×), so the step is bound by fixed per-step overhead (Python, dispatch), which a faster arithmetic "
        "unit does not remove."
    )
    # Adam 26,128 + 2 × 165,888 activations at B=512 + the 8,192 × 33 fp32 matrix = 1,439,248 bytes
    assert (v.memory.bound_bytes, v.memory.fits_host, v.memory.fits_device) == (1_439_248, True, None)
    assert reasons[4] == (
        "Memory does not decide here: the Adam fp32 state (26,128 bytes), forward and backward "
        "activations at B=512 (331,776 bytes) and the data matrix (1,081,344 bytes) need 1,439,248 "
        "bytes, within the measuring host's 17,179,869,184 bytes."
    )


def test_step_scaling_says_overhead_only_when_the_step_time_shows_it(train_records):
    """A step that grew with the batch (here 15× for 16× the samples) is work; one that grew 4× with
    repeats that agree is overhead; each only when the whole interval lies on its side of 8×."""
    grown = [_train_record(b, "fastpath", i, t) for b, t in ((32, 0.040), (512, 0.040 * 15 / 16)) for i in range(3)]
    scaling = decision_intervals.step_scaling(aggregate.aggregate_training(grown, ROWS))
    assert scaling.step_time_ratio.point == pytest.approx(15.0) and not scaling.overhead_bound
    assert scaling.growth == "work" and scaling.step_time_ratio.low >= 8.0
    flat = [_train_record(b, "fastpath", i, t) for b, t in ((32, 0.040), (512, 0.040 * 4 / 16)) for i in range(3)]
    overhead = decision_intervals.step_scaling(aggregate.aggregate_training(flat, ROWS))
    assert (overhead.growth, overhead.overhead_bound) == ("overhead", True)
    assert overhead.step_time_ratio.high < 8.0
    with pytest.raises(ValueError, match="overhead_bound True with growth 'work'"):
        dataclasses.replace(overhead, growth="work")
    single = decision_intervals.step_scaling(aggregate.aggregate_training(grown[:3], ROWS))
    assert single is None  # one batch size: no growth to state


def test_memory_sentence_names_a_machine_that_is_too_small(train_table, full_path_rows):
    small = _verdict(train_table, full_path_rows, host_memory_bytes=1_000_000)
    assert small.memory.fits_host is False
    assert (
        words.reasons(small)[4].startswith("Memory decides: ")
        and "more than the measuring host's 1,000,000 bytes" in words.reasons(small)[4]
    )
    unknown = _verdict(train_table, full_path_rows, host_memory_bytes=None)
    assert unknown.memory.fits_host is None and "is not known, so memory is not compared" in words.reasons(unknown)[4]


# --- report ---------------------------------------------------------------------------


def _datasets():
    files = {
        "parquet": exported_file("parquet", bytes=1_100_000, sha256="c" * 64),
        "csv": exported_file("csv", bytes=2_000_000, sha256="d" * 64),
    }
    return decision_tables.data_table(
        [
            (
                dataset_meta(
                    rows=ROWS,
                    feature_columns=tuple(f"x{i:02d}" for i in range(32)),
                    positive_rate=0.5012,
                    matrix_sha256="f00d" * 16,
                ),
                dataset_export(files=files),
            )
        ],
        BATCH_SIZES,
    )


def _inputs(train_records, load_table, *, env, probe=None, transfers=None, accelerator="auto"):
    table = aggregate.aggregate_training(train_records, ROWS)
    rows = fullpath.full_path(table, load_table, transfers)
    decided = Decision(
        verdict=_verdict(table, rows, env, probe=probe),
        sheet=decision.decision_sheet(
            table,
            load_table,
            env,
            Figures(WIDTHS),
            BATCH_SIZES,
            probe=probe,
            transfers=transfers,
            accelerator=accelerator,
        ),
        full_path=tuple(rows),
        gpu_memory=decision.gpu_memory(table, Figures(WIDTHS), ROWS),
        environment=env,
    )
    return report.ReportInputs(
        decision=decided,
        environment=environment_report(env, os="Ubuntu 24.04 (x86_64)"),
        data=_datasets(),
        theory=decision_tables.theory_table(table, Figures(WIDTHS), ROWS, BATCH_SIZES, 8),
        train_table=table,
        non_finite=aggregate.non_finite_runs(train_records),
        load_table=load_table,
        seed=20261020,
        noise=NoiseRules(),
        accelerator=accelerator,
        probe=probe,
        transfers=transfers,
    )


@pytest.fixture(scope="module")
def rendered(train_records, load_table):
    return report.render(_inputs(train_records, load_table, env=NO_CUDA))


def test_report_verdict_and_claim(rendered):
    assert rendered.startswith("# accel-choice: is a CPU enough for this training job?\n")
    assert (
        "**Verdict: CPU.** No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed."
        in rendered
    )
    assert "- Memory does not decide here: the Adam fp32 state (26,128 bytes)" in rendered
    assert rendered.endswith("\n")


def test_report_has_six_steps(rendered):
    for number, title in enumerate(STEP_TITLES, start=1):
        assert re.search(rf"^\| {number} \| {re.escape(title)} \| ", rendered, flags=re.M), title
    assert rendered.count("| not measurable here |") == 2


def test_report_section_headings_in_order(rendered):
    headings = re.findall(r"^## (.+)$", rendered, flags=re.M)
    assert headings == [
        "GPU decision sheet (section 28.3.5)",
        "CPU baseline: one training epoch (ms, geometric mean of the jobs' median epochs)",
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
    # every flag counted in one table (issue 27), each cell's own reasons in its table's flag column
    assert "| noisy: a repeat > 2× the median | training cells | 1 of 4 | B=512 dataloader, 1 thread |" in rendered
    assert "| noisy: IQR/median > 10% | training cells | 1 of 4 | B=512 dataloader, 1 thread |" in rendered
    assert "a repeat is 3.00x the median (> 2x)" in rendered
    assert "| non-finite loss or weights (left out of the medians) | runs | 1 | listed below |" in rendered
    assert (
        "Non-finite runs (NaN/inf loss or weights), excluded from the medians:\n"
        "- cpu fp32 host B=32 dataloader repeat 3: first non-finite loss at step 17"
    ) in rendered
    assert "Highest 1-minute load average seen around a training measurement: 1.50." in rendered


def test_report_cpu_and_data_tables(rendered):
    # B=32 dataloader: 120 ms (the jobs' 119-121 ms; the t interval on three jobs wider), 3.00x the fast path
    assert re.search(r"^\| 32 \| dataloader \| 3 \| 256 \| 120 \| 118–122 \| 119–121 \|", rendered, flags=re.M)
    assert re.search(r"\| 3\.00× \([\d.]+–[\d.]+\), slower \|", rendered)
    assert "the final weights were bitwise identical across loaders in every job." in rendered
    assert (
        "| benchmark | 8,192 × 32 | 0.501 | `f00df00df00df00d…` | 1,100,000 | 2,000,000 | generated: seed " in rendered
    )
    assert "0123456789abcdef (uncommitted changes)" in rendered
    assert "Ubuntu 24.04 (x86_64)" in rendered
    assert "seed 20261020" in rendered


def test_report_warns_of_the_data_above_the_verdict(train_records, load_table, rendered):
    """Issue 44 item 6: a constant target is said on the first screen, before the verdict, and in the Data section."""
    from accel_choice.records.data import ConstantTarget

    meta = dataset_meta(rows=ROWS, warnings=(ConstantTarget(column="y", value=0.0, rows=ROWS),))
    data = decision_tables.data_table([(meta, dataset_export())], BATCH_SIZES)
    warned = report.render(dataclasses.replace(_inputs(train_records, load_table, env=NO_CUDA), data=data))
    first = warned.index("**Warnings about the data (1):**")
    assert first < warned.index("**Verdict: CPU.**") and first < warned.index("## ")
    assert warned.count("- benchmark: target 'y' is 0 in all 8,192 rows: loss and accuracy mean nothing") == 2
    assert "Warnings about the data" not in rendered


def test_report_table_helper():
    assert formatting.table(("a", "b"), [(1, 2), ("x", "y")]) == "| a | b |\n|---|---|\n| 1 | 2 |\n| x | y |"


# --- figure ---------------------------------------------------------------------------


def test_decision_figure_writes_png_and_svg(tmp_path, train_table, full_path_rows):
    png, svg = tmp_path / "fig" / "decision.png", tmp_path / "fig" / "decision.svg"
    decision_figure(train_table, full_path_rows, png, svg, title="test figure")
    assert png.stat().st_size > 1000
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    text = svg.read_text()
    assert "<svg" in text and text.rstrip().endswith("</svg>")
    assert sorted(p.name for p in png.parent.iterdir()) == ["decision.png", "decision.svg"]


# --- CSV tables -----------------------------------------------------------------------


def test_write_csv_joins_lists(tmp_path):
    path = tmp_path / "t.csv"
    tables.write_csv(
        path, [{"a": 1, "runs": [0.1, 0.2, 0.3], "flag": True}, {"a": 2, "runs": ("x", "y"), "flag": False}]
    )
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
    assert rows[0]["epoch_s_runs"] == ";".join(map(str, EPOCHS[(32, "dataloader")]))  # a tuple, joined like a list
    assert rows[0]["threads"] == "1"


def test_write_csv_refuses_empty_table(tmp_path):
    path = tmp_path / "empty.csv"
    with pytest.raises(ValueError, match="empty table"):
        tables.write_csv(path, [])
    assert not path.exists()


# === the GPU side: synthetic GPU cells, transfers, full path and verdict ======================

GPU_PROBE = visible_devices()  # one NVIDIA H200, CUDA 12.8, driver 570.86.15
NO_DEVICE_PROBE = visible_devices(cuda_available=False)
MATRIX_BYTES = ROWS * 32 * 4
GPU_PEAK = 5_000_000

# The best CPU full path of the fixtures: parquet + fastpath at B=512,
# load 4 + 1 ms, convert 1 + 0.01 ms, epoch 10 ms (min 10, max 30), eval 4 ms.
CPU_BEST_TOTAL = 0.02001
CPU_BEST_MIN = 0.02001 - 0.010 + 0.010 / 1.04
CPU_BEST_MAX = 0.02041
PARQUET_FIXED = 0.00601


TARGET_S = 5e-6  # the target column's host->device copy, the same in every repeat


def _transfer_job(repeat, startup, matrix_s, predictions_s, pin_s=0.002):
    def copy(what, direction, memory, n_bytes, seconds):
        return copy_timing(what, direction, memory, bytes=n_bytes, seconds=seconds)

    return transfer_job(
        **{
            "device": "cuda",
            "repeat": repeat,
            "context_startup_s": startup,
            "pin_memory_s": pin_s,
            "matrix_bytes": MATRIX_BYTES,
            "copies": (
                copy("matrix", "host_to_device", "pageable", MATRIX_BYTES, matrix_s),
                copy("batch B=32", "host_to_device", "pageable", 32 * 32 * 4, 10e-6),
                copy("batch B=512", "host_to_device", "pageable", 512 * 32 * 4, 15e-6),
                copy("matrix", "host_to_device", "pinned", MATRIX_BYTES, matrix_s / 2),
                copy("batch B=32", "host_to_device", "pinned", 32 * 32 * 4, 8e-6),
                copy("batch B=512", "host_to_device", "pinned", 512 * 32 * 4, 9e-6),
                copy("target", "host_to_device", "pageable", ROWS * 4, TARGET_S),
                copy("predictions", "device_to_host", "pageable", ROWS * 4, predictions_s),
            ),
            "loadavg_before": (0.1, 0.1, 0.1),
            "loadavg_after": (0.2, 0.1, 0.1),
        }
    )


def _transfers(startups=(0.001, 0.0012, 0.0009)):
    """matrix H2D median 100 µs (90-120), predictions D2H median 20 µs (18-25)."""
    matrix, predictions = (100e-6, 90e-6, 120e-6), (20e-6, 18e-6, 25e-6)
    return loads.aggregate_transfers([_transfer_job(i, startups[i], matrix[i], predictions[i]) for i in range(3)])


def _gpu_records(resident, streamed, eval_s=0.0005, non_finite=False, startup=0.001):
    """fp32 cells at B=512 on "cuda", epoch times per repeat; optionally one fp16 run without scaler gone NaN."""
    recs = []
    for placement, runs in (("resident", resident), ("streamed", streamed)):
        for repeat, epoch_s in enumerate(runs):
            recs.append(
                _train_record(
                    512,
                    "fastpath",
                    repeat,
                    epoch_s,
                    device="cuda",
                    placement=placement,
                    eval_s=eval_s,
                    peak=GPU_PEAK + (MATRIX_BYTES if placement == "resident" else 0),
                    startup=startup,
                )
            )
    if non_finite:
        recs.append(
            _train_record(
                512,
                "fastpath",
                1,
                0.002,
                False,
                device="cuda",
                precision="fp16",
                placement="resident",
                eval_s=eval_s,
                peak=GPU_PEAK,
                startup=startup,
                nonfinite_step=5,
            )
        )
    return recs


SCENARIOS = {
    # GPU 2 ms epochs: 6.01 + 0.12 + 2 + 0.5 = 8.63 ms, + 1 ms start-up; slowest 9.755 ms < CPU fastest 20.01 ms
    "gpu_wins": (_around(0.002, 1.05), _around(0.003, 31 / 30)),
    # GPU 25 ms epochs: slower than the CPU
    "gpu_slower": (_around(0.025, 1.04), _around(0.030, 31 / 30)),
    # GPU 5 ms (1.58x with start-up) but jobs at 2.5, 5 and 10 ms: the interval reaches below 1.5
    "overlap": (_around(0.005, 2.0), _around(0.020, 1.01)),
}


def _gpu_case(train_records, load_table, scenario, transfers=None, startup=0.001):
    recs = train_records + _gpu_records(*SCENARIOS[scenario], startup=startup)
    table = aggregate.aggregate_training(recs, ROWS)
    transfers = _transfers() if transfers is None else transfers
    return table, fullpath.full_path(table, load_table, transfers), transfers


def _one(rows, **where):
    def get(row, key):  # transfer copies are dicts, full-path rows records
        return row[key] if isinstance(row, dict) else getattr(row, key)

    (row,) = [r for r in rows if all(get(r, k) == v for k, v in where.items())]
    return row


# --- transfers aggregated -------------------------------------------------------------------


def test_aggregate_transfers():
    t = _transfers()
    assert t.device == "cuda"
    assert [(c.direction, c.memory, c.what) for c in t.copies] == [
        ("device_to_host", "pageable", "predictions"),
        ("host_to_device", "pageable", "batch B=32"),
        ("host_to_device", "pageable", "target"),
        ("host_to_device", "pageable", "batch B=512"),
        ("host_to_device", "pageable", "matrix"),
        ("host_to_device", "pinned", "batch B=32"),
        ("host_to_device", "pinned", "batch B=512"),
        ("host_to_device", "pinned", "matrix"),
    ]
    matrix = _one(t.copies, what="matrix", memory="pageable")
    assert (matrix.seconds.point, matrix.seconds_min, matrix.seconds_max) == pytest.approx((100e-6, 90e-6, 120e-6))
    assert matrix.gb_per_s == pytest.approx(MATRIX_BYTES / 100e-6 / 1e9)
    assert matrix.bytes == MATRIX_BYTES and matrix.repeats == 3
    assert (t.context_startup_s.median, t.context_startup_s.min, t.context_startup_s.max) == pytest.approx(
        (0.001, 0.0009, 0.0012)
    )
    assert t.pin_memory_s_median == pytest.approx(0.002)
    with pytest.raises(ValueError, match="no transfer records"):
        loads.aggregate_transfers([])


def test_aggregate_transfers_without_pinning():
    jobs = [_transfer_job(i, 0.1, 1e-4, 2e-5, pin_s=None) for i in range(2)]
    assert loads.aggregate_transfers(jobs).pin_memory_s_median is None


# --- full path per device -------------------------------------------------------------------


def test_full_path_transfer_per_placement(train_records, load_table):
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    assert len(rows) == 2 * len(table)
    resident = _one(rows, device="cuda", format="parquet", placement="resident")
    streamed = _one(rows, device="cuda", format="parquet", placement="streamed")
    # resident: the matrix and the target host->device once + the predictions device->host
    assert resident.transfer_s == pytest.approx(100e-6 + TARGET_S + 20e-6)
    assert streamed.transfer_s == pytest.approx(20e-6)  # its batch copies are inside the epoch
    assert all(r.transfer_s == 0.0 and r.startup_s == 0.0 for r in rows if r.device == "cpu")
    assert resident.total_s == pytest.approx(PARQUET_FIXED + 120e-6 + TARGET_S + 0.002 + 0.0005)
    assert resident.total_min_s == pytest.approx(PARQUET_FIXED + 90e-6 + TARGET_S + 18e-6 + 0.002 / 1.05 + 0.0005)
    assert resident.total_max_s == pytest.approx(PARQUET_FIXED + 120e-6 + TARGET_S + 25e-6 + 0.0021 + 0.0005)
    assert streamed.total_min_s == pytest.approx(PARQUET_FIXED + 18e-6 + 0.003 * 30 / 31 + 0.0005)
    for r in rows:
        assert r.total_s == pytest.approx(r.load_s + r.convert_s + r.transfer_s + r.train_s + r.eval_s)
        expected_startup = 0.001 if r.device == "cuda" else 0.0
        assert r.startup_s == pytest.approx(expected_startup)
        assert r.total_with_startup_s == pytest.approx(r.total_s + expected_startup)
    assert [r.device for r in rows] == sorted(r.device for r in rows)


def test_full_path_refuses_transfers_without_a_needed_copy(train_records, load_table):
    table = aggregate.aggregate_training(train_records + _gpu_records(*SCENARIOS["gpu_wins"]), ROWS)
    transfers = _transfers()
    transfers = dataclasses.replace(transfers, copies=tuple(c for c in transfers.copies if c.what != "predictions"))
    with pytest.raises(ValueError, match="no device_to_host transfer of 'predictions'"):
        fullpath.full_path(table, load_table, transfers)


# --- compare_devices and the verdict ------------------------------------------------------------


def test_full_path_of_a_prefetched_row_pays_the_pinning_once(load_table):
    prefetched = training_cell(device="cuda", placement="prefetched", batch_size=512, startup_s_jobs=(0.001,) * 3)
    (row,) = [r for r in fullpath.full_path([prefetched], load_table, _transfers()) if r.format == "parquet"]
    # the matrix pinned once (2 ms) and the predictions back (20 µs); its batch copies are inside the epoch
    assert row.transfer_s == pytest.approx(0.002 + 20e-6)
    assert row.one_off_s == pytest.approx(PARQUET_FIXED + 0.002 + 20e-6 + 0.001)
    assert row.per_epoch_s == pytest.approx(prefetched.epoch_s.point + prefetched.eval_s.point)


def test_each_timing_job_pays_the_one_off_costs_of_its_own_repeat_cycled_where_fewer_ran(train_records):
    # Two parquet load jobs for three training repeats: repeat 2 takes load job 0's load and conversion again.
    two = loads.aggregate_load_convert([_load_record("parquet", i, 0.004 + 0.002 * i, 0.001) for i in range(2)])
    cell = next(
        c for c in aggregate.aggregate_training(train_records, ROWS) if (c.loader, c.batch_size) == ("fastpath", 512)
    )
    (row,) = fullpath.full_path([cell], two)
    load, convert = two[0].load_s_jobs, two[0].convert_s_jobs
    assert load == pytest.approx((0.005, 0.007)) and convert == pytest.approx((0.00101, 0.00101))
    assert row.one_off_s_jobs == pytest.approx(
        tuple(cell.startup_s_jobs[r] + load[r % 2] + convert[r % 2] for r in range(3))
    )
    # the verdict's per-job full paths are those one-off costs plus each job's own training and evaluation
    jobs = decision_intervals.full_path_jobs(row, cell, epochs=4)
    assert jobs == [
        pytest.approx([row.one_off_s_jobs[r] + 4 * (t + e) for t, e in zip(cell.epoch_s_jobs[r], cell.eval_s_jobs[r])])
        for r in range(3)
    ]


def test_the_verdict_interval_carries_the_spread_of_the_loads_not_only_of_training(train_records, load_table):
    """Issue 25, item 4: loads that vary from job to job widen the speedup's interval; with each side's load
    median added to every job (the old way) they could not."""
    steady = _gpu_case(train_records, load_table, "gpu_wins")
    varied = loads.aggregate_load_convert(
        [_load_record("csv", i, 0.050, 0.003) for i in range(3)]
        + [_load_record("parquet", i, read, 0.001) for i, read in enumerate((0.001, 0.004, 0.030))]
    )
    wide = _gpu_case(train_records, varied, "gpu_wins")
    widths = []
    for table, rows, _ in (steady, wide):
        c = decision.compare_devices(rows, 1.5, table)
        widths.append(math.log(c.speedup.high / c.speedup.low))
    assert widths[1] > 1.5 * widths[0], widths


def test_compare_devices_numbers(train_records, load_table):
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    c = decision.compare_devices(rows, 1.5, table)
    cpu, gpu = c.cpu, c.gpu
    assert (cpu.device, cpu.format, cpu.loader, cpu.batch_size) == ("cpu", "parquet", "fastpath", 512)
    assert (gpu.device, gpu.format, gpu.placement) == ("cuda", "parquet", "resident")
    assert cpu.total_s == pytest.approx(CPU_BEST_TOTAL)
    assert cpu.startup_s == 0.0 and gpu.startup_s == pytest.approx(0.001)  # the jobs' one-off start-up
    # The point: the ratio of the geometric means of each side's per-job full paths (each job's training +
    # evaluation plus its own one-off costs: its start-up and the load, conversion and copies of the data-path
    # jobs of its repeat) - within 0.1 % of the ratio of the rows' sums of medians here.
    by_key = {cell.key: cell for cell in table}
    cpu_jobs, gpu_jobs = (decision_intervals.full_path_jobs(row, by_key[row.key]) for row in (cpu, gpu))
    geo = [statistics.geometric_mean(statistics.median(job) for job in jobs) for jobs in (cpu_jobs, gpu_jobs)]
    assert c.speedup.point == pytest.approx(geo[0] / geo[1], rel=1e-12)
    assert c.speedup.point == pytest.approx(cpu.total_with_startup_s / gpu.total_with_startup_s, rel=1e-3)
    assert c.speedup.point == pytest.approx(0.02001 / (0.00963 + TARGET_S), rel=1e-3)
    assert c.speedup_without_startup == pytest.approx(cpu.total_s / gpu.total_s)
    # The interval (Welch t on the log job totals, every term of the full path varying by job) holds the point and is held at the level of
    # the family of paths that could have been the two fastest (decision_intervals.contenders).
    assert c.speedup.low < c.speedup.point < c.speedup.high
    family = decision_intervals.contenders(
        [r for r in rows if r.device == "cpu"], cpu, table, 0.95
    ) * decision_intervals.contenders([r for r in rows if r.device != "cpu"], gpu, table, 0.95)
    assert family >= 2 and c.speedup.level == pytest.approx(1 - 0.05 / family)
    assert c.speedup == job_intervals.ratio_interval(gpu_jobs, cpu_jobs, level=c.speedup.level)
    # once: GPU load + convert + copies + start-up against the CPU's load + convert; per epoch: train + eval
    assert gpu.one_off_s - cpu.one_off_s == pytest.approx(120e-6 + TARGET_S + 0.001)
    assert cpu.per_epoch_s - gpu.per_epoch_s == pytest.approx(0.02001 - PARQUET_FIXED - 0.0025)
    resident_repaid = (gpu.one_off_s - cpu.one_off_s) / (cpu.per_epoch_s - gpu.per_epoch_s)
    # ... but the streamed path, slower per epoch, has no matrix copy to repay: it is repaid sooner
    streamed = _one(rows, device="cuda", format="parquet", placement="streamed")
    streamed_repaid = (streamed.one_off_s - cpu.one_off_s) / (cpu.per_epoch_s - streamed.per_epoch_s)
    assert streamed_repaid < resident_repaid
    assert (c.break_even_epochs, c.break_even_gpu) == (pytest.approx(streamed_repaid), streamed)
    assert c.gpu_wins is True and c.speedup.low > 1.5
    assert c.threshold == 1.5


def test_the_per_epoch_speedup_pairs_with_the_cpu_timed_in_the_gpus_jobs(train_records, load_table):
    from accel_choice.analyze import same_jobs
    from accel_choice.analyze.job_intervals import WELCH

    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    apart = _verdict(table, rows, probe=GPU_PROBE, threshold=1.5)
    cpu, gpu = (next(c for c in table if c.key == row.key) for row in (apart.comparison.cpu, apart.comparison.gpu))
    # The best CPU configuration, timed in the GPU's jobs: its cell names them (aggregate.training_table's `beside`).
    beside = replaced(cpu, jobs=gpu.jobs)
    paired = _verdict(table, rows, probe=GPU_PROBE, threshold=1.5, beside=[beside])
    assert apart.comparison.speedup_per_epoch.method == WELCH
    assert paired.comparison.speedup_per_epoch.method == same_jobs.ALONE
    assert paired.comparison.speedup_per_epoch.jobs == len(gpu.jobs)
    assert paired.comparison.speedup == apart.comparison.speedup  # the full path is the two devices' jobs' still
    jobs, there = len(gpu.jobs), beside.epoch_s.point + beside.eval_s.point
    assert paired.comparison.cpu_beside_per_epoch_s == there and apart.comparison.cpu_beside_per_epoch_s is None
    said = f"paired: the CPU timed in the GPU's {jobs} jobs, {formatting.ms(there)} ms an epoch there)."
    assert said in words.comparison_section(paired)
    assert "the two devices' own jobs)." in words.comparison_section(apart)
    # A decision file of version 9 (before the CPU was timed beside the GPU) still reads, with no such figure.
    decided = _inputs(train_records, load_table, env=NO_CUDA).decision
    older = records.to_json(decided) | {"schema_version": 9}
    assert records.from_json(Decision, older, "decision.json") == decided
    # Another configuration timed beside the GPU pairs nothing: the best CPU's is what the ratio is of.
    other = replaced(beside, batch_size=beside.batch_size // 2)
    assert _verdict(table, rows, probe=GPU_PROBE, beside=[other]).comparison.speedup_per_epoch.method == WELCH


def test_compare_devices_break_even_with_a_large_start_up(train_records, load_table):
    """Faster per epoch, but a 50 ms start-up (context and first step): one epoch loses; the GPU's extra
    one-off costs (start-up, the matrix and target copies, predictions) are repaid after 4.4 epochs, its
    load and convert being the CPU's (same file)."""
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins", startup=0.05)
    c = decision.compare_devices(rows, 1.5, table)
    assert c.speedup.point < 1 < c.speedup_without_startup
    extra = 0.05 + 120e-6 + TARGET_S
    assert c.break_even_epochs == pytest.approx(extra / (0.02001 - PARQUET_FIXED - 0.0025))
    v = _verdict(table, rows, probe=GPU_PROBE)
    assert (v.device, v.outcome, v.reason) == ("CPU", "CPU", "below_threshold")
    assert words.reasons(v)[-1] == (
        "Per epoch (training and evaluation) the GPU path (cuda fp32 resident fastpath, parquet, B=512) is faster by 11.5 ms; its "
        "extra one-off costs (start-up, copies, load: 50.1 ms beyond the CPU's) are repaid after 4.4 epochs of this "
        "size."
    )


def test_compare_devices_none_without_gpu_rows(full_path_rows):
    assert decision.compare_devices(full_path_rows, 1.5) is None


def test_verdict_gpu_clearly_faster(train_records, load_table):
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    v = _verdict(table, rows, probe=GPU_PROBE, threshold=1.5)
    assert (v.device, v.outcome, v.reason) == ("GPU", "GPU", "gpu_pays_off")
    assert v.speedup_interval == (v.comparison.speedup.low, v.comparison.speedup.high)
    assert v.gpu_measured is True
    assert v.gpu.visible is True
    assert v.comparison.gpu_wins is True
    assert words.claim(v).startswith("Measured speedup 2.08× (")
    assert words.claim(v).endswith(
        "over one epoch's full path: the whole interval lies above the 1.5× threshold, so the GPU pays off."
    )
    assert "does not pay off" not in words.claim(v)
    # the paths it rests on: in the comparison section, once
    assert "best CPU (cpu fastpath 1 thread, parquet, B=512)" in words.comparison_section(v)
    assert "vs best GPU (cuda fp32 resident fastpath, parquet, B=512)" in words.comparison_section(v)
    assert len(words.reasons(v)) == 6 and "repaid after 0.1 epochs" in words.reasons(v)[-1]


def test_verdict_threshold_is_used(train_records, load_table):
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    v = _verdict(table, rows, probe=GPU_PROBE, threshold=5)
    assert (v.device, v.outcome) == ("CPU", "CPU")
    assert words.claim(v).endswith("the whole interval lies at or below the 5× threshold, so the GPU does not pay off.")
    inside = v.comparison.speedup.point  # inside the interval: this run cannot say
    v = _verdict(table, rows, probe=GPU_PROBE, threshold=inside)
    assert (v.device, v.outcome) == ("CPU", "undecided")


def test_verdict_gpu_slower(train_records, load_table):
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_slower")
    v = _verdict(table, rows, probe=GPU_PROBE)
    assert v.device == "CPU"
    assert v.gpu_measured is True
    assert v.comparison.speedup.point < 1
    assert v.comparison.break_even_epochs is None
    assert words.claim(v).endswith(
        "the whole interval lies at or below the 1.5× threshold, so the GPU does not pay off."
    )
    assert len(words.reasons(v)) == 5  # no break-even: the GPU is not faster per epoch


def test_verdict_faster_median_but_interval_straddles_the_threshold(train_records, load_table):
    """A speedup above 1.5× whose interval reaches below it (GPU jobs at 2.5, 5 and 10 ms): undecided,
    with the jobs that would settle it with 80 % power; the device to use meanwhile stays the CPU."""
    table, rows, _ = _gpu_case(train_records, load_table, "overlap")
    v = _verdict(table, rows, probe=GPU_PROBE)
    c = v.comparison
    # the rows' sums make it 1.58x; the geometric mean of the GPU's per-job paths (the speedup's point) is
    # pulled up by its 10 ms job: 1.53x
    assert c.cpu.total_with_startup_s / c.gpu.total_with_startup_s == pytest.approx(0.02001 / (0.01263 + TARGET_S))
    assert c.speedup.low < 1.5 < c.speedup.point < c.speedup.high
    assert c.gpu_wins is False
    assert (v.device, v.outcome, v.reason) == ("CPU", "undecided", "interval_straddles_threshold")
    assert v.gpu_measured is True
    # the repeats that settle a speedup lying 1.2x or more from the threshold, planned from the jobs' spread
    # (its 80 % upper bound): GPU jobs a factor 2 apart ask for many; the same at any threshold
    assert v.repeats_to_settle is not None and v.repeats_to_settle > 3
    claim = words.claim(v)
    assert claim.endswith(
        f": undecided, the interval straddles the 1.5× threshold. About {v.repeats_to_settle} timing repeats "
        "(timing.repeats) would settle it."
    )
    # how sure that number is: in the comparison section
    assert (
        f"About {v.repeats_to_settle} timing repeats (timing.repeats) would settle it, at least 80 % of the time "
        "when the true speedup lies 1.2× or more from the threshold" in words.comparison_section(v)
    )
    assert _verdict(table, rows, probe=GPU_PROBE, threshold=1.3).repeats_to_settle == v.repeats_to_settle
    spread = dataclasses.replace(v, repeats_to_settle=None)
    assert words.claim(spread).endswith("No practical number of repeats (up to 200) would settle it.")
    assert "No practical number of repeats (up to 200) would settle it: its jobs spread too widely" in (
        words.comparison_section(spread)
    )


@pytest.mark.parametrize(
    ("probe", "visible", "said", "absent"),
    [
        (
            NO_DEVICE_PROBE,
            False,
            "No CUDA device was visible: the GPU plan is theoretical and no speedup is claimed.",
            "no GPU timing was taken",
        ),
        (
            GPU_PROBE,
            True,
            "CUDA 12.8 visible: NVIDIA H200 (driver 570.86.15), but no GPU timing was taken in this run: "
            "no speedup is claimed.",
            "theoretical",
        ),
        (
            visible_devices(cuda_available=False, mps_available=True),
            True,
            "Apple MPS visible, but no GPU timing was taken",
            "theoretical",
        ),
    ],
    ids=["no device", "cuda", "mps"],
)
def test_verdict_without_gpu_rows_from_the_probe(train_table, full_path_rows, probe, visible, said, absent):
    # the environment record says the opposite: the probe, when given, is what counts
    env = WITH_CUDA if not visible else NO_CUDA
    v = _verdict(train_table, full_path_rows, env, probe=probe)
    assert v.device == "CPU"
    assert v.gpu_measured is False
    assert v.gpu.visible is visible
    assert v.comparison is None
    assert said in words.claim(v)
    assert absent not in words.claim(v)


# --- decision sheet with the GPU measured ------------------------------------------------------


def test_memory_bound_bytes():
    # Adam 26,128 + 2 x 165,888 forward activations at B=512 + backward's third 512 x 48 buffer + the
    # batch in use and the next (2 x 512 x 33 fp32) + the loss buffer (16 steps) (+ the resident
    # 8,192 x 33 fp32 matrix and its int64 shuffled index)
    streamed = 26_128 + 331_776 + 98_304 + 2 * 67_584 + 64
    assert theory.memory_bound_bytes(WIDTHS, 512, ROWS, resident=False) == streamed
    assert theory.memory_bound_bytes(WIDTHS, 512, ROWS, resident=True) == streamed + 1_081_344 + 65_536


def test_sheet_with_gpu_measured(train_records, load_table):
    table, _, transfers = _gpu_case(train_records, load_table, "gpu_wins")
    sheet = _sheet(table, load_table, NO_CUDA, probe=GPU_PROBE, transfers=transfers)
    assert [s.status for s in sheet] == [
        "measured",
        "checked",
        "measured",
        "measured",
        "measured_on_both_devices",
        "computed_and_measured",
    ]
    assert sheet[2].value("matrix_gb_per_s") == pytest.approx(MATRIX_BYTES / 100e-6 / 1e9)
    status, evidence = _said(sheet, NO_CUDA, GPU_PROBE)
    assert status == {
        1: "measured",
        2: "checked",
        3: "measured",
        4: "measured",
        5: "measured on both devices",
        6: "computed and measured",
    }
    assert evidence[1] == "2 load/convert cells and 4 training cells, repeats [3]"  # CPU cells only
    assert evidence[2] == "CUDA 12.8 visible: NVIDIA H200 (driver 570.86.15)"
    assert evidence[3] == "matrix host→device 10.49 GB/s pageable; context start-up 1 ms (fixed cost)"
    assert evidence[4] == "2 GPU cells: fp32/resident, fp32/streamed"
    peak = GPU_PEAK + MATRIX_BYTES
    assert evidence[6].endswith(f"at B=512; measured peak {peak:,} bytes (torch.cuda.max_memory_allocated)")


def test_sheet_with_accelerator_off(train_table, load_table):
    sheet = _sheet(train_table, load_table, NO_CUDA, probe=GPU_PROBE, accelerator="off")
    status, _ = _said(sheet, NO_CUDA, GPU_PROBE)
    assert status[3] == status[4] == "not measured (accelerator: off)"
    assert status[5] == "CPU side measured; GPU side not measured (accelerator: off)"
    assert status[6] == "computed"


def test_sheet_without_gpu_rows_from_the_probe(train_table, load_table):
    sheet = _sheet(train_table, load_table, WITH_CUDA, probe=NO_DEVICE_PROBE)
    status, evidence = _said(sheet, WITH_CUDA, NO_DEVICE_PROBE)
    assert status[3] == status[4] == "not measurable here"
    assert evidence[2] == "no CUDA or MPS device visible (torch 2.13.0+cpu, CUDA build: none)"


# --- the report with and without the GPU ------------------------------------------------------


GPU_HEADINGS = (
    "GPU training: one epoch (ms, geometric mean of the jobs' median epochs)",
    "Transfers (measured on their own, synchronize before each clock read)",
    "CPU vs GPU, full path of one epoch",
)


def _render(train_records, load_table, *, gpu, transfers, probe, accelerator="auto"):
    recs = train_records + (_gpu_records(*SCENARIOS["gpu_wins"], non_finite=True) if gpu else [])
    return report.render(
        _inputs(recs, load_table, env=NO_CUDA, probe=probe, transfers=transfers, accelerator=accelerator)
    )


@pytest.fixture(scope="module")
def rendered_gpu(train_records, load_table):
    return _render(train_records, load_table, gpu=True, transfers=_transfers(), probe=GPU_PROBE)


def test_report_gpu_sections_in_order(rendered_gpu):
    headings = re.findall(r"^## (.+)$", rendered_gpu, flags=re.M)
    assert headings[:6] == [
        "GPU decision sheet (section 28.3.5)",
        "CPU baseline: one training epoch (ms, geometric mean of the jobs' median epochs)",
        *GPU_HEADINGS,
        "Full path per epoch on the benchmark matrix (ms, sums of medians)",
    ]
    assert rendered_gpu.startswith("# accel-choice: is a CPU enough for this training job?\n\n**Verdict: GPU.** ")


def test_report_gpu_training_table_with_peak_epoch_memory_and_bound(rendered_gpu):
    assert (
        "| device | precision | placement | B | repeats | epoch | interval | jobs min–max | samples/s | eval | peak bytes "
        "| epoch bytes | bound bytes | epoch/bound | flag |" in rendered_gpu
    )
    # the builder's epoch memory: 40 % of the peak (peak less what was allocated when the epoch began)
    resident_peak, bound = GPU_PEAK + MATRIX_BYTES, theory.memory_bound_bytes(WIDTHS, 512, ROWS, resident=True)
    resident_own = resident_peak * 2 // 5
    assert bound == 1_738_320
    assert (
        f"| cuda | fp32 | resident | 512 | 3 | 2.00 | 1.77–2.26 | 1.90–2.10 | 4,096,000 | 0.50 | {resident_peak:,} | "
        f"{resident_own:,} | {bound:,} | {resident_own / bound:.2f} |  |"
    ) in rendered_gpu
    streamed_bound, streamed_own = theory.memory_bound_bytes(WIDTHS, 512, ROWS, resident=False), GPU_PEAK * 2 // 5
    assert (
        f"| cuda | fp32 | streamed | 512 | 3 | 3.00 | 2.77–3.25 | 2.90–3.10 | 2,730,667 | 0.50 | {GPU_PEAK:,} | "
        f"{streamed_own:,} | {streamed_bound:,} | {streamed_own / streamed_bound:.2f} |" in rendered_gpu
    )


def test_report_states_the_gpu_start_up_and_its_parts(rendered_gpu):
    # the fixture's GPU jobs: a 1 ms context and no first-step excess
    assert (
        "One-off start-up per GPU job (median): 1.0 ms: the CUDA context 1.0 ms (the first CUDA call, the driver "
        "left cold by an NVML availability check), then up to the end of the first training step, less a steady "
        "step, 0.0 ms"
    ) in rendered_gpu


def test_report_checks_the_gpu_resident_cell_against_its_plain_loop_and_launch_floor(rendered_gpu):
    """The GPU section says the eager fp32 resident cell's plain loop and launch floor (render.gpu_checks); the
    CPU's Accuracy section keeps to the CPU cells (none here). The builders' jobs: the plain loop as fast as the epoch, the
    step 4x its floor in every job (no spread: the report says there is no interval)."""
    gpu = rendered_gpu[rendered_gpu.index("## GPU training") : rendered_gpu.index("## Transfers")]
    assert "### Checked against a plain loop and the launch floor" in gpu
    assert "| 512 | 2.00 | 2.00 | 1.00× (no spread between the jobs: no interval) | within ±10% |" in gpu
    assert (
        "- B = 512: this GPU step takes 4.00× (no spread between the jobs: no interval) its launch floor (the same "
        "step replayed as a CUDA graph). The host bounds it"
    ) in gpu
    assert "## Accuracy" not in rendered_gpu  # this fixture's CPU jobs timed no plain loop; the GPU's is said above


def test_report_transfers_and_comparison(rendered_gpu):
    assert "Context start-up (fixed cost): 1.0 ms median (0.9–1.2 ms); pinning the matrix: 2.00 ms." in rendered_gpu
    assert (
        "| matrix | host to device | pageable | 1,048,576 | 100.0 | 90.0–120.0 | 90.0–120.0 | 10.49 |" in rendered_gpu
    )
    assert "| predictions | device to host | pageable | 32,768 | 20.0 | 18.0–25.0 | 18.0–25.0 | 1.64 |" in rendered_gpu
    assert (
        "| best variant | cpu fastpath 1 thread, parquet, B=512 | cuda fp32 resident fastpath, parquet, B=512 |"
        in rendered_gpu
    )
    assert "| full path, ms | 20.0 | 8.63 |" in rendered_gpu
    assert "| start-up (once), ms | 0 | 1.00 |" in rendered_gpu
    assert "| per epoch (train + eval), ms | 14.0 | 2.50 |" in rendered_gpu
    # once: 6.01 load + convert, then the GPU's 0.125 copies (matrix, target, predictions) and 1 ms start-up
    assert "| once (load, copies, start-up), ms | 6.01 | 7.13 |" in rendered_gpu
    assert re.search(
        r"^\| speedup CPU/GPU \|  \| 2\.08× \(97\.5% interval [\d.]+–[\d.]+×\); threshold 1\.5× \|$",
        rendered_gpu,
        flags=re.M,
    )


def test_report_gpu_full_path_flags_and_environment(rendered_gpu):
    # full-path row: device, format, precision, placement, loader, B, load, convert, transfer, train, eval, total
    assert (
        "| cuda | parquet | fp32 | resident | fastpath | 512 | 1 | 5.00 | 1.01 | 0.12 | 2.00 | 0.50 | 8.63 |"
        in rendered_gpu
    )
    assert "| cpu | parquet | fp32 | host | fastpath | 512 | 1 | 5.00 | 1.01 | 0 | 10.0 | 4.00 | 20.0 |" in rendered_gpu
    assert (
        "- cuda fp16 without GradScaler resident B=512 fastpath repeat 1: first non-finite loss at step 5"
        in rendered_gpu
    )
    assert "| accelerator setting | auto |" in rendered_gpu
    assert f"| device probe | NVIDIA H200 (sm 9.0, {150_020_390_912 / 2**30:.1f} GiB) |" in rendered_gpu
    assert rendered_gpu.count("| measured |") >= 3  # steps 1, 3 and 4


@pytest.mark.parametrize("transfers", [None, "given"], ids=["no transfers", "transfers without GPU rows"])
def test_report_without_gpu_rows_has_no_gpu_sections(train_records, load_table, transfers):
    text = _render(
        train_records,
        load_table,
        gpu=False,
        transfers=_transfers() if transfers else None,
        probe=NO_DEVICE_PROBE,
        accelerator="off",
    )
    for heading in GPU_HEADINGS:
        assert heading not in text
    assert "GPU training" not in text and "CPU vs GPU" not in text and "## Transfers" not in text
    assert "peak bytes" not in text and "bound bytes" not in text
    assert "| device probe | no accelerator visible |" in text
    assert "| accelerator setting | off |" in text
    if transfers is None:
        assert text.count("| not measured (accelerator: off) |") == 2


def test_decision_figure_with_gpu_rows(tmp_path, train_records, load_table):
    matplotlib = pytest.importorskip("matplotlib")
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    png, svg = tmp_path / "decision.png", tmp_path / "decision.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text, so the labels can be read back
        decision_figure(table, rows, png, svg, title="gpu figure")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 1000
    text = svg.read_text()
    assert "<svg" in text and text.rstrip().endswith("</svg>")
    assert "GPU: Parquet, fp32, resident" in text  # the GPU bar of the full-path panel
    assert "CUDA fp32 resident (point, 95% interval)" in text  # and its throughput series, with the intervals
    assert "CUDA fp32 streamed (point, 95% interval)" in text
    assert "transfer" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decision.png", "decision.svg"]


def test_decision_figure_without_gpu_rows_has_no_gpu_series(tmp_path, train_table, full_path_rows):
    matplotlib = pytest.importorskip("matplotlib")
    svg = tmp_path / "decision.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        decision_figure(train_table, full_path_rows, tmp_path / "decision.png", svg, title="cpu figure")
    text = svg.read_text()
    assert "CPU: Parquet + fast path" in text
    assert "GPU:" not in text and "CUDA" not in text


def test_a_counted_model_has_its_own_step_6_and_gpu_bound_words(train_records, load_table):
    """A model the formulas do not describe: step 6 and the GPU bound name the counted state, not 4·P·4."""
    recs = train_records + _gpu_records(*SCENARIOS["gpu_wins"], non_finite=True)
    inputs = _inputs(recs, load_table, env=NO_CUDA, probe=GPU_PROBE, transfers=_transfers())
    formula = report.render(inputs)
    counted = report.render(dataclasses.replace(inputs, theory=dataclasses.replace(inputs.theory, figures="counted")))
    assert f"| 6 | {STEP_TITLES[5]} |" in formula and sheet_words.COUNTED_STEP_6 not in formula
    assert f"| 6 | {sheet_words.COUNTED_STEP_6} |" in counted and STEP_TITLES[5] not in counted
    assert "Bound: Adam fp32 4·P·4 + forward and backward activations" in formula
    assert "Bound: Adam fp32 4·P·4" not in counted
    assert (
        "Bound: your model's parameters, gradients, buffers and optimizer state as counted (`tables/model_profile.json`)"
        in (counted)
    )


def test_the_data_section_names_where_each_data_set_came_from():
    """Issue 27: generated data with its settings; your own files by name, each with its sha256."""
    from accel_choice.records.data import BenchmarkGenerator, NorthstarGenerator, UserDataSource
    from accel_choice.render import data as data_words

    own = UserDataSource(
        kind="arrays", files=("x.npy", "y.npy"), sha256=("a" * 64, "b" * 64), rows=10, sample_shape=(3,), seed=7
    )
    assert data_words.source_words(own) == (
        "your arrays: `x.npy` (sha256 `aaaaaaaaaaaaaaaa…`), `y.npy` (sha256 `bbbbbbbbbbbbbbbb…`)"
    )
    assert data_words.source_words(BenchmarkGenerator(rows=10, features=3, noise=0.2, seed=7)) == (
        "generated: seed 7, noise 0.2"
    )
    assert data_words.source_words(NorthstarGenerator(rows=10, late_rate=0.2, seed=7)) == (
        "generated: seed 7, late rate 0.2"
    )


def test_one_off_costs_are_paid_once_over_the_epochs_the_job_trains(train_records, load_table):
    """Issue 25 item 4: over 1 epoch the GPU's start-up and copies weigh; over 20 epochs the speedup nears the
    per-epoch one, which is stated beside it; the epochs default to what the Northstar selection needed."""
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins", startup=0.05)
    one = decision.compare_devices(rows, 1.5, table)
    many = decision.compare_devices(rows, 1.5, table, epochs=20)
    assert (one.epochs, many.epochs) == (1, 20)
    assert one.speedup_per_epoch.point == pytest.approx(many.speedup_per_epoch.point)  # (its level: the family)
    assert one.speedup.point < 1 < many.speedup.point < many.speedup_per_epoch.point  # the start-up, repaid
    by_key = {cell.key: cell for cell in table}
    twenty = [decision_intervals.full_path_jobs(row, by_key[row.key], 20) for row in (many.gpu, many.cpu)]
    assert many.speedup == job_intervals.ratio_interval(*twenty, level=many.speedup.level)
    v = _verdict(table, rows, probe=GPU_PROBE, epochs=20)
    assert "over 20 epochs' full path" in words.claim(v)
    said = words.comparison_section(v)
    assert "Measured full path of 20 epochs (gpu.epochs or Northstar's), each side's one-off costs" in said
    assert f"each further epoch {many.speedup_per_epoch.point:.2f}×" in said


def test_the_epochs_default_to_what_the_northstar_selection_needed():
    from builders_northstar import time_to_target_record

    reached = time_to_target_record()  # B=16 reaches the target at epoch 2; B=64 does not
    assert decision.epochs_to_target(reached) == next(r.epoch for r in reached.rows if r.run == reached.fastest)
