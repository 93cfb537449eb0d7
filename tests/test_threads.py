"""timing.threads as a measured dimension: cells per thread count, the fastest CPU configuration and its
ties across thread counts, the step-time growth at one thread count, the textbook's exercise-2 shape."""

from __future__ import annotations

import statistics

import pytest

from builders_training import replaced, training_record

from accel_choice.analyze import aggregate, decision_intervals, job_intervals, same_jobs, stats
from accel_choice.analyze.stats import NoiseRules
from accel_choice.io.config_checks import normalize_config

ROWS = 8192
# epoch_s per (batch_size, threads) of the fast path, three jobs each: 2 threads is faster at B=512 only.
EPOCHS = {
    (32, 1): [0.100, 0.101, 0.099],
    (32, 2): [0.104, 0.103, 0.105],
    (512, 1): [0.030, 0.031, 0.029],
    (512, 2): [0.020, 0.021, 0.019],
}


def records():
    return [
        training_record(
            batch_size=b,
            loader="fastpath",
            threads=t,
            repeat=r,
            epoch_s=s,
            epoch_s_each=(s, s * 1.01, s * 0.99),
            rows=ROWS,
        )
        for (b, t), runs in EPOCHS.items()
        for r, s in enumerate(runs)
    ]


def test_each_thread_count_is_a_cell_of_its_own() -> None:
    table = aggregate.aggregate_training(records(), ROWS)
    assert [(c.batch_size, c.threads) for c in table] == [(32, 1), (32, 2), (512, 1), (512, 2)]
    assert all(c.repeats == 3 for c in table)


def test_the_sentinel_flags_of_a_job_reach_every_thread_count_it_timed() -> None:
    reasons = {"rep1": ("the sentinel ran 40 % slow",)}  # one CPU job: every thread count and batch size of repeat 1
    table = aggregate.aggregate_training(records(), ROWS, job_reasons=reasons)
    assert all([c.repeat for c in cell.contaminated] == [1] for cell in table)


def test_cells_of_the_same_jobs_pair_job_by_job_across_thread_counts_and_other_jobs_do_not() -> None:
    # Every job ran at its own machine speed (1.0, 1.3, 0.8), shared by every cell it timed, both thread counts.
    drift = (1.0, 1.3, 0.8)
    drifting = [
        training_record(batch_size=b, threads=t, repeat=r, epoch_s=s * drift[r], rows=ROWS)
        for (b, t), runs in EPOCHS.items()
        for r, s in enumerate(runs)
    ]
    cells = {(c.batch_size, c.threads): c for c in aggregate.aggregate_training(drifting, ROWS)}
    assert {c.jobs for c in cells.values()} == {("rep0", "rep1", "rep2")}
    paired = decision_intervals.cell_ratio(cells[(32, 1)], cells[(512, 1)], 0.95)
    threads = decision_intervals.cell_ratio(cells[(512, 2)], cells[(512, 1)], 0.95)
    assert paired.method == threads.method == same_jobs.ALONE
    # the drift cancels in each job's ratio, the thread tie's too: both intervals are narrow
    assert paired.high / paired.low < 1.15 and threads.high / threads.low < 1.15
    # cells of other jobs (a run before training-job 14: a job a thread count) are Welch: the drift stays in
    apart = replaced(cells[(512, 2)], jobs=("t2.rep0", "t2.rep1", "t2.rep2"))
    across = decision_intervals.cell_ratio(apart, cells[(512, 1)], 0.95)
    assert across.method == job_intervals.WELCH and across.high / across.low > 2
    scaling = decision_intervals.step_scaling(list(cells.values()))
    assert scaling is not None and scaling.step_time_ratio.method == same_jobs.ALONE
    # a cell that lost a job to a non-finite run pairs over the jobs both kept
    lost = [r for r in drifting if (r.batch_size, r.threads, r.repeat) != (512, 1, 0)]
    two = next(c for c in aggregate.aggregate_training(lost, ROWS) if (c.batch_size, c.threads) == (512, 1))
    assert two.jobs == ("rep1", "rep2")
    kept = decision_intervals.cell_ratio(cells[(32, 1)], two, 0.95)
    assert (kept.method, kept.jobs) == (same_jobs.ALONE, 2)


def test_the_fastest_configuration_and_its_ties_name_their_thread_counts() -> None:
    table = aggregate.aggregate_training(records(), ROWS)
    fastest = min(table, key=lambda c: c.epoch_s.point)
    assert (fastest.batch_size, fastest.threads) == (512, 2)
    ties = decision_intervals.fastest_ties(table, fastest, 0.6, NoiseRules())
    assert {(t.batch_size, t.threads) for t in ties} == {(512, 1)}  # 1.5× inside a ±60 % floor
    none = decision_intervals.fastest_ties(table, fastest, 0.01, NoiseRules())
    assert none == ()  # 1.5× with an interval far from 1: measurably slower


