"""Within-run ratios of cells timed in the same jobs (analyze.same_jobs) and the harness that draws them
(analyze.calibration_paired): the job's speed cancels, the spread is moderated, the promise holds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from accel_choice.analyze import calibration as c
from accel_choice.analyze import calibration_paired as cp
from accel_choice.analyze.calibration_rows import Cells
from accel_choice.analyze import decision_intervals, job_intervals, same_jobs
from accel_choice.analyze.stats import NoiseRules
from builders_training import training_cell

REPO = Path(__file__).resolve().parents[1]


def _medians(cells: int = 10, jobs: int = 3, noise: float = 0.03, seed: int = 5) -> np.ndarray:
    """One job group: cells of unlike sizes × jobs, every job with its own speed, each cell a little noise."""
    rng = np.random.default_rng(seed)
    sizes = np.geomspace(100, 1, cells)[:, None]
    speed = np.exp(rng.normal(0, 0.2, (1, jobs)))
    return sizes * speed * np.exp(rng.normal(0, noise, (cells, jobs)))


def test_quotients_cancel_the_jobs_own_speed():
    medians = _medians()
    faster = medians * np.array([[0.5, 1.0, 2.0]])  # every cell of job 0 twice as fast, of job 2 half
    np.testing.assert_allclose(same_jobs.quotients(faster), same_jobs.quotients(medians), atol=1e-12)


@pytest.mark.parametrize("shape", [(2, 3), (3,)])
def test_quotients_refuse_too_few_cells(shape):
    with pytest.raises(ValueError, match="at least 3 cells"):
        same_jobs.quotients(np.ones(shape))


def test_quotients_refuse_a_non_positive_time():
    medians = _medians()
    medians[1, 2] = 0.0
    with pytest.raises(ValueError, match="positive finite"):
        same_jobs.quotients(medians)


def test_a_pair_rests_on_the_degrees_of_freedom_its_group_lends():
    """Three jobs give a pair alone 2 degrees of freedom; the borrowed pair rests on more."""
    medians = _medians()
    spreads = same_jobs.fit([(list(range(10)), medians)])
    d = np.log(medians[4]) - np.log(medians[0])
    moderated = spreads.ratio(0, 4, d, 0.95)
    alone = job_intervals.ratio_interval([[x] for x in medians[0]], [[x] for x in medians[4]], paired=True)
    assert moderated.method == same_jobs.METHOD and alone.method == job_intervals.PAIRED
    assert moderated.point == pytest.approx(alone.point)
    prior = spreads.priors[0]
    assert prior is spreads.priors[4] and prior.pooled_df == 20
    # The pair's own variance (2 df) shrunk towards the sum of its cells' moderated variances, which lend
    # the prior's degrees of freedom but never more than the pair's own: the own keeps half the weight or more.
    lent = min(prior.df, 2)
    borrowed = spreads.cells[0] + spreads.cells[4]
    variance = (lent * borrowed + 2 * np.var(d, ddof=1)) / (lent + 2)
    half = job_intervals._t_quantile(0.975, lent + 2) * math.sqrt(variance / 3)
    assert math.log(moderated.high / moderated.point) == pytest.approx(half)


def test_each_job_group_has_its_own_prior():
    """Two threads on two cores spread more than one: one prior for both would shrink the noisy group's
    cells towards the quiet group's and make their intervals too narrow."""
    quiet, noisy = _medians(noise=0.01, seed=1), _medians(noise=0.08, seed=2)
    spreads = same_jobs.fit([([("t1", c) for c in range(10)], quiet), ([("t2", c) for c in range(10)], noisy)])
    assert spreads.priors[("t1", 0)] is not spreads.priors[("t2", 0)]
    assert spreads.priors[("t2", 0)].variance > 10 * spreads.priors[("t1", 0)].variance
    # One job times both thread counts: a pair across the groups borrows each cell's own moderated spread, and
    # at most the smaller prior's degrees of freedom.
    d = [0.1, 0.11, 0.12]
    across, inside = spreads.ratio(("t1", 0), ("t2", 0), d, 0.95), spreads.ratio(("t1", 0), ("t1", 1), d, 0.95)
    assert across is not None and inside is not None and across.method == inside.method == same_jobs.METHOD
    assert across.high / across.low > inside.high / inside.low  # the noisy cell's spread comes with it
    assert spreads.ratio(("t1", 0), ("t3", 0), d, 0.95) is None  # a cell of no group lends nothing


