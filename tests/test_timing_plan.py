"""timing.budget_s: the stopping rule that adds CPU training jobs where the first screen is close, its record, its
words in the report, and its coverage after stopping (analyze.calibration_adaptive, benchmarks/stopping_rule.py)."""

from __future__ import annotations

import dataclasses
import subprocess
from types import SimpleNamespace
import sys
from pathlib import Path

import numpy as np
import pytest

from builders_training import estimate, training_record

from accel_choice import records
from accel_choice.analyze import aggregate, calibration_adaptive, decision_intervals, same_jobs, timing_plan, variance
from accel_choice.analyze.calibration import Design
from accel_choice.analyze.calibration_rows import Cells
from accel_choice.io import atomic, paths
from accel_choice.records.timing_plan import UNKNOWN_WIDTH, TimingPlan, width, widest_of
from accel_choice.records.training import VARIANT_KEYS, TrainingTable
from accel_choice.render import timing_plan as words

REPO = Path(__file__).resolve().parents[1]
ROWS = 8192
# Each job's machine speed, shared by the cells it timed; B=512 at 1 and 2 threads nearly tie.
SPEEDS = (1.0, 1.08, 0.95, 1.03, 0.98, 1.05)
EPOCHS = {(32, 1): 0.100, (32, 2): 0.104, (512, 1): 0.021, (512, 2): 0.020}


# Each cell's own deviation in each job, beyond the job's speed: what pairing inside a job leaves.
OWN = (0.0, 0.03, -0.02, 0.01, -0.03, 0.02)


def cells(jobs: int, spread: float = 1.0):
    """The aggregated cells of `jobs` jobs, each timing both thread counts at speed SPEEDS[j] ** spread, each cell
    off it by its own OWN[j] ** spread (shifted by the cell's place, so no two cells deviate alike)."""
    measured = [
        training_record(
            batch_size=b,
            loader="fastpath",
            threads=t,
            repeat=r,
            epoch_s=(e := s * SPEEDS[r] ** spread * (1 + OWN[(r + k) % len(OWN)]) ** spread),
            epoch_s_each=(e,) * 3,
            rows=ROWS,
        )
        for k, ((b, t), s) in enumerate(EPOCHS.items())
        for r in range(jobs)
    ]
    return aggregate.aggregate_training(measured, ROWS)


@pytest.mark.parametrize(
    ("widest", "spent", "decided"),
    [(None, 100.0, "target_met"), (0.09, 100.0, "target_met"), (0.2, 100.0, "add"), (0.2, 181.0, "budget_spent")],
)
def test_the_rule_reads_the_widest_interval_then_the_budget(widest, spent, decided) -> None:
    assert timing_plan.decide(widest, spent, 20.0, 200.0, 0.10) == decided


def test_a_round_states_the_first_screens_intervals_and_what_one_more_costs() -> None:
    table = cells(3)
    plan = timing_plan.plan_round(0, table, [10.0, 12.0, 11.0], 200.0, 0.10, None)
    fastest, ties, scaling = decision_intervals.cpu_statements(table, None)
    assert (plan.ties, plan.scaling) == (ties, scaling)  # what the verdict states, from the same function
    assert {(t.batch_size, t.threads) for t in plan.ties} == {(512, 1)}  # the thread tie: paired inside each job
    assert plan.ties[0].over_fastest.method == same_jobs.ALONE
    assert (plan.jobs, plan.spent_s, plan.round_s) == (3, 33.0, 11.0)  # one job a round, every thread count in it
    assert plan.widest == max(ties[0].over_fastest.half_width_ratio, scaling.step_time_ratio.half_width_ratio)
    assert (plan.decision, plan.next_jobs) == ("add", 4)
    assert timing_plan.plan_round(0, table, [80.0] * 3, 200.0, 0.10, None).decision == "budget_spent"
    with pytest.raises(ValueError, match="needs the wall time of at least one CPU training job"):
        timing_plan.plan_round(0, table, [], 200.0, 0.10, None)


def test_more_jobs_narrow_the_thread_tie_until_the_target_is_met() -> None:
    widths = [timing_plan.plan_round(0, cells(n), [1.0] * n, 1e6, 0.10, None).widest for n in (3, 6)]
    assert widths[1] < 0.10 < widths[0]
    assert timing_plan.plan_round(0, cells(6), [1.0] * 6, 1e6, 0.10, None).decision == "target_met"