def test_the_step_growth_is_measured_at_the_fastest_cells_thread_count() -> None:
    table = aggregate.aggregate_training(records(), ROWS)
    scaling = decision_intervals.step_scaling(table)
    assert scaling is not None and scaling.threads == 2
    # B=32 at 2 threads: ~0.104 s over 256 steps; B=512 at 2 threads: ~0.020 s over 16 steps (each the
    # geometric mean of its jobs' medians)
    small, large = (statistics.geometric_mean(EPOCHS[key]) for key in ((32, 2), (512, 2)))
    assert scaling.step_time_ratio.point == pytest.approx((large / 16) / (small / 256), rel=1e-9)


def test_exercise2_keeps_the_textbook_shape_at_the_first_thread_count() -> None:
    rows = aggregate.exercise2_json(aggregate.aggregate_training(records(), ROWS), loader="fastpath")
    assert [row["batch_size"] for row in rows] == [32, 512]
    assert rows[1]["epoch_s_median"] == 0.030


def test_one_thread_count_is_a_list_of_one() -> None:
    config = {"timing": {"threads": 2}}
    normalize_config(config)
    assert config["timing"]["threads"] == [2]


def test_a_jobs_own_threads_do_not_count_as_a_rising_load() -> None:
    one = training_record(
        batch_size=32, loader="fastpath", threads=1, loadavg_before=(0.5, 0.4, 0.3), loadavg_after=(1.7, 0.4, 0.3)
    )
    two = training_record(
        batch_size=32, loader="fastpath", threads=2, loadavg_before=(0.5, 0.4, 0.3), loadavg_after=(1.7, 0.4, 0.3)
    )
    assert stats.contamination(one, NoiseRules()) == ["1-min load average rose by 1.20 (> 0.5)"]
    assert stats.contamination(two, NoiseRules()) == []  # up to 0.5 + 1 for its second thread


def test_the_cpu_sentinel_runs_on_one_thread_whatever_the_jobs_count(monkeypatch) -> None:
    import torch

    from accel_choice.measure.sentinel import Sentinel

    seen: list[int] = []
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        sentinel = Sentinel(torch.device("cpu"))
        monkeypatch.setattr(sentinel, "_run", lambda iterations: seen.append(torch.get_num_threads()))
        sentinel.tick()
        assert seen == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def _benchmark(name: str) -> object:
    """Load benchmarks/`name`.py as a module (the folder is no package)."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, script)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _benchmark_in_process(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, list[list[str]]]:
    """Load benchmarks/`name`.py; its worker processes then run here, through the same command line and main().

    The code is the same, without an interpreter importing torch per worker (about 5 s of CPU each on 2 cores).
    Return the module and the list each worker's arguments are appended to (a prefix such as `setarch -R` dropped)."""
    import contextlib
    import io
    import subprocess
    import sys

    bench = _benchmark(name)
    workers: list[list[str]] = []

    def in_process(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
        start = command.index(sys.executable)
        assert command[start + 1] == bench.__file__, command
        workers.append(command[start + 2 :])
        printed = io.StringIO()
        with monkeypatch.context() as m, contextlib.redirect_stdout(printed):
            m.setattr(sys, "argv", command[start + 1 :])
            bench.main()
        return subprocess.CompletedProcess(command, 0, printed.getvalue(), "")

    monkeypatch.setattr(bench.subprocess, "run", in_process)
    return bench, workers


def test_the_thread_switch_benchmark_runs_both_designs_end_to_end(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], restore_logging_and_threads: None
) -> None:
    """benchmarks/thread_switch.py, at its smallest: the table of each design, a verdict line each."""
    import sys

    bench, workers = _benchmark_in_process("thread_switch", monkeypatch)
    tiny = ["--repeats", "1", "--epochs", "2", "--warmup", "2", "--batch-sizes", "512"]
    for design, started in (([], 3), (["--within"], 4)):
        workers.clear()
        monkeypatch.setattr(sys, "argv", [bench.__file__, *design, *tiny])
        bench.main()
        shown = capsys.readouterr().out
        assert len(workers) == started and {w[0] for w in workers} == {"--within-worker" if design else "--worker"}
        assert "| 1 | 512 |" in shown and "| 2 | 512 |" in shown, shown
        assert "switching threads inside a process: " in shown


def test_the_job_effect_benchmark_runs_every_arm_end_to_end(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], restore_logging_and_threads: None
) -> None:
    """benchmarks/job_effect.py, at its smallest: four arms a repeat, their spreads, the split, the correlation."""
    import sys

    bench, workers = _benchmark_in_process("job_effect", monkeypatch)
    monkeypatch.setattr(sys, "argv", [bench.__file__, "--repeats", "2", "--epochs", "2", "--warmup", "2"])
    bench.main()
    shown = capsys.readouterr().out
    assert len(workers) == 8 and {w[0] for w in workers} == {"--worker"}
    for arm in bench.ARMS:
        assert f"| {arm} | 32 | 2 |" in shown and f"| {arm} | 512 | 2 |" in shown, shown
    assert "correlation of the two cells' log medians across all 8 processes" in shown


