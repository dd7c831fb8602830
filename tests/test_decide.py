"""Decided in the fewest runs (statistics.decide, perfsnake.statistics.decide):
the design on seeded simulations with known truth, its one-look form against
the vectorised one, the campaign key's errors, and a real campaign."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml
from helpers import jobs_run, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError
from perfsnake.stages import precision
from perfsnake.statistics import decide


def paired_runs(rng, rows: int, n: int, truth: float, mu1: float, effect: float = 0.02):
    """Runs of a and b (rows x n rounds), iid, truth in units of m = effect x 100."""
    m = effect * 100
    sd = m / mu1 / np.sqrt(2)
    a = 100 + rng.normal(0, sd, (rows, n))
    b = 100 + truth * m + rng.normal(0, sd, (rows, n))
    return a, b


def drifting_runs(rng, rows: int, n: int, truth: float, mu1: float, phi: float = 0.7):
    """Runs of a and b, each side AR(1) on its own (the case `ar1` is for); the
    difference's long-run sd is m / mu1, m = 2."""
    sd = 2 / mu1 / np.sqrt(2 * (1 + phi) / (1 - phi))
    sides = []
    for _ in range(2):
        x = np.empty((rows, n))
        x[:, 0] = rng.normal(0, sd, rows)
        shocks = rng.normal(0, sd * np.sqrt(1 - phi**2), (rows, n))
        for i in range(1, n):
            x[:, i] = phi * x[:, i - 1] + shocks[:, i]
        sides.append(x)
    return 100 + sides[0], 100 + truth * 2 + sides[1]


@pytest.mark.parametrize(("power", "variance"), [(p, "iid") for p in decide.POWERS] + [(0.8, "ar1"), (0.95, "ar1")])
def test_one_look_at_a_time_agrees_with_the_vectorised_design(power, variance):
    rng = np.random.default_rng(11)
    spec = decide.Spec(0.02, variance, power)
    for truth in (0.0, 1.0):
        a, b = paired_runs(rng, 40, 200, truth, 0.45)
        reference = np.cumsum(a, axis=1) / np.arange(1, 201)
        outcomes, used = decide.simulate(b - a, reference, spec)
        for row in range(40):
            look, found = -1, (3, 200)
            for n in range(1, 201):
                dec = decide.decide(b[row, :n] - a[row, :n], reference[row, n - 1], spec, look)
                look = dec.look
                if dec.outcome != "continue":
                    found = (decide.OUTCOMES.index(dec.outcome), n)
                    break
            assert found == (outcomes[row], used[row])


@pytest.mark.parametrize("mu1", [0.45, 0.2])
def test_error_rates_and_runs_on_seeded_simulations(mu1):
    # 1,500 seeded paths per truth: a 5 % rate has a standard error of 0.56 %;
    # the bound is 5 % plus 3 of them. The full table: bench/sequential.py.
    rng = np.random.default_rng(20261125)
    spec = decide.Spec(0.02)
    fixed = decide.n_fixed_factor() / mu1**2
    rates = {}
    for truth in (0.0, 1.0):
        a, b = paired_runs(rng, 1500, int(3.5 * fixed) + 20, truth, mu1)
        outcome, used = decide.simulate(b - a, np.cumsum(a, axis=1) / np.arange(1, a.shape[1] + 1), spec)
        rates[truth] = (
            {o: float(np.mean(outcome == i)) for i, o in enumerate(decide.OUTCOMES)},
            used.mean() / fixed,
        )
    (null, null_ratio), (real, real_ratio) = rates[0.0], rates[1.0]
    assert null["different"] <= 0.067 and real["equivalent"] <= 0.067  # the errors, despite the looks
    assert null["equivalent"] >= 0.77 and real["different"] >= 0.77  # power 0.8, less 3 standard errors
    assert null["continue"] == 0 and real["continue"] == 0  # every path ends by the design's maximum
    assert real_ratio < 0.9 and (null_ratio + real_ratio) / 2 < 0.95  # fewer runs than the fixed design


