"""Statistics against known truth (simulated data with fixed seeds) and scipy."""

import numpy as np
import pytest
from scipy import stats

from perfsnake.stats import (
    lag1_autocorrelation,
    median_interval,
    independent_enough,
    mean_interval,
    merge_until_independent,
    steady_segment,
    summarise,
    t_interval,
    welch,
    work_per_second,
)

RNG = np.random.default_rng(20261122)
SIMS = 10000
COVERAGE_SIMS = 8000


def coverage(data: np.ndarray, truth: float) -> float:
    """Coverage of the pipeline's interval (subsession merging included)."""
    hits = 0
    for row in data:
        (lo, hi), *_ = mean_interval(row, 0.95, 0.1)
        hits += lo <= truth <= hi
    return hits / len(data)


def test_t_interval_equals_scipy():
    x = RNG.normal(10, 2, size=25)
    lo, hi = t_interval(x, 0.9)
    ref = stats.t.interval(0.9, 24, loc=x.mean(), scale=stats.sem(x))
    assert (lo, hi) == pytest.approx(ref)


@pytest.mark.parametrize(
    "name,draw,truth",
    [
        ("normal", lambda r, n: r.normal(100.0, 15.0, size=(COVERAGE_SIMS, n)), 100.0),
        ("lognormal", lambda r, n: r.lognormal(0.0, 0.25, size=(COVERAGE_SIMS, n)), float(np.exp(0.25**2 / 2))),
        ("bimodal", lambda r, n: np.where(r.random((COVERAGE_SIMS, n)) < 0.5, r.normal(0, 1, (COVERAGE_SIMS, n)), r.normal(5, 1, (COVERAGE_SIMS, n))), 2.5),
    ],
)
def test_mean_intervals_cover_the_truth(name, draw, truth):
    assert 0.94 <= coverage(draw(np.random.default_rng(0), 60), truth) <= 0.96, name


