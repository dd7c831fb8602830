"""Campaign-level statistics on simulated results: multiple-comparison
correction, what is compared, stability flags, the precision loop."""

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import signal

from perfsnake.contract import CampaignInfo
from perfsnake.stages.analysis import analyse, comparison_rows, summary_rows


def results(values: dict[str, np.ndarray]) -> list[dict]:
    """Result dicts of one variable `v`, runs interleaved in time."""
    out = []
    for i in range(max(len(x) for x in values.values())):
        for j, (name, x) in enumerate(values.items()):
            if i < len(x):
                out.append({"variables": {"v": name}, "metrics": {"value": float(x[i])}, "status": "ok",
                            "start_epoch": i * 100 + j, "wall_s": 1.0})  # fmt: skip
    return out


def info(**statistics) -> CampaignInfo:
    return CampaignInfo.from_dict({"name": "sim", "variables": ["v"], "statistics": statistics})


def null_campaign(seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return results({f"r{i:02d}": 100 + rng.normal(0, 1, 10) for i in range(20)})


def test_holm_controls_the_family_wise_error_of_a_null_campaign():
    # 20 identical records: 190 comparisons of `value` per campaign.
    raw = holm = 0
    for seed in range(20):
        rows = comparison_rows(null_campaign(seed), info(metrics=["value"]))
        assert len(rows) == 190
        raw += sum(r["p_value"] < 0.05 for r in rows)
        holm += sum(r["significant"] for r in rows)
        assert all(r["p_adjusted"] >= r["p_value"] for r in rows) and rows[0]["correction"] == "holm"
    assert raw / (20 * 190) == pytest.approx(0.05, abs=0.02)  # about 9.5 false positives per campaign
    assert holm <= 3  # family-wise error <= 5 %: about one campaign in 20


def test_bh_and_none_and_real_differences():
    rng = np.random.default_rng(3)
    data = results({"a": 100 + rng.normal(0, 1, 20), "b": 100 + rng.normal(0, 1, 20), "c": 103 + rng.normal(0, 1, 20)})
    rows = {(r["a"], r["b"]): r for r in comparison_rows(data, info(correction="bh", metrics=["value"]))}
    assert rows[("a", "c")]["significant"] and rows[("b", "c")]["significant"]
    assert rows[("a", "c")]["correction"] == "bh"
    none = comparison_rows(data, info(correction="none", metrics=["value"]))
    assert all(r["p_adjusted"] == r["p_value"] for r in none)


def test_compare_and_metrics_limit_the_comparisons():
    rng = np.random.default_rng(4)
    data = []
    for i in range(6):
        for x in ("1", "2"):
            for y in ("p", "q"):
                data.append({"variables": {"x": x, "y": y}, "metrics": {"value": float(rng.normal()), "other": 1.0 + i},
                             "status": "ok", "start_epoch": len(data), "wall_s": 1.0})  # fmt: skip
    base = {"name": "c", "variables": ["x", "y"]}
    everything = comparison_rows(data, CampaignInfo.from_dict({**base, "statistics": {}}))
    assert {r["metric"] for r in everything} == {"wall_s", "value", "other"} and {
        r["variable"] for r in everything
    } == {"x", "y"}
    limited = comparison_rows(
        data, CampaignInfo.from_dict({**base, "statistics": {"test_variables": ["x"], "metrics": ["value"]}})
    )
    assert len(limited) == 2 and {(r["metric"], r["variable"]) for r in limited} == {("value", "x")}


def test_summary_flags_unstable_and_trending_records(tmp_path):
    rng = np.random.default_rng(5)
    data = results({"steady": 100 + rng.normal(0, 1, 30), "noisy": 100 * rng.lognormal(0, 0.3, 30),
                    "drifting": 100 + rng.normal(0, 1, 30) + np.linspace(0, 10, 30)})  # fmt: skip
    rows = {r["v"]: r for r in summary_rows(data, info()) if r["metric"] == "value"}
    assert rows["steady"]["flags"] == ""
    assert "unstable: cv" in rows["noisy"]["flags"] and "max/min" in rows["noisy"]["flags"]
    assert "trend over run order" in rows["drifting"]["flags"] and rows["drifting"]["trend_p_adjusted"] < 0.05
    assert {"median_ci_level", "mean_ci_note", "flags", "trend_p"} <= set(rows["steady"])
    analyse(data, info(), tmp_path / "s.csv", tmp_path / "c.csv", tmp_path / "sig.md")
    text = (tmp_path / "sig.md").read_text()
    assert "Holm-adjusted" in text and "## Stability warnings" in text and "v=drifting" in text
    import pandas as pd

    comps = pd.read_csv(tmp_path / "c.csv")
    assert {"p_value", "p_adjusted", "correction", "significant"} <= set(comps.columns)
    assert (comps["significant"] == (comps["p_adjusted"] < 0.05)).all()


def test_runs_needed_says_met_and_uses_subsession_means():
    from perfsnake.precision import runs_needed

    assert runs_needed([100.0, 100.1, 99.9, 100.0, 100.05, 99.95], 0.05, 0.95) == "met"
    # phi = 0.9, cv 10 %, +-1 %: the raw variance asks for a few hundred runs;
    # about 7,300 are needed (1.96^2 * 0.1^2 * 19 / 0.01^2).
    rng = np.random.default_rng(6)
    estimates = []
    for _ in range(20):
        e = rng.normal(size=2000)
        e[0] /= math.sqrt(1 - 0.81)
        x = 100 + 10 * math.sqrt(1 - 0.81) * signal.lfilter([1.0], [1.0, -0.9], e)
        estimates.append(runs_needed(list(x), 0.01, 0.95))
    assert 4000 <= np.median(estimates) <= 12000


def simulated_campaign(phi: float, rng: np.random.Generator, cap: int, start: int = 10) -> tuple[bool, int, int]:
    from perfsnake.precision import decide, next_plan

    e = rng.normal(size=cap)
    e[0] /= math.sqrt(1 - phi**2)
    series = 100 + 5 * math.sqrt(1 - phi**2) * signal.lfilter([1.0], [1.0, -phi], e)  # cv 5 %
    plan = {"r": list(range(1, start + 1))}
    spec = {"target_rel_ci": 0.02, "confidence": 0.95, "max_runs": cap}
    for round_number in range(1, 50):
        d = decide({"r": list(series[: len(plan["r"])])}, plan, spec, round_number)
        if d["done"]:
            return bool(d["records"]["r"]["met"]), len(plan["r"]), round_number
        plan = next_plan(d)
    raise AssertionError("the loop did not end")


@pytest.mark.parametrize("phi", [0.0, 0.7])
def test_precision_loop_reaches_the_target_on_ar1_data(phi):
    oracle = (1.96 * 0.05 / 0.02) ** 2 * (1 + phi) / (1 - phi)  # runs the true interval needs
    cap = int(3 * oracle)
    rng = np.random.default_rng(int(phi * 10) + 1)
    outcomes = [simulated_campaign(phi, rng, cap) for _ in range(150)]
    assert np.mean([met for met, _, _ in outcomes]) >= 0.90
    runs = np.array([n for _, n, _ in outcomes])
    assert runs.max() <= cap  # decide never plans past max_runs
    # Stopping early on a chance-narrow interval of 10 correlated runs still
    # happens (about 1 campaign in 6 at phi = 0.7; see bench/validity.py).
    assert np.mean(runs >= 0.5 * oracle) >= 0.75


def test_precision_rounds_grow_at_most_threefold():
    from perfsnake.precision import GROWTH, decide

    noisy = list(np.random.default_rng(9).normal(100, 10, 5))
    spec = {"target_rel_ci": 0.01, "confidence": 0.95, "max_runs": 1000}
    d = decide({"a": [100.0] * 5, "b": noisy}, {"a": [1, 2, 3, 4, 5], "b": [1, 2, 3, 4, 5]}, spec, 1)
    assert d["records"]["a"]["met"] and d["records"]["a"]["add"] == []
    assert d["records"]["b"]["add"] == list(range(6, 6 + GROWTH * 5)) and not d["done"]
    capped = decide({"b": noisy}, {"b": list(range(1, 1001))}, spec, 3)
    assert capped["done"] and not capped["records"]["b"]["met"]


def test_pairs_without_variance_do_not_enlarge_the_family():
    rng = np.random.default_rng(7)
    data = results({"a": 100 + rng.normal(0, 1, 8), "b": 101.5 + rng.normal(0, 1, 8)})
    for res in data:
        res["metrics"]["constant"] = 1.0
    rows = comparison_rows(data, info(metrics=["value", "constant"]))
    value = next(r for r in rows if r["metric"] == "value")
    constant = next(r for r in rows if r["metric"] == "constant")
    assert value["p_adjusted"] == pytest.approx(value["p_value"])  # a family of one test
    assert constant["p_value"] == 1.0 and not constant["significant"]


def test_campaign_statistics_options_are_validated(tmp_path):
    import yaml

    from perfsnake.campaign import load_campaign
    from perfsnake.errors import CampaignError

    def campaign(statistics):
        data = {"name": "t", "benchmark": {"type": "command", "command": "echo {x}", "metrics": {"v": r"(\d+)"}},
                "variables": {"x": [1, 2]}, "statistics": statistics}  # fmt: skip
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    loaded = load_campaign(campaign({"correction": "bh", "test_variables": ["x"], "metrics": ["v"]}))
    assert loaded.data["statistics"]["correction"] == "bh"
    with pytest.raises(CampaignError, match="statistics.test_variables"):
        load_campaign(campaign({"test_variables": ["y"]}))
    with pytest.raises(CampaignError, match="correction"):
        load_campaign(campaign({"correction": "bonferroni"}))


@pytest.mark.parametrize(
    ("key", "value", "new"),
    [
        ("compare", [{"a": {"x": 1}, "b": {"x": 2}}], "flamegraph_pairs"),
        ("statistics", {"compare": ["x"]}, "statistics.test_variables"),
    ],
)
def test_a_renamed_key_is_refused_in_one_line_naming_the_new_one(tmp_path, key, value, new):
    """`compare` now means results side by side only (compare_with, perfsnake compare)."""
    import yaml

    path = tmp_path / "c.yaml"
    data = {"name": "t", "benchmark": {"type": "command", "command": "echo {x}", "metrics": {"v": r"(\d+)"}},
            "variables": {"x": [1, 2]}, key: value}  # fmt: skip
    path.write_text(yaml.safe_dump(data))
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(path)], capture_output=True, text=True)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and f"renamed: write {new}" in lines[0], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]  # nothing written


def test_machine_drift_and_busy_machine_flags():
    from perfsnake.stages.analysis import machine_drift_flags

    def run(start, load, other, wall=1.0):
        return {"start_epoch": start, "wall_s": wall, "machine": {"load1": load, "other_cpu_s": other}}

    quiet = [run(i, 0.2, 0.05) for i in range(10)]
    assert machine_drift_flags(quiet[:3], quiet) == []
    late = [run(100 + i, 3.5, 1.4) for i in range(3)]
    flags = machine_drift_flags(late, quiet + late)
    assert any(f.startswith("busy machine: other processes used 1.4 CPUs") for f in flags)
    assert any(f.startswith("machine drift: load 3.5") for f in flags)
    assert machine_drift_flags([{"wall_s": 1.0}], quiet) == []