def test_the_record_refuses_a_decision_its_figures_do_not_support(tmp_path: Path) -> None:
    plan = timing_plan.plan_round(0, cells(3), [10.0] * 3, 200.0, 0.10, None)
    path = tmp_path / "round0.json"
    atomic.write_record(path, plan)
    assert records.read(TimingPlan, path) == plan
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    for changes, said in [
        ({"widest": 0.01}, "widest"),
        ({"decision": "target_met", "next_jobs": 3}, "target"),
        ({"next_jobs": 3}, "next_jobs"),
        ({"budget_s": 10.0}, "add: 30.0 s spent"),
        ({"decision": "budget_spent", "next_jobs": 3}, "budget_spent"),
        ({"jobs_for_target": None}, "jobs_for_target"),
    ]:
        with pytest.raises(ValueError, match=said):
            TimingPlan(**{**fields, **changes})


def test_the_report_says_how_many_jobs_were_added_and_why_they_stopped() -> None:
    added = timing_plan.plan_round(0, cells(3), [10.0] * 3, 200.0, 0.10, None)
    spent = timing_plan.plan_round(1, cells(4), [10.0] * 4, 45.0, 0.01, None)
    assert spent.decision == "budget_spent"
    line = words.plan_line([added, spent])
    assert line.startswith("CPU training jobs: 4 (3 planned, 1 added). Stopped: one more round would have passed")
    assert spent.jobs_for_target > 4 and f"About {spent.jobs_for_target:,} jobs would meet it" in line
    assert timing_plan.jobs_for_target(0.2, 7, 0.1) == 28 and timing_plan.jobs_for_target(0.05, 7, 0.1) is None
    section = words.plan_section([added, spent])
    assert "| 0 | 3 | 30 | 10 | 1 |" in section and "| budget_spent |" in section
    assert words.plan_line([]) == words.plan_section([]) == ""
    met = timing_plan.plan_round(0, cells(3), [10.0] * 3, 200.0, 0.9, None)
    assert words.plan_line([met]) == (
        "CPU training jobs: 3 (3 planned, 0 added). Stopped: the ties with the fastest and the step-time growth "
        f"were all within the target (widest ±{met.widest:.1%}, target ±90%)."
    )
    # Without a plan, a first screen whose widest interval passes the target says what narrowing it costs.
    verdict = SimpleNamespace(fastest_cpu_ties=added.ties, scaling=added.scaling, trust=None)
    needed = timing_plan.jobs_for_target(added.widest, 3, 0.10)
    narrowed = timing_plan.narrowing(verdict, 0.10, cells(3), None)
    assert (narrowed.widest, narrowed.jobs, narrowed.jobs_needed, narrowed.more_s) == (added.widest, 3, needed, None)
    said = f"Widest interval ±{added.widest:.1%} (target ±10%): about {needed} jobs would narrow it"
    assert words.budget_hint(narrowed) == f"{said} (`timing.budget_s`; docs/statistics.md)."
    walls = SimpleNamespace(rules=[SimpleNamespace(rule="time_cpu_training", process_wall_median_s=10.0)])
    narrowed = timing_plan.narrowing(verdict, 0.10, cells(3), walls)
    assert narrowed.more_s == (needed - 3) * 10  # 10 s a job, every thread count in it
    assert f"(`timing.budget_s`, about {(needed - 3) * 10:,} s more;" in words.budget_hint(narrowed)
    assert timing_plan.narrowing(verdict, added.widest, cells(3), None) is None  # within the target
    contaminated = SimpleNamespace(**{**vars(verdict), "trust": SimpleNamespace(contaminated=True)})
    assert timing_plan.narrowing(contaminated, 0.10, cells(3), None) is None  # measured again, not extended
    assert words.budget_hint(None) == ""