def ar1(phi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    e = rng.normal(0, 1, n + 200)
    x = np.empty_like(e)
    x[0] = e[0]
    for i in range(1, len(e)):
        x[i] = phi * x[i - 1] + e[i]
    return x[200:]  # drop the start so the series is stationary


def test_ar1_intervals_cover_after_subsession_merging():
    rng = np.random.default_rng(7)
    hits = naive = 0
    sims = 1500
    for _ in range(sims):
        x = 50.0 + ar1(0.7, 400, rng)
        summary = summarise(x, 0.95, 0.1)
        hits += summary.mean_ci_low <= 50.0 <= summary.mean_ci_high
        lo, hi = t_interval(x, 0.95)
        naive += lo <= 50.0 <= hi
    assert hits / sims >= 0.93
    assert naive / sims < 0.80  # without merging the interval is far too narrow


def test_merging_reduces_autocorrelation():
    x = ar1(0.7, 600, np.random.default_rng(3))
    assert lag1_autocorrelation(x) > 0.5
    merged, size, r = merge_until_independent(x, 0.1)
    assert size > 1 and len(merged) == 600 // size
    assert independent_enough(r, len(merged), 0.1) and abs(r) < 0.5


def test_independent_data_is_not_merged():
    _, size, _ = merge_until_independent(np.random.default_rng(5).normal(size=200), 0.1)
    assert size == 1


def test_median_interval_bca_and_fallbacks():
    x = np.random.default_rng(11).lognormal(0, 0.5, 60)
    lo, hi, method = median_interval(x, 0.95)
    assert method == "BCa" and lo < np.median(x) < hi
    assert median_interval(np.full(10, 3.0), 0.95) == (3.0, 3.0, "degenerate")
    assert median_interval(np.array([1.0, 2.0]), 0.95)[2] == "none"


def test_median_interval_coverage():
    rng = np.random.default_rng(13)
    hits = sum(lo <= 0.0 <= hi for lo, hi, _ in (median_interval(rng.normal(0, 1, 40), 0.95, seed=i) for i in range(300)))
    assert hits / 300 >= 0.90


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


def test_welch_false_positive_rate():
    rng = np.random.default_rng(17)
    a = rng.normal(0, 1, (SIMS, 15))
    b = rng.normal(0, 2, (SIMS, 25))
    p = stats.ttest_ind(b, a, axis=1, equal_var=False).pvalue
    assert np.mean(p < 0.05) <= 0.055
    # and our function agrees with the vectorised scipy on a sample of them
    for i in range(0, SIMS, 997):
        assert welch(a[i], b[i]).p_value == pytest.approx(p[i])


@pytest.mark.parametrize("warmup,cooldown", [(40, 0), (25, 15), (60, 20)])
def test_injected_warmup_is_found(warmup, cooldown):
    rng = np.random.default_rng(warmup)
    n = 300
    y = rng.normal(100, 2, n)
    y[:warmup] -= np.linspace(30, 10, warmup)  # a ramping warm-up, well below steady state
    if cooldown:
        y[n - cooldown :] -= 15
    seg = steady_segment(y)
    assert abs(seg.start - warmup) <= max(1, 0.05 * warmup)
    assert abs((n - seg.end) - cooldown) <= max(1, 0.05 * max(cooldown, 1))


def test_stationary_series_keeps_everything():
    kept = [steady_segment(np.random.default_rng(seed).normal(10, 1, 200)) for seed in range(40)]
    assert sum(s.removed > 0 for s in kept) <= 2


def test_work_per_second_regression():
    rng = np.random.default_rng(4)
    work = rng.uniform(1e3, 1e5, 80)
    t = 0.05 + work / 2e6 + rng.normal(0, 1e-4, 80)
    v, alpha, r2 = work_per_second(t, work)
    assert v == pytest.approx(2e6, rel=0.01) and alpha == pytest.approx(0.05, abs=1e-3) and r2 > 0.99


def test_comparison_pairs_one_variable_apart_and_baseline():
    from perfsnake.stages.analysis import pairs

    variables = ["lock", "threads"]
    keys = [(lk, t) for lk in ("pthread", "mcs", "cas") for t in ("1", "2")]
    order = {"lock": ["pthread", "mcs", "cas"], "threads": ["1", "2"]}
    all_pairs = pairs(keys, variables, None, order)
    assert len(all_pairs) == 3 * 2 + 3  # per thread count, 3 lock pairs; per lock, 1 thread pair
    assert (("pthread", "1"), ("mcs", "1"), "lock") in all_pairs
    base = pairs(keys, variables, {"lock": "pthread"}, order)
    assert sorted(base) == sorted([(("pthread", t), (lk, t), "lock") for t in ("1", "2") for lk in ("mcs", "cas")])


def test_precision_rounds_follow_pilots_estimate():
    from perfsnake.precision import decide, next_plan, runs_needed

    rng = np.random.default_rng(9)
    noisy = list(rng.normal(100, 10, 5))
    need = runs_needed(noisy, 0.02, 0.95)
    s = np.std(noisy, ddof=1)
    assert need == int(np.ceil((stats.t.ppf(0.975, 4) * s / (0.02 * np.mean(noisy))) ** 2))
    spec = {"target_rel_ci": 0.02, "confidence": 0.95, "max_runs": 20}
    d = decide({"a": [100.0] * 5, "b": noisy}, {"a": [1, 2, 3, 4, 5], "b": [1, 2, 3, 4, 5]}, spec, 1)
    assert d["records"]["a"]["met"] and d["records"]["a"]["add"] == []
    assert d["records"]["b"]["add"] == list(range(6, 6 + min(need - 5, 15)))
    assert not d["done"] and next_plan(d)["b"][-1] == 5 + len(d["records"]["b"]["add"])
    capped = decide({"b": noisy}, {"b": list(range(1, 21))}, spec, 3)
    assert capped["done"] and not capped["records"]["b"]["met"]
