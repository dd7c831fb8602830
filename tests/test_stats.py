"""Statistics against known truth (seeded simulations) and against scipy.

Simulations are vectorised (one series per row) so that each assertion has
thousands of replicates: a margin of several standard errors, in seconds.
"""

import math

import numpy as np
import pytest
from scipy import signal, stats

from perfsnake.statistics.changepoints import change_points, steady_segment
from perfsnake.statistics.intervals import mean_interval, mean_intervals, median_interval, t_interval, t_intervals
from perfsnake.statistics.subsessions import independent_enough, lag1_autocorrelation, merge_until_independent
from perfsnake.statistics.summaries import spread_flags, summarise, trend, work_per_second
from perfsnake.statistics.tests import welch, welch_on_subsessions, welch_p_values

RNG = np.random.default_rng(20261122)


def ar1(phi: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) series with unit innovations along the last axis."""
    e = rng.normal(size=shape)
    e[..., 0] /= math.sqrt(1 - phi**2)
    return signal.lfilter([1.0], [1.0, -phi], e, axis=-1)


def coverage(x: np.ndarray, truth: float) -> float:
    lo, hi, _ = mean_intervals(x, 0.95, 0.1)
    return float(np.mean((lo <= truth) & (truth <= hi)))


def test_lag1_autocorrelation_equals_statsmodels():
    from statsmodels.tsa.stattools import acf

    for seed in range(20):
        x = np.random.default_rng(seed).normal(size=50).cumsum()
        assert lag1_autocorrelation(x) == pytest.approx(acf(x, nlags=1, fft=False)[1], abs=1e-12)
    assert math.isnan(lag1_autocorrelation(np.ones(5)))


def test_t_interval_equals_scipy():
    x = RNG.normal(10, 2, size=25)
    lo, hi = t_interval(x, 0.9)
    ref = stats.t.interval(0.9, 24, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == pytest.approx(ref)
    rows = RNG.normal(size=(3, 12))
    assert np.allclose(np.column_stack(t_intervals(rows, 0.95)), [t_interval(r, 0.95) for r in rows])


@pytest.mark.parametrize(
    "name,draw,truth",
    [
        ("normal", lambda r, n: r.normal(100.0, 15.0, size=(8000, n)), 100.0),
        ("lognormal", lambda r, n: r.lognormal(0.0, 0.25, size=(8000, n)), float(np.exp(0.25**2 / 2))),
        (
            "bimodal",
            lambda r, n: np.where(r.random((8000, n)) < 0.5, r.normal(0, 1, (8000, n)), r.normal(5, 1, (8000, n))),
            2.5,
        ),
    ],
)
def test_mean_intervals_cover_the_truth(name, draw, truth):
    # 8000 replicates: standard error 0.0024 around 0.95.
    assert 0.935 <= coverage(draw(np.random.default_rng(0), 60), truth) <= 0.965, name


def test_scalar_and_vectorised_intervals_agree():
    x = ar1(0.6, (5, 80), np.random.default_rng(2)) + 10
    lo, hi, _ = mean_intervals(x, 0.95)
    for i, row in enumerate(x):
        (a, b), *_ = mean_interval(row, 0.95)
        assert (a, b) == pytest.approx((lo[i], hi[i]))


@pytest.mark.parametrize("n,sims", [(30, 20000), (100, 8000), (400, 3000)])
def test_ar1_intervals_cover_at_the_n_people_use(n, sims):
    # AR(1) phi = 0.7: the naive t-interval covers far less; ours >= 0.93
    # (standard error at most 0.004 here).
    x = 50.0 + ar1(0.7, (sims, n), np.random.default_rng(n))
    assert coverage(x, 50.0) >= 0.93
    lo, hi = t_intervals(x, 0.95)
    assert np.mean((lo <= 50) & (hi >= 50)) < 0.85


def test_small_samples_say_the_interval_is_approximate():
    s = summarise(np.array([10.0, 11.0, 12.0, 10.5, 11.5]))
    assert s.mean_ci_note.startswith("approximate")
    assert summarise(np.random.default_rng(1).normal(10, 1, 60)).mean_ci_note == ""


def test_positive_metric_interval_never_below_zero():
    s = summarise(np.array([0.1, 5.0, 0.2, 9.0]))
    assert s.mean_ci_low == 0.0 and "truncated at 0" in s.mean_ci_note
    assert summarise(np.array([-1.0, 5.0, 0.2, 9.0])).mean_ci_low < 0  # not a positive metric


def test_merging_reduces_autocorrelation():
    x = ar1(0.7, (600,), np.random.default_rng(3))
    assert lag1_autocorrelation(x) > 0.5
    merged, size, r = merge_until_independent(x, 0.1)
    assert size > 1 and len(merged) == 600 // size
    assert independent_enough(r, len(merged), 0.1) and abs(r) < 0.5


def test_independent_data_is_not_merged():
    _, size, _ = merge_until_independent(np.random.default_rng(5).normal(size=200), 0.1)
    assert size == 1


def test_median_interval_exact_order_statistics():
    x = np.random.default_rng(11).lognormal(0, 0.5, 60)
    lo, hi, method, level = median_interval(x, 0.95)
    assert method == "order-statistic" and lo < np.median(x) < hi and 0.95 <= level < 0.98
    # the level is the binomial coverage of the chosen order statistics
    xs = np.sort(x)
    j = int(np.searchsorted(xs, lo))
    assert xs[59 - j] == hi and level == pytest.approx(
        1 - 2 * stats.binom.cdf(j, 60, 0.5)
    )  # P(x_(j+1) <= m <= x_(60-j))
    assert 1 - 2 * stats.binom.cdf(j + 1, 60, 0.5) < 0.95  # and the next narrower one falls short
    assert median_interval(np.full(10, 3.0), 0.95) == (3.0, 3.0, "degenerate", 1.0)
    assert median_interval(np.array([1.0]), 0.95)[2] == "none"


def test_median_interval_at_n_3_reports_its_real_level():
    lo, hi, method, level = median_interval(np.array([3.0, 1.0, 2.0]), 0.95)
    assert (lo, hi) == (1.0, 3.0) and level == pytest.approx(0.75) and "below the requested level" in method
    s = summarise(np.array([3.0, 1.0, 2.0]))
    assert s.median_ci_level == pytest.approx(0.75) and s.confidence == 0.95


@pytest.mark.parametrize("n", [6, 10, 25])
def test_median_interval_coverage_matches_its_level(n):
    rng = np.random.default_rng(n)
    sims = 4000
    x = rng.exponential(1.0, (sims, n))
    truth = math.log(2)
    level = median_interval(x[0], 0.95)[3]
    hits = np.mean([lo <= truth <= hi for lo, hi, *_ in (median_interval(row, 0.95) for row in x)])
    assert abs(hits - level) < 4 * math.sqrt(level * (1 - level) / sims) + 1e-9


def test_welch_equals_scipy():
    a = RNG.normal(10, 1, 20)
    b = RNG.normal(10.8, 3, 35)
    c = welch(a, b, 0.95, 0.05)
    ref = stats.ttest_ind(b, a, equal_var=False)
    assert c.welch_t == pytest.approx(ref.statistic) and c.p_value == pytest.approx(ref.pvalue)
    ci = ref.confidence_interval(0.95)
    assert (c.diff_ci_low, c.diff_ci_high) == pytest.approx((ci.low, ci.high))
    assert c.df == pytest.approx(ref.df)
    assert c.relative_difference == pytest.approx((b.mean() - a.mean()) / a.mean())
    rows_a, rows_b = RNG.normal(size=(50, 15)), RNG.normal(size=(50, 25))
    assert np.allclose(
        welch_p_values(rows_a, rows_b, correct=False), stats.ttest_ind(rows_b, rows_a, axis=1, equal_var=False).pvalue
    )


def test_welch_on_subsessions_matches_its_vectorised_form():
    a = ar1(0.5, (6, 60), np.random.default_rng(8))
    b = ar1(0.5, (6, 60), np.random.default_rng(9)) + 0.5
    p = welch_p_values(a, b)
    for i in range(6):
        comp, _ = welch_on_subsessions(a[i], b[i], 0.95, 0.05)
        assert comp.p_value == pytest.approx(p[i])
        assert (comp.diff_ci_low < 0 < comp.diff_ci_high) == (comp.p_value >= 0.05)


@pytest.mark.parametrize("phi", [0.3, 0.7, 0.9])
def test_welch_false_positive_rate_on_autocorrelated_data(phi):
    # Null campaigns of two AR(1) records at n = 30, 100, 300 (6000, 4000,
    # 2000 replicates): the rate over all of them <= 5.5 %.
    rng = np.random.default_rng(int(phi * 10))
    rejected = total = 0
    for n, sims in ((30, 6000), (100, 4000), (300, 2000)):
        p = welch_p_values(ar1(phi, (sims, n), rng), ar1(phi, (sims, n), rng))
        assert np.mean(p < 0.05) <= 0.06, (phi, n)
        rejected += int(np.sum(p < 0.05))
        total += sims
    assert rejected / total <= 0.055


def test_welch_on_independent_data_keeps_its_level_and_most_power():
    rng = np.random.default_rng(17)
    a, b = rng.normal(0, 1, (10000, 30)), rng.normal(0, 1, (10000, 30))
    assert 0.04 <= np.mean(welch_p_values(a, b) < 0.05) <= 0.056
    plain = np.mean(welch_p_values(a, b + 0.5, correct=False) < 0.05)
    ours = np.mean(welch_p_values(a, b + 0.5) < 0.05)
    # the price of valid tests on autocorrelated data: a few points of power at n = 30
    assert ours >= plain - 0.045


# ---- warm-up and cool-down ---------------------------------------------------------


def series_with_warmup(
    kind: str,
    rng: np.random.Generator,
    n: int = 300,
    warmup: int = 40,
    cooldown: int = 0,
    noise: float = 0.02,
    phi: float = 0.0,
) -> np.ndarray:
    level = np.full(n, 100.0)
    level[:warmup] *= np.linspace(0.3, 0.5, warmup)  # a warm-up ramp well below the steady level
    if cooldown:
        level[n - cooldown :] *= 0.75
    if kind == "multiplicative":
        return level * (1 + noise * rng.normal(size=n))
    if kind == "ar1":
        return level + 100 * noise * math.sqrt(1 - phi**2) * ar1(phi, (n,), rng)  # marginal sd: noise
    return level + 100 * noise * rng.normal(size=n)


def found(seg, warmup: int, cooldown: int, n: int = 300) -> bool:
    return abs(seg.start - warmup) <= max(1, 0.05 * warmup) and abs((n - seg.end) - cooldown) <= max(
        1, 0.05 * max(cooldown, 1)
    )


@pytest.mark.parametrize(
    "kind,noise,phi",
    [
        ("iid", 0.02, 0.0),
        ("multiplicative", 0.02, 0.0),
        ("multiplicative", 0.2, 0.0),
        ("ar1", 0.02, 0.5),
        ("ar1", 0.02, 0.7),
        ("ar1", 0.02, 0.9),
    ],
)
def test_warmup_of_known_length_is_found(kind, noise, phi):
    rng = np.random.default_rng(int(noise * 100 + phi * 10))
    hits = sum(found(steady_segment(series_with_warmup(kind, rng, noise=noise, phi=phi)), 40, 0) for _ in range(200))
    assert hits / 200 >= 0.90


@pytest.mark.parametrize("warmup,cooldown", [(40, 0), (25, 15), (60, 20)])
def test_cooldown_after_warmup_is_found(warmup, cooldown):
    rng = np.random.default_rng(warmup)
    hits = sum(
        found(steady_segment(series_with_warmup("iid", rng, warmup=warmup, cooldown=cooldown)), warmup, cooldown)
        for _ in range(100)
    )
    assert hits >= 95


def test_level_dependent_noise_example_from_issue_18():
    y = [30.2, 30.5, 30.2, 29.2, 30.5, 30.3, 29.7, 30.3, 30.2, 30.2, 160.1, 161.7, 157.6, 159.5, 158.5, 161.9, 160.1, 159.1,
         157.5, 159.2, 160.0, 159.1, 164.1, 163.2, 151.3, 154.0, 159.4, 158.6, 160.7, 160.7]  # fmt: skip
    seg = steady_segment(y)
    assert (seg.start, seg.end, seg.method) == (10, 30, "changepoint")


@pytest.mark.parametrize(
    "kind,noise,phi", [("iid", 0.02, 0.0), ("multiplicative", 0.2, 0.0), ("ar1", 0.02, 0.7), ("ar1", 0.02, 0.9)]
)
def test_stationary_series_are_rarely_trimmed(kind, noise, phi):
    rng = np.random.default_rng(99)
    trimmed = sum(
        steady_segment(series_with_warmup(kind, rng, warmup=0, noise=noise, phi=phi)).removed > 0 for _ in range(300)
    )
    assert trimmed / 300 <= 0.05


def test_change_points_are_ruptures_least_squares_segmentation():
    # The cumulative-sum cost only makes ruptures' "l2" faster: the same cuts,
    # on integer series (ties in the gains) as on noisy steps.
    import ruptures

    rng = np.random.default_rng(34)
    for i in range(60):
        n = int(rng.integers(4, 120))
        z = rng.normal(0, 1, n) + np.where(np.arange(n) >= n // 3, rng.normal(0, 4), 0.0)
        z = np.round(z) if i % 3 == 0 else z
        penalty = 3.0 * math.log(n)
        expected = ruptures.Binseg(model="l2", min_size=2, jump=1).fit(z).predict(pen=penalty)[:-1]
        assert change_points(z, penalty, 2) == expected
    assert change_points(np.array([1.0, 5.0, 1.0]), 0.0, 2) == []  # too short to split


def test_work_per_second_regression():
    rng = np.random.default_rng(4)
    work = rng.uniform(1e3, 1e5, 80)
    t = 0.05 + work / 2e6 + rng.normal(0, 1e-4, 80)
    v, alpha, r2 = work_per_second(t, work)
    assert v == pytest.approx(2e6, rel=0.01) and alpha == pytest.approx(0.05, abs=1e-3) and r2 > 0.99


def test_comparison_pairs_one_variable_apart_and_baseline():
    from perfsnake.statistics.records import pairs

    variables = ["lock", "threads"]
    keys = [(lk, t) for lk in ("pthread", "mcs", "cas") for t in ("1", "2")]
    order = {"lock": ["pthread", "mcs", "cas"], "threads": ["1", "2"]}
    all_pairs = pairs(keys, variables, None, order)
    assert len(all_pairs) == 3 * 2 + 3  # per thread count, 3 lock pairs; per lock, 1 thread pair
    assert (("pthread", "1"), ("mcs", "1"), "lock") in all_pairs
    base = pairs(keys, variables, {"lock": "pthread"}, order)
    assert sorted(base) == sorted([(("pthread", t), (lk, t), "lock") for t in ("1", "2") for lk in ("mcs", "cas")])


# ---- stability flags ---------------------------------------------------------------


def test_spread_flags():
    assert spread_flags(np.array([100.0, 101, 99, 100])) == []
    flags = spread_flags(np.array([100.0, 180, 99, 100]))
    assert any("cv" in f for f in flags) and any("max/min 1.82" in f for f in flags)


def test_trend_equals_scipy_kendall_and_finds_drift():
    rng = np.random.default_rng(6)
    x = rng.normal(0, 1, 40) + np.linspace(0, 3, 40)
    tau, p = trend(x)
    ref = stats.kendalltau(np.arange(40), x)
    assert (tau, p) == pytest.approx((ref.statistic, ref.pvalue)) and p < 0.01
    nulls = [trend(rng.normal(size=20))[1] for _ in range(1000)]
    assert np.mean(np.array(nulls) < 0.05) <= 0.065
    assert math.isnan(trend(np.array([1.0, 2.0, 3.0]))[0])