def test_the_stopping_rule_keeps_its_coverage_and_spends_jobs_only_while_needed() -> None:
    design = Design(jobs=3, sigma_job=0.035, epochs=5, sigma_epoch=0.08, sigma_interaction=0.016, sigma_round=0.03)
    rates = calibration_adaptive.adaptive_rates(design, draws=40, cells=Cells(unlike=2.0), most=8)
    assert rates.coverage >= 0.90 and rates.threads_coverage >= 0.85
    assert 3 < rates.mean_jobs < 8 and rates.met > 0.5
    never = calibration_adaptive.adaptive_rates(design, draws=5, most=3)
    assert never.mean_jobs == 3 and never.coverage == never.coverage_start == never.coverage_most
    with pytest.raises(ValueError, match="start 4 and most 3"):
        calibration_adaptive.adaptive_rates(design, draws=1, start=4, most=3)


@pytest.mark.parametrize(("select", "shared"), [(False, False), (True, False), (False, True), (True, True)])
def test_the_harness_statements_are_the_first_screens_shapes(select: bool, shared: bool) -> None:
    rng = np.random.default_rng(0)
    run = [np.exp(rng.normal(0.0, 0.05, (4, 10, 3))) for _ in range(2)]
    said = calibration_adaptive.statements(run, 4, select, shared)
    assert len(said.ratios) == 19 and said.twin in said.ratios  # every other cell against the fastest, the twin too
    # one job times both thread counts: the thread tie pairs too, its spread borrowed from both groups
    assert said.twin.method == same_jobs.METHOD if shared else said.twin.method.startswith("Welch")
    assert said.growth.method == same_jobs.METHOD
    assert said.twin_cell == (1 - said.fastest[0], said.fastest[1])
    assert (said.fastest == (0, 0)) != select or said.fastest == (0, 0)
    if select:  # the fastest has the lowest point, its geometric mean of job medians, as the report's
        points = {(t, v): np.mean(np.log(np.median(run[t][:, v], axis=1))) for t in range(2) for v in range(10)}
        assert points[said.fastest] == min(points.values())
        # Welch, on the job medians, agrees; a paired ratio, round by round, may read a little below 1
        assert shared or all(r.point >= 1 for r, c in zip(said.ratios, said.others) if c[0] != said.fastest[0])
    stated = calibration_adaptive.stated(said.ratios, said.growth)
    assert stated[-1] == said.growth and stated.count(said.growth) == 1  # the growth, stated whatever it says, once
    assert all(r.low <= 1 for r in stated[:-1])  # the ties: not measurably slower than the fastest at floor 0
    assert all(r.low > 1 for r in said.ratios if r not in stated)
    assert len(calibration_adaptive.stated(said.ratios, said.growth, floor=0.5)) >= 19  # a wide floor ties every cell


def test_the_harness_counts_coverage_against_true_times_that_differ() -> None:
    design = Design(jobs=3, sigma_job=0.035, epochs=5, sigma_epoch=0.08, sigma_interaction=0.016, sigma_round=0.03)
    truths = np.array([np.geomspace(10.0, 1.0, 10), np.geomspace(12.0, 1.0, 10)])  # the last cells tie, the rest far
    rates = calibration_adaptive.adaptive_rates(design, draws=30, most=5, select=True, truths=truths)
    assert rates.coverage >= 0.85 and rates.threads_coverage >= 0.8 and rates.growth_coverage >= 0.85
    wrong = calibration_adaptive.adaptive_rates(design, draws=10, most=3, truths=truths * np.array([[1.0], [2.0]]))
    # a cell twice as slow is held at 2, not 1: the truths reach the check (a paired interval at 2 never holds 1)
    assert wrong.threads_coverage >= 0.8


def test_an_interval_without_spread_is_never_narrow_enough() -> None:
    alone = estimate(0.02, 0.02, 0.02, jobs=1)
    assert width(alone) == UNKNOWN_WIDTH and widest_of([alone, estimate(1.0, 0.99, 1.01)]) == UNKNOWN_WIDTH
    assert timing_plan.decide(widest_of([alone]), 10.0, 1.0, 100.0, 0.10) == "add"
    assert widest_of([]) is None