def test_a_pair_across_groups_borrows_the_blocks_shift_between_jobs():
    """One job times both thread counts; one count's whole block may run 8 % fast or slow in one job. That shift
    cancels in each cell's quotient over its own group, so only the block's variance over jobs can lend it."""
    rng = np.random.default_rng(3)
    jobs, rounds = 4, 5
    speed = np.exp(rng.normal(0, 0.2, (1, jobs, 1)))  # both groups of a job share its speed
    sizes = np.geomspace(100, 1, 10)[:, None, None]
    one = sizes * speed * np.exp(rng.normal(0, 0.01, (10, jobs, rounds)))
    shift = np.array([0.08, -0.08, 0.05, -0.04])
    two = sizes * speed * np.exp(shift[None, :, None] + rng.normal(0, 0.01, (10, jobs, rounds)))
    keys = [[(t, c) for c in range(10)] for t in (1, 2)]
    spreads = same_jobs.fit([(keys[0], one), (keys[1], two)])
    variance, df = spreads.block((1, 0), (2, 0), jobs)
    assert df == jobs - 1 and variance == pytest.approx(np.var(shift, ddof=1), rel=0.2)
    assert spreads.block((1, 0), (1, 3), jobs) is None  # one group: its level cancels in the pair
    assert spreads.block((1, 0), (2, 0), jobs + 1) is None  # other jobs than the pair's
    d = same_jobs.paired_logs(one[0], two[0])
    across = spreads.ratio((1, 0), (2, 0), d, 0.95)
    without = same_jobs.Spreads(spreads.cells, spreads.priors).ratio((1, 0), (2, 0), d, 0.95)
    # Without the block the cells' own spreads (1 %) halve the pair's variance: its shifts keep only half their weight.
    assert math.log(across.high / across.low) > 1.25 * math.log(without.high / without.low)
    assert across.low < np.exp(shift.mean()) < across.high


def test_cells_of_a_small_group_or_one_job_get_no_spread():
    spreads = same_jobs.fit([(["a", "b"], _medians(cells=2)), (list(range(10)), _medians(jobs=1))])
    assert spreads.cells == {} and spreads.priors == {}
    assert spreads.ratio("a", "b", [0.1, 0.2], 0.95) is None


def test_a_group_without_spread_lends_none():
    medians = np.geomspace(100, 1, 5)[:, None] * np.ones((5, 3))  # every job alike, to the last digit
    spreads = same_jobs.fit([(list(range(5)), medians)])
    assert spreads.ratio(0, 1, np.log(medians[1]) - np.log(medians[0]), 0.95) is None


def _cell(loader: str, batch_size: int, jobs: list[float], threads: int = 1, empty: int | None = None):
    """A cell of jobs t{threads}.rep0.. with these job medians (one epoch each); job `empty` left without one."""
    groups = tuple(() if r == empty else (t,) for r, t in enumerate(jobs))
    return training_cell(
        loader=loader,
        batch_size=batch_size,
        threads=threads,
        epoch_s=job_intervals.median_interval(groups),
        epoch_s_jobs=groups,
        eval_s_jobs=tuple((0.005,) for _ in jobs),
        startup_s_jobs=(0.0,) * len(jobs),
        repeats=len(jobs),
        jobs=tuple(f"t{threads}.rep{r}" for r in range(len(jobs))),
    )