@pytest.mark.parametrize(("power", "saved"), [(0.9, 0.82), (0.95, 0.76)])
def test_the_higher_powers_hold_alpha_and_their_power_on_seeded_simulations(power, saved):
    # As above at m / sigma 0.45 (the shortest paths) with each higher power's
    # own constants and shape; the bound on the power is 3 standard errors below it.
    rng = np.random.default_rng(20261126)
    spec = decide.Spec(0.02, power=power)
    fixed = decide.n_fixed_factor(power=power) / 0.45**2
    rates = {}
    for truth in (0.0, 1.0):
        a, b = paired_runs(rng, 1500, int(2.5 * spec.shape[0] * fixed) + 20, truth, 0.45)
        outcome, used = decide.simulate(b - a, np.cumsum(a, axis=1) / np.arange(1, a.shape[1] + 1), spec)
        rates[truth] = np.bincount(outcome, minlength=4) / len(outcome), used.mean() / fixed
    (null, null_ratio), (real, real_ratio) = rates[0.0], rates[1.0]
    assert null[0] <= 0.067 and real[1] <= 0.067  # false "different", false "equivalent"
    assert min(null[1], real[0]) >= power - 3 * np.sqrt(power * (1 - power) / 1500)
    assert null[3] == 0 and real[3] == 0
    assert (null_ratio + real_ratio) / 2 < saved  # the higher the power, the more the looks save


def test_runs_that_drift_on_their_own_need_the_ar1_estimate():
    # Each side AR(1) phi 0.7 (model "side" of bench/sequential.py), m / sigma 0.3,
    # 1,000 seeded null paths: the sample variance is too small, so "different"
    # is called far too often; the long-run variance keeps it near 5 %.
    rng = np.random.default_rng(20261127)
    a, b = drifting_runs(rng, 1000, 700, 0.0, 0.3)
    reference = np.cumsum(a, axis=1) / np.arange(1, 701)
    wrong = {v: float(np.mean(decide.simulate(b - a, reference, decide.Spec(0.02, v))[0] == 0))
             for v in ("iid", "ar1")}  # fmt: skip
    assert wrong["iid"] > 0.2 and wrong["ar1"] <= 0.075
    assert decide.Spec(0.02, "ar1").first_look == 40


@pytest.mark.parametrize("power", decide.POWERS)
def test_the_fixed_design_is_the_larger_of_the_tost_and_the_two_sided_test(power):
    from scipy.stats import norm

    tost = (norm.ppf(0.95) + norm.ppf((1 + power) / 2)) ** 2
    two_sided = (norm.ppf(0.975) + norm.ppf(power)) ** 2
    factor = decide.n_fixed_factor(power=power)
    assert factor == pytest.approx(max(tost, two_sided), rel=1e-12)
    assert factor == pytest.approx({0.8: 8.564, 0.9: 10.822, 0.95: 12.995}[power], abs=1e-3)


def test_differences_that_do_not_vary_are_decided_at_once():
    # A deterministic metric (a count, identical builds): no variance, so the
    # information is complete at the first look.
    assert decide.decide(np.zeros(20), 1.0, decide.Spec(0.02)).outcome == "equivalent"
    assert decide.decide(np.full(20, 0.5), 1.0, decide.Spec(0.02)).outcome == "different"


def test_a_power_without_a_design_is_refused():
    with pytest.raises(ValueError, match="no design"):
        decide.Spec(0.02, power=0.85)


def campaign(tmp_path, settings: dict, **more) -> dict:
    counter = tmp_path / "counter"
    # Seeded noise of 4 % per run (a sum of 12 uniforms); c is 20 % slower.
    command = (f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
               "case {variant} in c) base=120;; *) base=100;; esac; "
               "awk -v s=$n -v base=$base 'BEGIN {{ srand(s + 1); x = 0; for (i = 0; i < 12; i++) x += rand(); "
               "printf \"value=%.6f\\n\", base * (1 + 0.04 * (x - 6)) }}'")  # fmt: skip
    return {
        "name": "d",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=([0-9.]+)"}},
        "variables": {"variant": ["a", "b", "c"]},
        "statistics": {"decide": settings},
        **more,
    }