def test_the_job_effect_benchmark_reads_the_reference_steps_threads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], restore_logging_and_threads: None
) -> None:
    """--reference-threads: one worker a thread count; at 1 thread no other OS thread of the process works."""
    import sys

    bench, workers = _benchmark_in_process("job_effect", monkeypatch)
    monkeypatch.setattr(sys, "argv", [bench.__file__, "--reference-threads", "--passes", "3"])
    bench.main()
    rows = [line for line in capsys.readouterr().out.splitlines() if line[:4] in ("| 1 ", "| 2 ")]
    assert [w[:2] for w in workers] == [["--reference-worker", "1"], ["--reference-worker", "2"]]
    for threads, row in zip((1, 2), rows):
        cells = [float(cell) for cell in row.strip("| ").split(" | ")]
        assert cells[0] == threads and cells[1] > 0 and cells[2] > 0 and cells[3] >= 0 and cells[4] > 0, row


def test_the_job_effect_summary_splits_drift_from_the_process() -> None:
    """A shift every process of a repeat shares is drift; a process's own deviation is inside the repeat."""
    import math

    bench = _benchmark("job_effect")
    shifts = (-0.1, 0.0, 0.1)  # per repeat, shared by its four processes
    drift_only = {arm: [[0.1 * math.exp(s), 0.01 * math.exp(s)] for s in shifts] for arm in bench.ARMS}
    lines = bench.summary(drift_only)
    assert "| 32 | 10.0% | 0.0% |" in lines and "| 512 | 10.0% | 0.0% |" in lines, lines
    assert "| default | 32 | 3 | 100.00 | 10.0% |" in lines, lines
    # Each process off its repeat's mean by its own amount, the same in both repeats: no drift, all inside.
    own = dict(zip(bench.ARMS, ([[0.1 * math.exp(d), 0.01]] * 2 for d in (0.1, -0.1, 0.05, -0.05))))
    lines = bench.summary(own)
    assert "| 512 | 0.0% | 0.0% |" in lines, lines
    assert [line for line in lines if line.startswith("| 32 |")] == ["| 32 | 0.0% | 9.1% |"], lines


def test_one_cpu_job_times_every_thread_count_each_epoch_at_its_own(monkeypatch) -> None:
    """A CPU job (training-job 14) sets torch's threads before each variant's warm-up and epoch, runs the reference
    step and the sentinel on one thread, switches once a round, and leaves torch at the job's own count."""
    import torch

    from accel_choice.measure import reference, steps, training
    from accel_choice.records.model import ModelSpec

    generator = torch.Generator().manual_seed(3)
    x, y = torch.randn(64, 5, generator=generator), (torch.rand(64, generator=generator) > 0.5).float()
    variants = [v for t in (1, 2) for b in (16, 32) for v in steps.cpu_variants(["fastpath"], batch_size=b, threads=t)]
    seen: list[tuple[int, int]] = []
    real = training.time_epoch

    def noted(prepared):
        seen.append((prepared.variant.threads, torch.get_num_threads()))
        return real(prepared)

    class Noted(reference.ReferenceStep):
        def _run(self) -> None:
            seen.append((0, torch.get_num_threads()))
            super()._run()

    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        monkeypatch.setattr(training, "time_epoch", noted)
        made, _ = training.measure_training_job(
            x,
            y,
            variants,
            repeat=0,
            seed=3,
            spec=ModelSpec(hidden=4, lr=1e-3),
            warmup_steps=1,
            epochs=2,
            reference_step=(step := Noted()),
        )
        assert torch.get_num_threads() == 3  # the job's own count again
    finally:
        torch.set_num_threads(before)
    epochs = [(wanted, ran) for wanted, ran in seen if wanted]  # timed, and untimed ones settling a switch
    assert all(wanted == ran for wanted, ran in epochs) and len(epochs) >= 2 * len(variants) + 3
    assert {ran for wanted, ran in seen if not wanted} == {1} and step.readings().threads == 1
    # rounds run 1 1 2 2, then 2 2 1 1: one switch a round, none between rounds
    counts = [wanted for wanted, _ in epochs]
    assert [c for k, c in enumerate(counts) if k == 0 or c != counts[k - 1]] == [1, 2, 1]
    assert sorted({(r.threads, r.batch_size) for r in made}) == [(1, 16), (1, 32), (2, 16), (2, 32)]