def test_cell_ratio_moderates_cells_of_the_same_jobs_and_not_others():
    sizes = [(loader, b) for b in (32, 64, 128, 256, 512) for loader in ("dataloader", "fastpath")]
    medians = _medians()
    cells = [_cell(loader, b, list(medians[i])) for i, (loader, b) in enumerate(sizes)]
    other = _cell("fastpath", 512, list(medians[-1] * 1.1), threads=2)  # separate processes
    spreads = same_jobs.fit_cells([*cells, other])
    assert other.key not in spreads.cells  # one cell of its jobs: nothing to lend it
    paired = decision_intervals.cell_ratio(cells[-1], cells[0], 0.95, spreads)
    assert paired.method == same_jobs.METHOD
    assert decision_intervals.cell_ratio(cells[-1], cells[0], 0.95).method == same_jobs.ALONE
    assert decision_intervals.cell_ratio(cells[-1], other, 0.95, spreads).method == job_intervals.WELCH


def test_a_cell_that_lost_a_job_is_of_another_group_and_pairs_alone():
    """A non-finite run takes its job out of the cell's `jobs`: the cell is no longer of its neighbours'
    group, and its ratio to them is the pair's own, over the jobs both have."""
    medians = _medians()
    cells = [_cell("fastpath", b, list(medians[i])) for i, b in enumerate((32, 64, 128, 256))]
    short = _cell("dataloader", 32, list(medians[4][:2]))  # jobs t1.rep0 and t1.rep1 only
    spreads = same_jobs.fit_cells([*cells, short])
    assert set(spreads.cells) == {cell.key for cell in cells}
    assert decision_intervals.cell_ratio(cells[0], short, 0.95, spreads).method == same_jobs.ALONE
    assert decision_intervals.cell_ratio(cells[0], cells[3], 0.95, spreads).method == same_jobs.METHOD


def test_step_scaling_borrows_spread():
    medians = _medians()
    sizes = [(loader, b) for b in (32, 64, 128, 256, 512) for loader in ("dataloader", "fastpath")]
    cells = [_cell(loader, b, list(medians[i])) for i, (loader, b) in enumerate(sizes)]
    assert decision_intervals.step_scaling(cells).step_time_ratio.method == same_jobs.METHOD


def test_harness_paired_ratios_hold_their_level_and_are_narrower_than_alone():
    """The promise docs/statistics.md quotes, at a few draws: coverage near 95 % and narrower intervals
    than the pair's own paired t, also when the cells' noise differs twofold, the second thread count's
    threefold, and each job tilts over the batch sizes."""
    design = c.Design(
        jobs=3, sigma_job=0.04, epochs=10, sigma_epoch=0.08, sigma_interaction=0.02, sigma_drift=0.01, sigma_round=0.03
    )
    rates = cp.paired_rates(design, draws=150, cells=Cells(unlike=2.0, noisier=3.0), gradient=0.01)
    assert all(0.93 <= rate <= 0.995 for rate in rates.coverage) and rates.extreme >= 0.9
    assert all(0.92 <= rate <= 0.98 for rate in rates.coverage_alone)
    assert rates.half_width < rates.half_width_alone
    assert rates.within > rates.within_alone