@pytest.mark.parametrize(("settings", "more", "key", "problem"), [
    ({"min_effect": "2%", "alpha": 0.01}, {}, "statistics.decide.alpha", "calibrated for 0.05 only"),
    ({"min_effect": "2%", "power": 0.85}, {}, "statistics.decide.power", "calibrated for 0.8, 0.9, 0.95 only"),
    ({"min_effect": "150%"}, {}, "statistics.decide.min_effect", "not between 0 and 100 %"),
    ({"min_effect": "2%", "metric": "valu"}, {}, "statistics.decide.metric", "'valu' is not a metric"),
    ({"min_effect": "2%"}, {"nb_runs": 5}, "statistics.decide", "conflicts with nb_runs"),
    ({"min_effect": "2%", "max_runs": 10}, {}, "statistics.decide.max_runs", "below the design's first look (15 runs)"),
    ({"min_effect": "2%"}, {"order": "grouped"}, "order", "so it needs interleaved"),
])  # fmt: skip
def test_bad_decide_settings_are_refused_in_one_line(tmp_path, settings, more, key, problem):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign(tmp_path, settings, **more)))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    assert err.value.key == key and problem in err.value.problem and "\n" not in str(err.value)


def test_a_benchmark_without_metrics_is_decided_on_its_wall_time(tmp_path):
    spec = campaign(tmp_path, {"min_effect": "2%"})
    del spec["benchmark"]["metrics"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(spec))
    assert load_campaign(tmp_path / "c.yaml").precision["metric"] == "wall_s"


def test_decide_needs_records_to_compare(tmp_path):
    path = tmp_path / "c.yaml"
    spec = campaign(tmp_path, {"min_effect": "2%"})
    spec["variables"] = {"variant": ["a"]}
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(CampaignError, match="needs records one variable apart"):
        load_campaign(path)


@pytest.mark.e2e
@pytest.mark.parametrize("power", [0.8, 0.95])
def test_a_campaign_runs_until_each_comparison_is_decided(tmp_path, power):
    camp = write_campaign(tmp_path, campaign(tmp_path, {"min_effect": "3%", "budget_s": 600, "power": power}))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    with open(tmp_path / "results/d/decisions.csv") as f:
        rows = {(r["record_a"], r["record_b"]): r for r in csv.DictReader(f)}
    assert rows[("variant-a", "variant-b")]["outcome"] == "equivalent"
    assert rows[("variant-a", "variant-c")]["outcome"] == "different"
    assert rows[("variant-b", "variant-c")]["outcome"] == "different"
    # c was decided at the first look; a and b went on: more runs, more rounds.
    final = json.loads(
        sorted((tmp_path / "results/d/precision").glob("round-*.json"), key=lambda p: int(p.stem[6:]))[-1].read_text()
    )
    runs = {path: len(r["runs"]) for path, r in final["records"].items()}
    assert runs["variant-c"] == decide.Spec(0.03).first_look < runs["variant-a"] == runs["variant-b"]
    assert final["done"] and final["round"] > 1
    assert int(rows[("variant-a", "variant-c")]["pairs"]) == decide.Spec(0.03).first_look
    # The campaign's power chose the design: every look's bounds are its constants and exponents.
    design = decide.Spec(0.03, power=power)
    (c_diff, c_equiv), (d_diff, d_equiv, _) = design.constants, design.boundaries
    looked = [r for r in final["comparisons"] if r["look"] >= 0]
    assert looked
    for r in looked:
        t = min(max(r["tau"], 1e-9), 1.0)
        assert r["bound_different"] == pytest.approx(c_diff * t ** (d_diff - 0.5))
        assert r["bound_equivalent"] == pytest.approx(c_equiv * t ** (d_equiv - 0.5))
    text = (tmp_path / "results/d/decisions.md").read_text()
    assert "2 different, 1 equivalent" in text and "**equivalent**" in text and f"power {power}," in text
    page = (tmp_path / "results/d/report/decisions.html").read_text()  # the report's page of it
    assert "<b>equivalent</b>" in page and "<td>variant-a</td>" in page and "**" not in page
    assert "decide d: round 1," in proc.stderr and "(done: see decisions.md)" in proc.stderr
    assert "the rounds decide how many" in proc.stderr
    # Every decided comparison stays decided, and a finished campaign plans nothing more.
    again = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert "Nothing to be done" in again.stdout + again.stderr
    # Resumable: killed before the last round was decided (so nothing after it
    # exists either), the next invocation decides it from the same runs,
    # measuring none again.
    before = (tmp_path / "results/d/decisions.csv").read_text()
    for lost in (f"precision/round-{final['round']}.json", "decisions.csv", "decisions.md", "results.json"):
        (tmp_path / "results/d" / lost).unlink()
    again = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(again, "run") == 0 and "localcheckpoint precision_round:" in again.stdout + again.stderr
    assert (tmp_path / "results/d/decisions.csv").read_text() == before
    # A round under another design than the earlier rounds' is refused, naming the change.
    for lost in (f"precision/round-{final['round']}.json", "decisions.csv", "decisions.md", "results.json"):
        (tmp_path / "results/d" / lost).unlink()
    changed = campaign(tmp_path, {"min_effect": "4%", "budget_s": 600, "power": power})
    camp = write_campaign(tmp_path, changed)
    refused = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "statistics.decide: changed since round" in refused.stderr and "min_effect 0.03 -> 0.04" in refused.stderr
    assert not (tmp_path / f"results/d/precision/round-{final['round']}.json").exists()