def test_a_switch_of_thread_count_is_settled_by_untimed_work_and_a_count_is_at_least_one() -> None:
    import torch

    from accel_choice.measure.threads import at_threads, switch_to, use_threads

    with pytest.raises(ValueError, match="at least one thread, got 0"):
        use_threads(0)
    before = torch.get_num_threads()
    with at_threads(before + 1):
        assert torch.get_num_threads() == before + 1
        ran: list[int] = []
        assert switch_to(before + 1, lambda: ran.append(torch.get_num_threads())) == 0 and ran == []  # no switch
        assert switch_to(before, lambda: ran.append(torch.get_num_threads()), seconds=0.0) == 1  # once at least
        assert ran == [before]
        assert switch_to(before + 1, lambda: ran.append(torch.get_num_threads()), seconds=0.02) >= 1
        assert ran[1:] and set(ran[1:]) == {before + 1}
    assert torch.get_num_threads() == before


def test_two_cpu_jobs_of_one_name_are_refused_not_paired() -> None:
    """Files of a run before training-job 14 (t1.rep0, t2.rep0) name one job alike now: aggregating them stops."""
    from builders_training import environment
    from builders_planner import sentinel_readings

    from accel_choice.records.training_job import TrainingJob

    jobs = [
        TrainingJob(
            records=tuple(r for r in records() if (r.threads, r.repeat) == (t, 0)),
            wall_interval=(0.0, 100.0),
            environment=environment(),
            sentinel=sentinel_readings(),
        )
        for t in (1, 2)
    ]
    with pytest.raises(ValueError, match="2 training jobs share the name\\(s\\) rep0: CPU jobs of a run before"):
        aggregate.training_table(jobs, ROWS, NoiseRules(), environment(), "cpu")


def test_switch_position_finds_a_cost_left_behind_by_the_other_thread_count(tmp_path, capsys) -> None:
    """benchmarks/switch_position.py, whose real-run figures docs/statistics.md quotes: 1-thread cells planted 10 %
    slower in the rounds where they follow the 2-thread block (backward rounds) read 1.10, job by job too."""
    from builders_planner import sentinel_readings
    from builders_training import environment

    from accel_choice.io import atomic, paths
    from accel_choice.records.training_job import TrainingJob

    module = _benchmark("switch_position")
    wobble = (1.0, 1.02, 0.99, 1.01, 0.98, 1.03)
    for repeat in range(6):
        forward = module.forward_rounds(repeat, 6)
        made = tuple(
            training_record(
                batch_size=b,
                threads=t,
                repeat=repeat,
                epoch_s_each=tuple(
                    0.1 * wobble[(k + repeat + b) % 6] * (1.1 if t == 1 and not forward[k] else 1.0) for k in range(6)
                ),
                rows=ROWS,
            )
            for t in (1, 2)
            for b in (32, 512)
        )
        job = TrainingJob(
            records=made, wall_interval=(0.0, 100.0), environment=environment(), sentinel=sentinel_readings()
        )
        atomic.write_record(tmp_path / "results" / paths.training_record("cpu", f"rep{repeat}"), job)
    assert module.main([str(tmp_path / "results")]) == 0
    shown = capsys.readouterr().out
    row = next(line for line in shown.splitlines() if line.startswith("| 1 over 2"))
    assert abs(float(row.split("|")[2]) - 1.1) < 0.03 and "6 jobs" in row
    assert "One thread count's block against the other's, over jobs: sd " in shown and "(5 df)" in shown
    observed, cells, df = module.block_shift([module.read_jobs(tmp_path / "results")])
    assert df == 5 and observed >= 0 and cells >= 0
    assert module.main([str(tmp_path / "none")]) == 1  # no job of two thread counts: nothing to test


def test_a_one_thread_cell_may_see_the_load_its_own_jobs_two_thread_block_raised() -> None:
    """A CPU job times every thread count, so each record's load window spans the whole job: the load average
    may rise by its largest count's allowance (aggregate.loadavg_rise + threads - 1), not its own count's."""
    rise = {"loadavg_before": (0.3, 0.3, 0.3), "loadavg_after": (1.2, 0.6, 0.4)}  # 0.9: over 0.5, under 1.5
    both = [training_record(batch_size=32, threads=t, repeat=r, rows=ROWS, **rise) for t in (1, 2) for r in range(3)]
    alone = [r for r in both if r.threads == 1]
    assert not any(c.contaminated for c in aggregate.aggregate_training(both, ROWS))
    (cell,) = aggregate.aggregate_training(alone, ROWS)
    assert [c.repeat for c in cell.contaminated] == [0, 1, 2]
    assert "1-min load average rose by 0.90 (> 0.5)" in cell.contaminated[0].reasons
    assert stats.job_warnings(both[:1] + both[3:4], None, NoiseRules()) == []  # a job's log: the same allowance
