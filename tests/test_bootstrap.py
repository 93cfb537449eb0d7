"""The two-level percentile bootstrap (analyze.bootstrap): checked against scipy's one-level
bootstrap, its coverage on known distributions, the paired ratio, and the verdicts built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accel_choice.analyze import bootstrap, job_intervals
from accel_choice.records.estimate import Estimate

# --- one level: the same thing as scipy.stats.bootstrap ---------------------------------------


@pytest.mark.parametrize(
    "sample",
    [
        np.random.default_rng(1).normal(10.0, 2.0, 150),
        np.random.default_rng(2).exponential(3.0, 150),
        np.random.default_rng(3).lognormal(0.0, 1.0, 150),
    ],
    ids=["normal", "exponential", "lognormal"],
)
def test_one_job_matches_scipy_percentile_bootstrap(sample):
    """With one job the resampler is the ordinary bootstrap: its bounds agree with scipy's
    percentile interval within Monte-Carlo error (2 % of the data's IQR, 10 000 resamples each)."""
    mine = bootstrap.median_interval([sample], level=0.95, resamples=10_000, seed=5)
    theirs = stats.bootstrap(
        (sample,),
        np.median,
        method="percentile",
        confidence_level=0.95,
        n_resamples=10_000,
        rng=np.random.default_rng(6),
    ).confidence_interval
    tolerance = 0.02 * stats.iqr(sample)
    assert mine.point == np.median(sample)
    assert mine.low == pytest.approx(theirs.low, abs=tolerance)
    assert mine.high == pytest.approx(theirs.high, abs=tolerance)
    assert mine.jobs == 1
    # Not a degenerate interval that would pass by being tiny next to the tolerance.
    assert mine.high - mine.low > 5 * tolerance


# --- coverage on known distributions ------------------------------------------------------


@pytest.mark.parametrize(
    ("draw", "true_median"),
    [
        (lambda rng: rng.exponential(2.0, 40), 2.0 * math.log(2)),
        (lambda rng: rng.normal(5.0, 1.5, 40), 5.0),
    ],
    ids=["exponential", "normal"],
)
def test_interval_covers_the_true_median_about_95_percent_of_the_time(draw, true_median):
    """150 seeded samples: the 95 % interval holds the distribution's median in a plausible share."""
    covered = 0
    for seed in range(150):
        estimate = bootstrap.median_interval([draw(np.random.default_rng(seed))], resamples=600, seed=seed)
        covered += estimate.low <= true_median <= estimate.high
    assert 0.88 <= covered / 150 <= 0.99


def _naive_interval(groups, rng, resamples=600, level=0.95):
    """The one-level bootstrap that pools every epoch and forgets which job it came from."""
    pooled = np.concatenate(groups)
    medians = np.median(pooled[rng.integers(0, len(pooled), size=(resamples, len(pooled)))], axis=1)
    tail = (1 - level) / 2
    return np.quantile(medians, [tail, 1 - tail])


def test_two_level_interval_covers_a_between_job_effect_that_pooling_misses():
    """Job means ~ N(mu, tau), epochs ~ N(job mean, sigma): resampling jobs covers mu near 95 %;
    pooling all epochs as if independent is far too narrow and under-covers."""
    mu, tau, sigma, jobs, epochs = 5.0, 1.0, 1.0, 10, 10
    two_level = naive = 0
    for seed in range(150):
        rng = np.random.default_rng(1000 + seed)
        groups = [rng.normal(mean, sigma, epochs) for mean in rng.normal(mu, tau, jobs)]
        estimate = bootstrap.median_interval(groups, resamples=600, seed=seed)
        two_level += estimate.low <= mu <= estimate.high
        low, high = _naive_interval(groups, rng)
        naive += low <= mu <= high
    assert two_level / 150 >= 0.88
    assert naive / 150 <= 0.80
    assert two_level - naive >= 25


def test_jobs_of_unequal_length_contribute_only_their_own_epochs():
    """Padding of a short job never enters a resample: jobs [1]*5 and [2] give medians 1 or 2 only
    (2 only when both draws are the short job, a quarter of the time)."""
    medians = bootstrap.resampled_medians([[1.0] * 5, [2.0]], resamples=4000, seed=3)
    assert set(np.unique(medians)) <= {1.0, 2.0}
    assert np.mean(medians == 2.0) == pytest.approx(0.25, abs=0.03)


# --- ratios ------------------------------------------------------------------------------


def test_paired_ratio_of_an_exact_multiple_has_no_width():
    """b = 1.5·a epoch by epoch: every paired resample gives 1.5, so the interval is the point."""
    rng = np.random.default_rng(4)
    a = [rng.lognormal(0.0, 0.3, 6) for _ in range(5)]
    b = [1.5 * job for job in a]
    estimate = bootstrap.ratio_interval(a, b, paired=True, resamples=2000, seed=1)
    assert estimate.point == pytest.approx(1.5, rel=1e-12)
    assert estimate.low == pytest.approx(1.5, rel=1e-12)
    assert estimate.high == pytest.approx(1.5, rel=1e-12)
    assert estimate.jobs == 5


def test_unpaired_ratio_of_one_distribution_usually_includes_one():
    """Two samples of the same distribution: the B/A interval holds 1 in the vast majority of seeds."""
    holds = 0
    for seed in range(100):
        rng = np.random.default_rng(seed)
        a = [rng.lognormal(0.0, 0.2, 8) for _ in range(5)]
        b = [rng.lognormal(0.0, 0.2, 8) for _ in range(5)]
        estimate = bootstrap.ratio_interval(a, b, resamples=600, seed=seed)
        assert estimate.low <= estimate.point <= estimate.high
        holds += estimate.low <= 1.0 <= estimate.high
    assert holds >= 90


def test_pairing_cancels_a_drift_both_sides_shared():
    """Each job's machine speed multiplies both sides: the paired interval keeps the drift out and is
    far narrower than the unpaired one, and both hold the true ratio 1.2."""
    rng = np.random.default_rng(7)
    factors = rng.lognormal(0.0, 0.3, 6)
    a = [f * rng.normal(1.0, 0.01, 8) for f in factors]
    b = [f * 1.2 * rng.normal(1.0, 0.01, 8) for f in factors]
    paired = bootstrap.ratio_interval(a, b, paired=True, seed=1)
    unpaired = bootstrap.ratio_interval(a, b, paired=False, seed=1)
    assert paired.point == unpaired.point
    assert paired.low <= 1.2 <= paired.high
    assert unpaired.low <= 1.2 <= unpaired.high
    assert (paired.high - paired.low) < 0.2 * (unpaired.high - unpaired.low)


def test_paired_ratio_refuses_different_shapes():
    """Pairing needs the same jobs and epoch counts on both sides."""
    assert not job_intervals.can_pair([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="paired"):
        bootstrap.ratio_interval([[1.0, 2.0], [3.0]], [[1.0, 2.0], [3.0, 4.0]], paired=True)
    with pytest.raises(ValueError, match="paired"):
        bootstrap.ratio_interval([[1.0, 2.0]], [[1.0, 2.0], [3.0, 4.0]], paired=True)


# --- verdicts ----------------------------------------------------------------------------


def _ratio(low: float, high: float, value: float | None = None, jobs: int = 3) -> Estimate:
    point = (low + high) / 2 if value is None else value
    return Estimate(point=point, low=low, high=high, level=0.95, method="test", jobs=jobs)


@pytest.mark.parametrize(
    ("low", "high", "floor", "expected"),
    [
        (0.80, 0.90, 0.0, "b_faster"),
        (0.80, 0.94, 0.05, "b_faster"),  # wholly below 1/1.05 = 0.952
        (0.90, 0.96, 0.05, "no_difference"),  # reaches into the floor band
        (1.10, 1.30, 0.0, "a_faster"),
        (1.06, 1.30, 0.05, "a_faster"),
        (1.03, 1.30, 0.05, "no_difference"),  # starts inside 1 + floor
        (0.90, 1.10, 0.0, "no_difference"),  # straddles 1
        (0.97, 0.99, 0.05, "no_difference"),  # clear of 1 but inside the drift
    ],
)
def test_outcome_needs_the_whole_interval_outside_the_noise_floor(low, high, floor, expected):
    """A difference counts only when the interval lies wholly outside 1 ± floor."""
    assert job_intervals.outcome(_ratio(low, high), floor) == expected


def test_repeats_to_settle_grows_with_width_and_nearness():
    """The 1/√jobs rule: wider interval or a value nearer the threshold needs more jobs."""
    # half-width 1.5, distance 1 from the threshold: 5 × 1.5² = 11.25 → 12 jobs.
    assert bootstrap.repeats_to_settle(_ratio(0.5, 3.5, value=2.0, jobs=5), 1.0) == 12
    narrow = bootstrap.repeats_to_settle(_ratio(0.7, 1.7, value=1.2, jobs=3), 1.0)
    wide = bootstrap.repeats_to_settle(_ratio(0.5, 1.9, value=1.2, jobs=3), 1.0)
    nearer = bootstrap.repeats_to_settle(_ratio(0.6, 1.6, value=1.1, jobs=3), 1.0)
    assert 3 < narrow < wide
    assert narrow < nearer


def test_repeats_to_settle_when_settled_or_at_the_threshold():
    """Already clear of the threshold: the current job count. At the threshold: no number of jobs."""
    assert bootstrap.repeats_to_settle(_ratio(1.1, 1.3, value=1.2, jobs=4), 1.0) == 4
    assert bootstrap.repeats_to_settle(_ratio(0.8, 1.2, value=1.0, jobs=4), 1.0) is None


def test_spread_floor():
    """Half the central 90 % over the median; None under three values; the same for any scale."""
    assert bootstrap.spread_floor([]) is None
    assert bootstrap.spread_floor([1.0, 2.0]) is None
    # numpy's linear quantiles of 1..5: 1.2 and 4.8 around the median 3 → 1.8 / 3.
    assert bootstrap.spread_floor([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(0.6)
    # 0.9, 1.0, 1.1: quantiles 0.91 and 1.09 → 0.09 of the median, whatever the unit.
    for scale in (1.0, 0.05, 1000.0):
        assert bootstrap.spread_floor([0.9 * scale, 1.0 * scale, 1.1 * scale]) == pytest.approx(0.09)
    assert bootstrap.spread_floor([0.1, 0.5, 0.9], coverage=1.0) == pytest.approx(0.8)


# --- determinism and refusals --------------------------------------------------------------


def test_same_seed_same_interval():
    """Seeded: the same data and seed give the same interval; another seed another resample."""
    rng = np.random.default_rng(11)
    groups = [rng.exponential(1.0, 7) for _ in range(4)]
    first = bootstrap.median_interval(groups, seed=9)
    assert bootstrap.median_interval(groups, seed=9) == first
    assert bootstrap.median_interval(groups, seed=10) != first
    a, b = groups[:2], groups[2:]
    assert bootstrap.ratio_interval(a, b, paired=True, seed=2) == bootstrap.ratio_interval(a, b, paired=True, seed=2)
    assert bootstrap.ratio_interval(a, b, seed=2) == bootstrap.ratio_interval(a, b, seed=2)


@pytest.mark.parametrize(
    "groups",
    [[], [[]], [[], []], [[1.0, float("nan")]], [[1.0], [float("inf")]]],
    ids=["no-jobs", "empty-job", "empty-jobs", "nan", "inf"],
)
def test_refuses_empty_or_non_finite_measurements(groups):
    """Nothing to resample, or a value that is not a time: ValueError, not a NaN interval."""
    with pytest.raises(ValueError):
        bootstrap.median_interval(groups)


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 1.5])
def test_refuses_a_level_outside_zero_one(level):
    """The confidence level is a fraction strictly between 0 and 1."""
    with pytest.raises(ValueError, match="confidence level"):
        bootstrap.median_interval([[1.0, 2.0, 3.0]], level=level)
    with pytest.raises(ValueError, match="confidence level"):
        bootstrap.ratio_interval([[1.0, 2.0]], [[2.0, 3.0]], level=level)