def test_stopping_rule_prints_its_table_from_shipped_components() -> None:
    """benchmarks/stopping_rule.py, whose figures docs/statistics.md quotes, at a few draws."""
    components = REPO / "benchmarks" / "components" / "r10-r10b.json"
    shown = subprocess.run(
        [sys.executable, "benchmarks/stopping_rule.py", "--components", str(components), "--draws", "3", "--most", "4"]
        + ["--unlike", "1", "--noisier", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| 4 | alike | ×1 |" in shown and "3 runs a row" in shown


def test_stopping_rule_takes_true_times_from_a_runs_cpu_table(tmp_path: Path) -> None:
    """benchmarks/stopping_rule.py --truths: each cell's point over the fastest's, thread counts × (batch size, loader)."""
    import importlib.util

    from test_compare import make_results

    spec = importlib.util.spec_from_file_location("stopping_rule", REPO / "benchmarks" / "stopping_rule.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    folder = make_results(tmp_path, "a", batch_sizes=(32, 64, 512))
    truths = module.run_truths(folder)
    assert truths.shape == (1, 6) and truths.min() == 1.0 and truths[0, 0] > truths[0, -1]
    assert (module.run_truths(folder, tie=True) == truths).all()  # one thread count: no twin to make as fast
    # each cell's truth stands where the components' blocks hold that cell (variance.job_tables' order)
    cells = [c for c in records.read(TrainingTable, folder / paths.CPU_TABLE).table if c.device == "cpu"]
    keys = variance.variant_order(c.key for c in cells)
    points = {c.key: c.epoch_s.point for c in cells}
    assert truths[0].tolist() == pytest.approx([points[k] / min(points.values()) for k in keys])
    assert [k[VARIANT_KEYS.index("batch_size")] for k in keys[:3]] == [32, 512, 64]  # by repr, not by batch size


def test_job_tables_hold_the_variants_in_variant_order() -> None:
    """analyze.variance.job_tables: the blocks the harness resamples stand in `variant_order`, as the truths do."""
    made = [
        training_record(
            batch_size=size, loader=loader, repeat=repeat, epoch_s=size / 1e4, epoch_s_each=(size / 1e4,) * 3
        )
        for repeat in range(2)
        for loader in ("fastpath", "dataloader")
        for size in (512, 32, 64)
    ]
    (table,) = variance.job_tables(made)
    keys = variance.variant_order({r.key for r in made})
    assert table[0, :, 0].tolist() == pytest.approx([k[VARIANT_KEYS.index("batch_size")] / 1e4 for k in keys])


def test_an_archived_plan_of_one_job_a_thread_count_is_read_and_a_damaged_one_is_named(tmp_path: Path) -> None:
    """timing-plan 1 added a job a thread count a round: its `jobs` counted repeats, its `round_s` one round, as
    version 2 counts them with one job a repeat; only `thread_counts` goes (records.upgrades)."""
    plan = timing_plan.plan_round(0, cells(3), [10.0] * 3, 200.0, 0.10, None)
    older = records.to_json(plan) | {"schema_version": 1, "thread_counts": 2}
    assert records.from_json(TimingPlan, older, "round0.json") == plan
    with pytest.raises(records.RecordError, match="thread_counts: a version 1 timing plan names how many"):
        records.from_json(TimingPlan, {k: v for k, v in older.items() if k != "thread_counts"}, "round0.json")


def test_shared_jobs_share_each_jobs_speed_and_a_block_shift_moves_one_thread_count_alone() -> None:
    """calibration_rows._tables: one job for both thread counts shares its speed across the tables; `block` adds
    a shift of one table's whole block in a job, which the tables' job-by-job difference then carries."""
    from accel_choice.analyze.calibration_rows import _tables

    design = Design(jobs=400, sigma_job=0.2, epochs=3, sigma_epoch=0.0)
    sigmas = np.zeros((2, 4))

    def difference_sd(block: float) -> float:
        a, b = _tables(np.random.default_rng(1), design, 4, 2, sigmas, shared=True, block=block)
        return float(np.std(np.log(a).mean(axis=(1, 2)) - np.log(b).mean(axis=(1, 2))))

    assert difference_sd(0.0) < 1e-9  # the job's speed cancels between its two blocks
    assert difference_sd(0.1) == pytest.approx(0.1 * np.sqrt(2), rel=0.15)
    apart = _tables(np.random.default_rng(1), design, 4, 2, sigmas, shared=False)
    assert np.std(np.log(apart[0]).mean(axis=(1, 2)) - np.log(apart[1]).mean(axis=(1, 2))) > 0.2  # jobs of their own