@pytest.mark.e2e
def test_a_record_whose_runs_all_fail_is_undecided_at_once(tmp_path):
    spec = campaign(tmp_path, {"min_effect": "3%", "budget_s": 600})
    spec["variables"] = {"variant": ["a", "c", "broken"]}
    spec["benchmark"]["command"] = "case {variant} in broken) exit 3;; esac; " + spec["benchmark"]["command"]
    camp = write_campaign(tmp_path, spec)
    snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    with open(tmp_path / "results/d/decisions.csv") as f:
        rows = {(r["record_a"], r["record_b"]): r for r in csv.DictReader(f)}
    assert rows[("variant-a", "variant-c")]["outcome"] == "different"
    for pair in (("variant-a", "variant-broken"), ("variant-c", "variant-broken")):
        assert rows[pair]["outcome"] == "undecided" and rows[pair]["reason"] == "no ok runs of variant-broken"
    first = decide.Spec(0.03).first_look
    assert len(list((tmp_path / "results/d/runs/variant-broken").glob("run-*"))) == first  # not up to max_runs
    # No precision target is claimed: decisions.csv is a decide campaign's answer.
    assert "precision_target_met" not in (tmp_path / "results/d/summary.csv").read_text()


@pytest.mark.e2e
@pytest.mark.parametrize(("limit", "reason"), [({"budget_s": 0.001}, "budget of 0.001 s spent"),
                                               ({"max_runs": 15}, "max_runs (15) reached")])  # fmt: skip
def test_a_spent_budget_or_max_runs_ends_open_comparisons_undecided(tmp_path, limit, reason):
    # Two identical variants and min_effect 1 %: nowhere near decided after the first look.
    spec = campaign(tmp_path, {"min_effect": "1%", **limit})
    spec["variables"] = {"variant": ["a", "b"]}
    snakemake(tmp_path, write_campaign(tmp_path, spec), "--cores", "1", "all")
    with open(tmp_path / "results/d/decisions.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["outcome"], row["reason"], row["pairs"]) == ("undecided", reason, "15")


def test_records_linked_by_open_comparisons_get_the_same_runs():
    plan = {"a": [1, 2, 3], "b": [1, 2, 3], "c": [1, 2, 3], "d": [1, 2, 3, 4, 5]}
    add = {"a": 2, "b": 2, "c": 6, "d": 1}
    # a-b and b-c open: a, b, c run round for round; d alone keeps its own count.
    assert precision.same_counts(add, plan, [("a", "b"), ("b", "c")]) == {"a": 6, "b": 6, "c": 6, "d": 1}
    # Earlier runs count: the record behind catches up to the same total.
    assert precision.same_counts({"a": 2, "d": 1}, plan, [("a", "d")]) == {"a": 3, "d": 1}
