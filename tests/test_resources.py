"""The resource table: Snakemake's benchmark TSV beside the body line every job logs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from accel_choice import records
from accel_choice.analyze import resources
from accel_choice.io import runtime
from accel_choice.records import RecordError
from accel_choice.records.resources import ResourceTable, RuleResources
from builders_data import data_environment, job_resources, resource_table, rule_resources

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _benchmark(path, row: str):
    path.write_text(HEADER + row + "\n")
    return path


def _log(path, *body_lines: str, failed: bool = False):
    lines = ["2026-12-01 07:25:13,077 INFO threads=1 torch_threads=1", *body_lines]
    if failed:
        lines += [
            "2026-12-01 07:25:14,000 ERROR job failed",
            "Traceback (most recent call last):",
            "RuntimeError: boom",
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- the benchmark file


def test_read_benchmark_of_a_real_snakemake_file(tmp_path):
    bench = resources.read_benchmark(
        _benchmark(tmp_path / "b.tsv", "1.88\t0:00:01\t259.45\t762.29\t157.44\t205.75\t41.39\t0.01\t25.00\t0.99")
    )
    assert bench == {"process_wall_s": 1.88, "max_rss_mb": 259.45, "process_cpu_s": 0.99, "mean_load": 25.0}


def test_na_values_become_none(tmp_path):
    bench = resources.read_benchmark(_benchmark(tmp_path / "b.tsv", "0.41\t0:00:00\tNA\tNA\tNA\tNA\tNA\tNA\tNA\t-"))
    assert bench == {"process_wall_s": 0.41, "max_rss_mb": None, "process_cpu_s": None, "mean_load": None}


def test_only_the_first_row_is_read(tmp_path):
    path = tmp_path / "b.tsv"
    path.write_text(HEADER + "1.0\t0:00:01\t10\t20\t5\t6\t0\t0\t50\t0.5\n2.0\t0:00:02\t99\t99\t99\t99\t0\t0\t99\t1.5\n")
    assert resources.read_benchmark(path)["process_wall_s"] == 1.0


@pytest.mark.parametrize("text", ["", "job body: wall 1 s\n", "wall\tmax_rss\n1.0\t2.0\n"])
def test_a_file_that_is_not_a_benchmark_is_refused(tmp_path, text):
    path = tmp_path / "not_a_benchmark.tsv"
    path.write_text(text)
    with pytest.raises(ValueError, match="not_a_benchmark.tsv: not a Snakemake benchmark file"):
        resources.read_benchmark(path)


# ---------------------------------------------------------------- the body line


def test_the_body_line_written_by_a_job_is_read_back(tmp_path, restore_logging_and_threads):
    log_path = tmp_path / "job.log"
    with runtime.job(log_path, threads=1) as log:
        log.info("working")
        sum(range(10_000))
    text = log_path.read_text()
    assert "threads=1 torch_threads=1" in text and "working" in text
    body = runtime.read_body_line(text)
    assert set(body) == {"body_wall_s", "body_cpu_s", "peak_rss_mb"}
    assert 0 <= body["body_wall_s"] < 60 and 0 <= body["body_cpu_s"] < 60
    assert body["peak_rss_mb"] > 1  # this Python process with torch loaded: far above a megabyte
    assert (
        text.rstrip()
        .splitlines()[-1]
        .endswith(runtime.BODY_LINE % (body["body_wall_s"], body["body_cpu_s"], body["peak_rss_mb"]))
    )


def test_a_failed_job_has_no_body_line(tmp_path, restore_logging_and_threads):
    log_path = tmp_path / "job.log"
    with pytest.raises(SystemExit):
        with runtime.job(log_path, threads=1):
            raise RuntimeError("boom")
    text = log_path.read_text()
    assert "job failed: RuntimeError: boom" in text and "Traceback" in text
    assert runtime.read_body_line(text) is None


def test_a_users_mistake_ends_the_job_with_its_one_line_and_no_traceback(tmp_path, repo):
    """The job's stderr (what Snakemake shows) and its log hold the message once, and no traceback."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[2])\n"
        "from accel_choice.io import runtime\n"
        "from accel_choice.io.targets import DataError\n"
        "with runtime.job(sys.argv[1], threads=1):\n"
        "    raise DataError('config key data.benchmark.table.target: column late is also a feature')\n"
    )
    log_path = tmp_path / "job.log"
    done = subprocess.run(
        [sys.executable, "-c", code, str(log_path), str(repo / "workflow" / "scripts")], capture_output=True, text=True
    )
    line = "job stopped: config key data.benchmark.table.target: column late is also a feature"
    assert done.returncode == 1
    for text in (done.stderr, log_path.read_text()):
        assert text.count(line) == 1 and "Traceback" not in text and "job failed" not in text
    assert runtime.read_body_line(log_path.read_text()) is None


def test_the_last_body_line_wins():
    text = "\n".join([runtime.BODY_LINE % (1.0, 0.5, 100.0), "again", runtime.BODY_LINE % (2.25, 1.5, 300.5)])
    assert runtime.read_body_line(text) == {"body_wall_s": 2.25, "body_cpu_s": 1.5, "peak_rss_mb": 300.5}
    assert runtime.read_body_line("") is None


# ---------------------------------------------------------------- rows and the rule summary


