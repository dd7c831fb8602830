"""Two modes are not one result (perfsnake.statistics.modes): seeded mixtures with known truth."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import snakemake, write_campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.statistics import modes
from perfsnake.statistics.modes import MIN_RUNS, critical_value, mixture_ratio, two_modes


def flagged(draw, trials: int = 2000, seed: int = 1) -> float:
    rng = np.random.default_rng(seed)
    return float(modes.flagged(np.array([draw(rng) for _ in range(trials)])).mean())


def mixture(n: int, minor: float, separation: float):
    k = round(minor * n)
    return lambda rng: 100 + 5 * np.r_[rng.normal(0, 1, n - k), rng.normal(separation, 1, k)]


@pytest.mark.parametrize("n", [20, 30, 100, 200])
@pytest.mark.parametrize("kind", ["normal", "lognormal"])
def test_one_group_is_flagged_at_most_five_percent(n, kind):
    draw = {"normal": lambda rng: 50 + 3 * rng.standard_normal(n), "lognormal": lambda rng: rng.lognormal(3, 0.8, n)}
    # 2,000 seeded trials: 5 % has a standard error of 0.5 %; the margin is 3 of them.
    assert flagged(draw[kind]) <= 0.065


@pytest.mark.parametrize(("n", "minor", "separation", "least"), [
    (30, 0.1, 5, 0.88), (30, 0.2, 5, 0.95), (50, 0.1, 4, 0.85), (50, 0.5, 4, 0.92), (100, 0.1, 4, 0.97),
    (200, 0.1, 3, 0.9), (300, 0.1, 3, 0.95),
])  # fmt: skip
def test_two_groups_are_found(n, minor, separation, least):
    assert flagged(mixture(n, minor, separation), trials=1000) >= least


def test_the_modes_are_named_with_their_shares():
    rng = np.random.default_rng(3)
    # A connect that sometimes pays for a port search: 29 us or 270 us.
    x = np.r_[rng.normal(29, 1.5, 24), rng.normal(270, 12, 6)]
    modes = two_modes(rng.permutation(x))
    assert modes is not None
    assert modes.centres[0] == pytest.approx(29, rel=0.05) and modes.centres[1] == pytest.approx(270, rel=0.05)
    assert modes.shares == pytest.approx((0.8, 0.2))
    assert modes.describe() == f"{modes.centres[0]:.4g} (80%) | {modes.centres[1]:.4g} (20%)"


def rng_mixture(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(10, 0.1, n // 2), rng.normal(20, 0.1, n - n // 2)]


def test_too_few_runs_or_no_spread_say_nothing():
    assert two_modes(np.r_[np.full(MIN_RUNS // 2, 1.0), np.full(MIN_RUNS // 2 - 1, 100.0)]) is None
    assert two_modes(np.r_[rng_mixture(MIN_RUNS)]) is not None
    assert two_modes(np.full(40, 7.0)) is None


@pytest.mark.parametrize("n", [120, 250])
def test_the_tabled_critical_values_hold_five_percent_of_one_normal(n):
    # A fresh seeded simulation (not the table's seed): 4,000 draws, 5 % has a
    # standard error of 0.35 %; the margin is 4 of them. n = 120 and 250 lie
    # between tabled sizes, so the interpolation is checked too.
    rng = np.random.default_rng(7)
    statistic = mixture_ratio(rng.standard_normal((4000, n))).statistic
    assert 0.036 <= (statistic > critical_value(n)).mean() <= 0.064
    assert critical_value(5000) == critical_value(500)


def test_split_critical_values_are_repeatable():
    assert modes.split_critical.__wrapped__(30) == modes.split_critical.__wrapped__(30)


@pytest.mark.e2e
def test_a_campaign_flags_two_modes_and_draws_them_as_strips(tmp_path):
    counter = tmp_path / "counter"
    # Every fifth run pays for something the others do not: 29 or 270.
    command = (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
               "if [ $((n % 5)) -eq 0 ]; then echo value=270; else echo value=29; fi")  # fmt: skip
    camp = write_campaign(tmp_path, {
        "name": "mm",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1]},
        "nb_runs": 20,
        "plots": [{"kind": "bar", "x": "x", "y": "value", "name": "value"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    summary = read_csv(tmp_path / "results/mm/summary.csv")
    row = summary[summary["metric"] == "value"].iloc[0]
    assert row["modes"] == "29 (80%) | 270 (20%)" and "two modes: 29 (80%) | 270 (20%)" in row["flags"]
    assert "two modes" in (tmp_path / "results/mm/significant.md").read_text()
    svg = next((tmp_path / "results/mm").rglob("value.svg")).read_text()
    assert "drawn as strips" in svg
