"""The history's step finder (changepoints.find_invocation_steps) on seeded
simulations with known truth: each invocation one point, the variance
between invocations the noise, one run per invocation enough."""

import zlib

import numpy as np
import pytest
from scipy import stats

from perfsnake.history.views import STEP_OPTIONS
from perfsnake.statistics.changepoints import find_invocation_steps, find_steps

ALPHA = STEP_OPTIONS["alpha"]
SERIES = 200


def simulate(rng, k, runs, between, phi, within, step=0.0, at=None):
    """k invocations of `runs` runs each around 100: an invocation's level
    moves by AR(1) noise (marginal sd `between`, coefficient phi), its runs
    by independent noise (sd `within`), both relative; from invocation `at`
    on the level is `step` higher."""
    u = np.zeros(k)
    u[0] = rng.normal(0, between)
    for i in range(1, k):
        u[i] = phi * u[i - 1] + rng.normal(0, between * np.sqrt(1 - phi**2))
    level = 100 * (1 + u) * np.where(np.arange(k) >= (at if at is not None else k), 1 + step, 1.0)
    return [(str(i), level[i] * (1 + rng.normal(0, within, runs))) for i in range(k)]


def found(steps):
    return [int(s["version"]) for s in steps if s["p_value"] < ALPHA]


NOISE = {
    "runs only": (0.0, 0.0, 0.01),
    "invocations differ": (0.05, 0.0, 0.01),
    "invocations wander": (0.05, 0.5, 0.01),
}


@pytest.mark.parametrize("noise", NOISE)
@pytest.mark.parametrize(("k", "runs"), [(30, 1), (60, 3)])
def test_null_series_hold_the_false_positive_rate(noise, k, runs):
    """Series without a step get one in at most alpha of them (within the
    binomial interval), whether invocations differ more than their runs or
    wander; the finder that pooled the runs flagged every series whose
    invocations differ (3 runs each) and could say nothing of one run."""
    rng = np.random.default_rng(zlib.crc32(f"{noise} {k} {runs}".encode()))
    between, phi, within = NOISE[noise]
    contrast = noise == "invocations differ" and runs == 3
    flagged = pooled = 0
    for _ in range(SERIES):
        series = simulate(rng, k, runs, between, phi, within)
        flagged += bool(found(find_invocation_steps(series, STEP_OPTIONS)))
        pooled += contrast and bool(found(find_steps(series, STEP_OPTIONS)))
    low = stats.binomtest(flagged, SERIES).proportion_ci(0.999).low
    assert low <= ALPHA, (flagged, low)
    if contrast:
        assert pooled == SERIES  # the reason for the invocation as the unit


@pytest.mark.parametrize(("noise", "step"), [("runs only", -0.05), ("invocations differ", -0.25), ("invocations wander", 0.25)])  # fmt: skip
def test_planted_steps_are_found_in_place_with_one_run_per_invocation(noise, step):
    rng = np.random.default_rng(7)
    between, phi, within = NOISE[noise]
    hits = 0
    for _ in range(100):
        series = simulate(rng, 60, 1, between, phi, within, step=step, at=30)
        hits += any(abs(i - 30) <= 1 for i in found(find_invocation_steps(series, STEP_OPTIONS)))
    assert hits >= 90


def test_a_step_at_the_latest_invocation_stands_alone_and_an_outlier_is_no_step():
    rng = np.random.default_rng(11)
    tail = simulate(rng, 12, 3, 0.0, 0.0, 0.01, step=-0.2, at=11)
    assert found(find_invocation_steps(tail, STEP_OPTIONS)) == [11]
    spike = simulate(rng, 12, 3, 0.0, 0.0, 0.01)
    spike[5] = (spike[5][0], spike[5][1] * 0.8)  # one slow night between ordinary ones
    assert found(find_invocation_steps(spike, STEP_OPTIONS)) == []


def test_steps_carry_their_size_interval_and_adjusted_p():
    rng = np.random.default_rng(3)
    series = simulate(rng, 40, 2, 0.02, 0.0, 0.01, step=-0.2, at=20)
    (step,) = find_invocation_steps(series, STEP_OPTIONS)
    assert (step["version"], step["previous"]) == ("20", "19")
    assert step["relative_change"] == pytest.approx(-0.2, abs=0.03)
    assert step["diff_ci_low"] < step["mean_after"] - step["mean_before"] < step["diff_ci_high"]
    assert 0 <= step["p_value"] < ALPHA
    assert find_invocation_steps(series[:2], STEP_OPTIONS) == []  # two points: no noise to tell a step by


def test_counted_work_without_noise_steps_where_the_level_changes():
    """Runs that agree exactly within every invocation (work counted, not
    timed): a change of level is a step, even among three invocations."""
    series = [(str(i), np.full(3, level)) for i, level in enumerate((100.0, 100.0, 125.0))]
    assert found(find_invocation_steps(series, STEP_OPTIONS)) == [2]