def test_job_row_puts_the_process_beside_the_body(tmp_path):
    bench = _benchmark(tmp_path / "b.tsv", "1.60\t0:00:01\t256.54\t762.29\t157.44\t205.75\t41.39\t0.01\t25.00\t0.99")
    log = _log(tmp_path / "j.log", "2026-12-01 07:25:13,117 INFO " + runtime.BODY_LINE % (0.0194, 0.0116, 341.7))
    row = resources.job_row("generate_benchmark", "generate_benchmark", bench, log)
    assert row.rule == row.job == "generate_benchmark"
    assert (row.process_wall_s, row.body_wall_s, row.body_cpu_s) == (1.60, 0.0194, 0.0116)
    assert row.outside_body_s == pytest.approx(1.60 - 0.0194)
    assert (row.max_rss_mb, row.peak_rss_mb, row.rss_sampled) == (256.54, 341.7, True)
    assert (row.process_cpu_s, row.mean_load) == (0.99, 25.0)


def test_job_row_of_a_failed_job_without_an_rss_sample(tmp_path):
    bench = _benchmark(tmp_path / "b.tsv", "0.41\t0:00:00\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA")
    row = resources.job_row("plot", "plot", bench, _log(tmp_path / "j.log", failed=True))
    assert row.body_wall_s is None and row.body_cpu_s is None and row.peak_rss_mb is None
    assert row.outside_body_s is None
    assert row.rss_sampled is False


def test_a_benchmark_value_a_record_cannot_hold_becomes_none(tmp_path):
    bench = resources.read_benchmark(_benchmark(tmp_path / "b.tsv", "0.41\t0:00:00\tnan\tNA\tNA\tNA\tNA\tNA\tinf\t0.1"))
    assert bench == {"process_wall_s": 0.41, "max_rss_mb": None, "process_cpu_s": 0.1, "mean_load": None}


def _row(rule, wall, body, rss, peak):
    return job_resources(rule=rule, job=rule, process_wall_s=wall, body_wall_s=body, max_rss_mb=rss, peak_rss_mb=peak)


def test_rule_summary_arithmetic():
    rows = [
        _row("time_cpu", 2.0, 1.5, 300.0, 310.0),
        _row("export", 1.0, 0.25, None, 200.0),  # NA: no sample before the job ended
        _row("time_cpu", 4.0, 3.0, 0.0, 330.0),  # a sample of 0: also no real sample
        _row("time_cpu", 3.0, None, 320.0, None),  # failed: no body line
        _row("export", 3.0, 2.0, 250.0, 260.0),
    ]
    summary = resources.rule_summary(rows)
    assert [s.rule for s in summary] == ["time_cpu", "export"]  # first-seen order
    cpu, export = summary
    assert cpu == RuleResources(
        rule="time_cpu",
        jobs=3,
        process_wall_total_s=9.0,
        process_wall_median_s=3.0,
        body_wall_median_s=2.25,
        outside_body_median_s=0.75,
        max_rss_mb_sampled=320.0,
        jobs_without_rss_sample=1,
        peak_rss_mb_kernel=330.0,
    )
    assert export.jobs == 2 and export.process_wall_total_s == 4.0
    assert export.outside_body_median_s == pytest.approx((0.75 + 1.0) / 2)
    assert (export.max_rss_mb_sampled, export.jobs_without_rss_sample) == (250.0, 1)
    table = ResourceTable(rules=tuple(summary), jobs=tuple(rows), environment=data_environment())
    assert records.from_json(ResourceTable, records.to_json(table), "here") == table


def test_rule_summary_of_jobs_that_all_lack_numbers():
    (summary,) = resources.rule_summary([_row("plot", None, None, None, None)])
    assert summary.jobs == 1 and summary.process_wall_total_s == 0
    assert summary.process_wall_median_s is None and summary.body_wall_median_s is None
    assert summary.max_rss_mb_sampled is None and summary.jobs_without_rss_sample == 1
    assert summary.peak_rss_mb_kernel is None


# ---------------------------------------------------------------- the records' invariants and a damaged file


def test_resource_invariants():
    with pytest.raises(ValueError, match="outside_body_s is 0.5 with process_wall_s None"):
        job_resources(process_wall_s=None, outside_body_s=0.5)
    with pytest.raises(ValueError, match="rss_sampled is True with max_rss_mb 0.0"):
        job_resources(max_rss_mb=0.0, rss_sampled=True)
    with pytest.raises(ValueError, match="2 jobs without an RSS sample of 1"):
        rule_resources(jobs_without_rss_sample=2)
    with pytest.raises(ValueError, match="the rules count 2 jobs, the table lists 1"):
        resource_table(rules=(rule_resources(jobs=2),))
    with pytest.raises(ValueError, match="a rule is summarised twice"):
        resource_table(rules=(rule_resources(), rule_resources()), jobs=(job_resources(), job_resources()))


def test_a_damaged_resource_table_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "resources.json"
    data = records.to_json(resource_table())
    data["jobs"][0]["peak_rss_mb"] = -1.0
    path.write_text(json.dumps(data))
    with pytest.raises(
        RecordError, match=r"resources\.json: jobs\[0\]\.peak_rss_mb: Input should be greater than or equal to 0"
    ):
        records.read(ResourceTable, path)


def test_a_training_job_takes_its_options_from_its_rules_params():
    from types import SimpleNamespace

    from accel_choice.io.runtime import training_options
    from accel_choice.records.model import ModelSpec

    params = SimpleNamespace(
        seed=7,
        model={"hidden": 8, "lr": 0.01},
        warmup_steps=3,
        epochs_per_job=2,
        matmul_precision="high",
        compile_mode=None,  # no compiled variant: the rule gives no mode
    )
    assert training_options(params) == {
        "seed": 7,
        "spec": ModelSpec(hidden=8, lr=0.01),
        "warmup_steps": 3,
        "epochs": 2,
        "precision": "high",
        "compile_mode": "default",
    }
    params.compile_mode = "reduce-overhead"
    assert training_options(params)["compile_mode"] == "reduce-overhead"
