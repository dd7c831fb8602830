"""Each gate's error rates (perfsnake.statistics.gate_errors) on seeded
simulations with known truth, through the gates' own evaluation."""

import math

import numpy as np
import pytest
from scipy import stats

from perfsnake import gates
from perfsnake.statistics.gate_errors import POWER

OPTS = {"confidence": 0.95, "autocorrelation_threshold": 0.1, "alpha": 0.05, "statistic": "mean"}
NOMINAL = (1 - 0.95) / 2  # gate_errors' arithmetic, to the bit
EVALUATIONS = 2000


def baseline_gate(max_regression):
    return {"index": 0, "metric": "m", "kind": "baseline", "where": {"v": "b"}, "baseline": {"v": "a"},
            "max_regression": max_regression, "better": "lower"}  # fmt: skip


def evaluate(ref, a, b):
    (row,) = gates.evaluate([ref], {"m": {("a",): a, ("b",): b}}, ["v"], OPTS)
    return gates.own(row)[1]


def ar1(rng, n, phi, sd, mean):
    """AR(1) noise of stationary standard deviation sd around mean."""
    e = rng.normal(0, sd * math.sqrt(1 - phi**2), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return mean + x


def interval(k, n, level=0.999):
    ci = stats.binomtest(k, n).proportion_ci(level)
    return ci.low, ci.high


@pytest.mark.parametrize(("cv", "phi", "n"), [(0.02, 0.0, 10), (0.20, 0.0, 10), (0.05, 0.5, 40)])
def test_a_a_false_alarms_hold_the_nominal_rate(cv, phi, n):
    """A gate allowing no regression, fed two samples of one distribution,
    fails (1 - c) / 2 of the time: within the binomial interval for
    independent runs, not above it under AR(1) noise (subsessions)."""
    rng = np.random.default_rng(1234)
    ref = baseline_gate(0.0)
    fails, quoted = 0, set()
    for _ in range(EVALUATIONS):
        a, b = (ar1(rng, n, phi, cv * 100, 100) for _ in range(2))
        g = evaluate(ref, a, b)
        fails += g["verdict"] == "fail"
        quoted.add(g["false_alarm_rate"])
    assert quoted == {NOMINAL}
    low, high = interval(fails, EVALUATIONS)
    assert low <= NOMINAL, (fails, low, high)
    if phi == 0:
        assert high >= NOMINAL, (fails, low, high)


def test_a_regression_of_the_detectable_size_fails_with_the_stated_power():
    """True regression = the quoted detectable change (with the true noise):
    the gate fails about POWER of the time, and the quotes the runs give
    centre on it."""
    rng = np.random.default_rng(99)
    n, sd, mean, allowed = 10, 1.0, 100.0, 0.02
    se, df = sd * math.sqrt(2 / n), 2 * n - 2
    delta = allowed * mean + (stats.t.ppf(0.975, df) + stats.t.ppf(POWER, df)) * se
    ref = baseline_gate(allowed)
    fails, quotes = 0, []
    for _ in range(EVALUATIONS):
        g = evaluate(ref, rng.normal(mean, sd, n), rng.normal(mean + delta, sd, n))
        fails += g["verdict"] == "fail"
        quotes.append(g["detectable_change"])
    assert abs(fails / EVALUATIONS - POWER) < 0.03, fails / EVALUATIONS
    assert float(np.median(quotes)) == pytest.approx(delta / mean, rel=0.05)


def test_a_gate_too_coarse_for_its_allowance_says_how_many_runs_it_needs():
    rng = np.random.default_rng(7)
    ref = baseline_gate(0.02)
    g = evaluate(ref, rng.normal(100, 20, 5), rng.normal(100, 20, 5))
    needed = g["runs_needed"]
    assert needed > 5
    assert f"cannot decide a 2.0% change with 5 runs at this noise: needs about {needed}" in g["reason"]
    assert "false alarm 2.5%" in gates.gate_line({**g, "v": "b"})
    # Known truth: a side needs n* = 2 ((z_c + z_power) sd / allowance)^2 runs. Half of them
    # leave the gate too coarse, twice as many resolve it, nearly every time.
    z = stats.norm.ppf(0.975) + stats.norm.ppf(POWER)
    n_star = 2 * (z * 20 / 2) ** 2
    coarse = [evaluate(ref, rng.normal(100, 20, int(n_star / 2)), rng.normal(100, 20, int(n_star / 2)))["runs_needed"]
              for _ in range(100)]  # fmt: skip
    fine = [evaluate(ref, rng.normal(100, 20, int(2 * n_star)), rng.normal(100, 20, int(2 * n_star)))["runs_needed"]
            for _ in range(100)]  # fmt: skip
    assert sum(c is not None for c in coarse) >= 90 and sum(f is None for f in fine) >= 90
    assert float(np.median([c for c in coarse if c is not None])) == pytest.approx(n_star, rel=0.1)


def test_absolute_gates_quote_their_error_too():
    rng = np.random.default_rng(3)
    ref = {"index": 0, "metric": "m", "kind": "absolute", "where": {}, "lower": 90.0, "upper": 110.0}
    (row,) = gates.evaluate([ref], {"m": {("a",): rng.normal(100, 5, 10)}}, ["v"], OPTS)
    g = gates.own(row)[1]
    assert g["false_alarm_rate"] == pytest.approx(NOMINAL)
    assert 0 < g["detectable_change"] < 1 and g["runs_needed"] is None


@pytest.mark.parametrize(("cv", "rate"), [(0.02, 0.01), (0.20, 0.01), (0.05, 0.001)])
def test_auto_thresholds_keep_their_false_alarm_rate(cv, rate):
    """`max_regression: auto`: on A/A pairs the gate fails at most `rate` of
    the time (within the binomial interval), at any noise, and the threshold
    it chose grows with the noise."""
    rng = np.random.default_rng(2024)
    ref = {**baseline_gate("auto"), "false_alarm": rate}
    fails, chosen, evaluations = 0, [], 1000
    for _ in range(evaluations):
        g = evaluate(ref, rng.normal(100, cv * 100, 10), rng.normal(100, cv * 100, 10))
        fails += g["verdict"] == "fail"
        chosen.append(g["max_regression"])
        assert g["false_alarm_rate"] == rate and g["runs_needed"] is None
    low, high = interval(fails, evaluations)
    assert low <= rate <= high, (fails, low, high)
    assert "threshold from the noise" in g["reason"]
    # About (t_(1-rate) - t_0.975) standard errors of the difference: from the noise, not fixed.
    df = 18
    expected = (stats.t.ppf(1 - rate, df) - stats.t.ppf(0.975, df)) * cv * math.sqrt(2 / 10)
    assert float(np.median(chosen)) == pytest.approx(expected, rel=0.15)


def test_auto_is_refused_where_it_means_nothing(tmp_path):
    from perfsnake.errors import CampaignError

    records = [{"v": "a"}, {"v": "b"}]
    good = {"metric": "m", "where": {"v": "b"}, "baseline": {"v": "a"}, "max_regression": "auto", "better": "lower"}
    (ref,) = gates.parse_references([good], ["v"], records, ["m"], "c.yaml")
    assert ref["max_regression"] == "auto" and ref["false_alarm"] == 0.01
    for bad, says in [({**good, "false_alarm": "60%"}, "references[0].false_alarm: '60%': give a rate between 0% and 50%"),
                      ({**good, "max_regression": "5%", "false_alarm": "1%"}, "references[0].false_alarm: is for max_regression: auto"),
                      ({"metric": "m", "lower": 1, "false_alarm": "1%"}, "references[0].false_alarm: is for a gate with a baseline or history")]:  # fmt: skip
        with pytest.raises(CampaignError) as info:
            gates.parse_references([bad], ["v"], records, ["m"], "c.yaml")
        assert says in str(info.value)


def test_a_comparisons_detectable_difference_is_found_with_the_stated_power():
    """comparisons.csv's detectable_change: a true difference of the size
    quoted (with the true noise) is significant about POWER of the time."""
    from perfsnake.statistics.gate_errors import detectable_difference
    from perfsnake.statistics.tests import welch_on_subsessions

    rng = np.random.default_rng(5)
    n, sd, mean, alpha = 12, 2.0, 100.0, 0.05
    df = 2 * n - 2
    half = stats.t.ppf(0.975, df) * sd * math.sqrt(2 / n)
    quoted = detectable_difference(-half, half, df, 0.95, alpha, mean)
    assert quoted == pytest.approx((stats.t.ppf(0.975, df) + stats.t.ppf(POWER, df)) * sd * math.sqrt(2 / n) / mean)
    hits = 0
    for _ in range(EVALUATIONS):
        comp, _ = welch_on_subsessions(
            rng.normal(mean, sd, n), rng.normal(mean * (1 + quoted), sd, n), 0.95, alpha, 0.1
        )
        hits += comp.p_value < alpha
    assert abs(hits / EVALUATIONS - POWER) < 0.03, hits / EVALUATIONS