def test_paired_widths_prints_a_runs_ratios_alone_and_borrowed(tmp_path):
    """benchmarks/paired_widths.py, whose real-run figures docs/statistics.md quotes, on a small results folder."""
    import importlib.util

    from test_compare import Draws, make_results

    spec = importlib.util.spec_from_file_location("paired_widths", REPO / "benchmarks" / "paired_widths.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = module.folder_lines(make_results(tmp_path, "a", batch_sizes=(32, 64, 512), draws=Draws(epochs=5, seed=1)))
    assert "±" in lines[0] and lines[0].count("(") == 2  # each ratio alone and borrowed
    assert len(lines) == 5 + 2  # the fastest against the 5 other cells of its jobs, the step growth, a summary
    assert all(line.count("|") == 5 for line in lines)
    assert "step-time growth (as reported)" in lines[-2] and "prior df" in lines[-1]


def test_job_time_spread_compares_the_median_with_the_trimmed_mean(tmp_path, capsys):
    """benchmarks/job_time_spread.py, whose real-run table docs/statistics.md quotes, on two small results folders."""
    import importlib.util

    from test_compare import Draws, make_results

    spec = importlib.util.spec_from_file_location("job_time_spread", REPO / "benchmarks" / "job_time_spread.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.trimmed((1.0, 100.0, 2.0, 3.0, 0.01)) == pytest.approx(math.log(6.0) / 3)  # 1, 2, 3 kept
    assert module.trimmed((1.0, 4.0)) == pytest.approx(math.log(2.0))
    folders = [
        make_results(tmp_path, name, batch_sizes=(32, 64, 512), draws=Draws(epochs=5, seed=s))
        for name, s in (("a", 1), ("b", 2))
    ]
    found = module.variances(folders[0])
    assert set(found) == {(5, "epoch_s", 1), (5, "eval_s", 1)}
    assert all(set(v) == {"median", "trimmed mean"} and min(v.values()) > 0 for v in found.values())
    assert module.main([str(f) for f in folders]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 2 + 2 and all(row.startswith("| 5 | 2 | e") for row in rows[2:])


@pytest.mark.parametrize("components", ["r10-r10b.json", "c1fe061-adc6a16.json"])
def test_the_shipped_components_draw_the_paired_table(components):
    """docs/statistics.md's harness tables are drawn from components files in the repository."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "calibration.py"),
            "--components",
            str(REPO / "benchmarks" / "components" / components),
            "--paired",
            "--jobs",
            "3",
            "--draws",
            "5",
            "--unlike",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| 3 | alike | ×1 | 0.0% |")]
    assert len(rows) == 1 and rows[0].count("|") == 13


def _rounds(cells: int = 6, jobs: int = 3, rounds: int = 10, noise: float = 0.05, seed: int = 3) -> np.ndarray:
    """One job group's times, cells × jobs × rounds: unlike sizes, each job its own speed, each epoch its noise."""
    rng = np.random.default_rng(seed)
    sizes = np.geomspace(100, 1, cells)[:, None, None]
    return sizes * np.exp(rng.normal(0, 0.2, (1, jobs, 1)) + rng.normal(0, noise, (cells, jobs, rounds)))


def test_a_rounds_shift_cancels_in_quotients_and_paired_logs():
    """A shift every cell of a round shares (the machine slower for a second) moves no quotient and no paired ratio:
    they are taken round by round. Over job medians it would leak through."""
    times = _rounds()
    shifted = times * np.exp(np.random.default_rng(9).normal(0, 0.3, (1, 3, 10)))
    np.testing.assert_allclose(same_jobs.quotients(shifted), same_jobs.quotients(times), atol=1e-12)
    np.testing.assert_allclose(
        same_jobs.paired_logs(shifted[0], shifted[4]), same_jobs.paired_logs(times[0], times[4]), atol=1e-12
    )
    medians = np.median(times, axis=2)
    medians_shifted = np.median(shifted, axis=2)
    assert not np.allclose(same_jobs.quotients(medians_shifted), same_jobs.quotients(medians), atol=1e-3)
    np.testing.assert_allclose(same_jobs.quotients(times[:, :, :1]), same_jobs.quotients(times[:, :, 0]), atol=1e-12)


def test_paired_logs_read_job_medians_where_the_rounds_differ_and_refuse_other_jobs():
    a, b = [[1.0, 2.0, 4.0], [1.0]], [[2.5, 1.9, 3.9], [2.0]]
    d = same_jobs.paired_logs(a, b)
    assert d[0] == pytest.approx(np.median(np.log([2.5, 0.95, 0.975])))  # round by round
    assert d[1] == pytest.approx(np.log(2.0))
    np.testing.assert_allclose(same_jobs.paired_logs([[1.0, 2.0]], [[3.0]]), [np.log(3.0 / 1.5)])  # medians
    with pytest.raises(ValueError, match="the same jobs"):
        same_jobs.paired_logs(a, b[:1])
    with pytest.raises(ValueError, match="positive finite"):
        same_jobs.paired_logs([[1.0]], [[0.0]])


def _round_cell(loader: str, batch_size: int, jobs: list[list[float]]):
    """A cell of jobs t1.rep0.. with these epochs, round by round."""
    groups = tuple(tuple(job) for job in jobs)
    return training_cell(
        loader=loader,
        batch_size=batch_size,
        epoch_s=job_intervals.median_interval(groups),
        epoch_s_jobs=groups,
        eval_s_jobs=tuple(tuple(0.005 for _ in job) for job in jobs),
        startup_s_jobs=(0.0,) * len(jobs),
        repeats=len(jobs),
        jobs=tuple(f"t1.rep{r}" for r in range(len(jobs))),
    )


def test_job_times_keep_rounds_where_every_job_has_as_many():
    times = _rounds(cells=3, rounds=4)
    cells = [_round_cell("fastpath", b, list(times[i])) for i, b in enumerate((32, 64, 128))]
    np.testing.assert_allclose(same_jobs.job_times(cells), times)
    short = _round_cell("dataloader", 32, [list(times[0, 0, :2]), *times[0, 1:]])
    medians = same_jobs.job_times([*cells, short])  # a job of two rounds among jobs of four: the job medians
    assert medians.shape == (4, 3)
    np.testing.assert_allclose(medians[-1], [np.median(times[0, 0, :2]), *np.median(times[0, 1:], axis=1)])


def test_a_cell_its_rounds_put_below_the_fastest_is_listed_with_the_ties():
    """The fastest is the lowest point (job medians); a paired ratio is round by round. A cell slower by its medians
    but faster in most rounds reads below 1 against the fastest: it is listed with the ties, never left out."""
    rng = np.random.default_rng(4)
    fastest = [[1.0, 2.0, 4.0] for _ in range(3)]  # each job's rounds: the machine's speed moved
    close = [[2.5, 1.9, 3.9] for _ in range(3)]  # its median 2.5 > 2.0, yet faster in two rounds of three
    cells = [_round_cell("fastpath", 512, fastest), _round_cell("dataloader", 512, close)]
    cells += [
        _round_cell("fastpath", b, [list(np.array(job) * s * np.exp(rng.normal(0, 0.02, 3))) for job in fastest])
        for b, s in ((32, 8.0), (64, 4.0), (128, 2.0))
    ]
    spreads = same_jobs.fit_cells(cells)
    ratio = decision_intervals.cell_ratio(cells[0], cells[1], 0.95, spreads)
    assert ratio.method == same_jobs.METHOD and ratio.point < 1
    ties = decision_intervals.fastest_ties(cells, cells[0], None, NoiseRules(), spreads)
    assert [(t.loader, t.batch_size) for t in ties] == [("dataloader", 512)]


def test_round_pairs_compares_rounds_with_job_medians(tmp_path, capsys):
    """benchmarks/round_pairs.py, whose real-run figure docs/statistics.md quotes, on a small results folder and a
    folder it cannot read (said, not counted)."""
    import importlib.util

    from test_compare import Draws, make_results

    spec = importlib.util.spec_from_file_location("round_pairs", REPO / "benchmarks" / "round_pairs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = make_results(tmp_path, "a", batch_sizes=(32, 64, 512), draws=Draws(epochs=5, seed=1))
    ((group, pairs, rounds, medians),) = module.group_spreads(folder)  # one thread count, one job group
    assert (group, pairs) == ("t1", 15) and rounds > 0 and medians > 0  # 6 cells: 15 pairs
    assert module.main([str(folder), str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "not read" in out and f"| {folder} | t1 | 15 |" in out
    assert out.rstrip().endswith(f"median {rounds / medians:.2f}")
