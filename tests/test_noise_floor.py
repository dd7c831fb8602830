"""Is the change real: the layout noise floor (`noise_floor`). The statistics
on seeded simulations with known truth and against scipy; the campaign's
checks; a program whose speed depends on one function's place, built with
shuffled function orders end to end."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, snakemake, write_campaign
from scipy import stats

from perfsnake import noise_floor
from perfsnake.campaign import load_campaigns
from perfsnake.errors import CampaignError
from perfsnake.statistics.noise_floor import layout_floor


def simulate(rng: np.random.Generator, layouts: int, runs: int, between: float, within: float) -> list[np.ndarray]:
    """Runs of one record: mean 100, a layout effect of sd `between`, run noise of sd `within`."""
    return [100 + rng.normal(0, between) + rng.normal(0, within, runs) for _ in range(layouts)]


@pytest.mark.parametrize("layouts,runs,between", [(4, 3, 2.0), (6, 4, 1.0), (8, 5, 0.5)])
def test_floor_recovers_a_known_layout_effect_and_its_interval_covers_it(layouts, runs, between):
    rng = np.random.default_rng(20090307)
    truth = stats.norm.ppf(0.975) * math.sqrt(2) * between / 100
    found = [layout_floor(simulate(rng, layouts, runs, between, 1.0)) for _ in range(600)]
    estimates = np.array([f.floor for f in found])
    covered = np.mean([f.low <= truth <= f.high for f in found])
    # The square root of an unbiased variance estimate, truncated at zero, runs a little low.
    assert 0.8 * truth < estimates.mean() < 1.05 * truth
    assert 0.92 <= covered <= 0.98


def test_floor_statistics_agree_with_scipy():
    rng = np.random.default_rng(7)
    groups = simulate(rng, 5, 4, 1.5, 1.0)
    found = layout_floor(groups)
    assert found.f_statistic == pytest.approx(stats.f_oneway(*groups).statistic, rel=1e-9)
    assert found.within_sd**2 == pytest.approx(np.mean([np.var(g, ddof=1) for g in groups]), rel=1e-9)
    assert found.layout_means == pytest.approx([g.mean() for g in groups])


def test_no_layout_effect_gives_a_floor_near_zero_whose_interval_reaches_zero():
    rng = np.random.default_rng(11)
    found = [layout_floor(simulate(rng, 4, 3, 0.0, 1.0)) for _ in range(300)]
    assert np.mean([f.low == 0 for f in found]) > 0.95
    assert np.median([f.floor for f in found]) < 0.02


def test_a_deterministic_metric_has_an_exact_floor():
    found = layout_floor([[100.0, 100.0], [110.0, 110.0], [100.0, 100.0], [110.0, 110.0]])
    assert found.within_sd == 0 and math.isinf(found.f_statistic)
    assert found.floor == pytest.approx(stats.norm.ppf(0.975) * math.sqrt(2) * math.sqrt(100 / 3) / 105)
    assert found.low < found.floor < found.high
    assert layout_floor([[1.0, 2.0]]) is None


def test_within_needs_every_floor():
    assert noise_floor.within(0.02, 0.03, 0.05) and not noise_floor.within(0.04, 0.03, 0.05)
    assert (
        noise_floor.within(-0.02, 0.03) and not noise_floor.within(0.02, 0.03, math.nan) and not noise_floor.within(0.0)
    )


def test_comparisons_and_gates_are_marked():
    floors = {("v-1", "m"): 0.05, ("v-2", "m"): 0.04}
    rows = [
        {"metric": "m", "record_a": "v-1", "record_b": "v-2", "relative_difference": 0.03},
        {"metric": "m", "record_a": "v-1", "record_b": "v-2", "relative_difference": -0.045},
        {"metric": "m", "record_a": "v-1", "record_b": "v-3", "relative_difference": 0.01},
    ]
    noise_floor.mark_comparisons(rows, floors)
    assert [r.get("layout_noise") for r in rows] == [noise_floor.WITHIN, "beyond layout noise", None]
    assert rows[2]["floor_a"] == 0.05 and rows[2]["floor_b"] == ""
    gates = [
        {"v": "1", "metric": "m", "verdict": "fail", "difference": -3.0, "baseline_mean": 100.0, "reason": "r"},
        {"v": "2", "metric": "m", "verdict": "fail", "difference": -6.0, "baseline_mean": 100.0, "reason": "r"},
        {"v": "1", "metric": "m", "verdict": "fail", "kind": "absolute", "reason": "r"},
    ]
    noise_floor.mark_gates(gates, floors, ["v"])
    assert gates[0]["verdict"] == "inconclusive" and "-3.00% is within layout noise (floor 5.00%)" in gates[0]["reason"]
    assert gates[1]["verdict"] == "fail" and gates[2]["verdict"] == "fail"


def campaign(tmp_path: Path, **changes: object) -> dict:
    data = {
        "name": "nf",
        "benchmark": {
            "type": "command",
            "source": {"path": str(ROOT / "src/demo")},
            "build": "cc -O2 -Wall -Wextra -Werror -o {build_dir}/layout {src_dir}/layout.c",
            "command": "{build_dir}/layout 100 {label}",
            "metrics": {"iterations": r"iterations=(\d+)", "slot": r"slot=(\d+)"},
        },
        "variables": {"label": ["a", "b"]},
        "nb_runs": 2,
        "noise_floor": {"layouts": 4, "runs": 1},
        "plots": [],
    }
    data.update(changes)
    return data


@pytest.mark.parametrize("changes,key,problem", [
    ({"benchmark": "redis"}, "noise_floor", "redis is not built here"),
    ({"variables": {"label": ["a"], "layout": [1, 2]}}, "variables.layout", "the variable noise_floor adds"),
    ({"noise_floor": {"records": [{"label": "c"}]}}, "noise_floor.records[0]", "selects no record"),
    ({"noise_floor": {"records": [{"lable": "a"}]}}, "noise_floor.records[0]", "did you mean 'label'"),
    ({"noise_floor": {"layouts": 1}}, "noise_floor.layouts", ""),
])  # fmt: skip
def test_bad_noise_floor_is_refused_in_one_line(tmp_path, changes, key, problem):
    path = write_campaign(tmp_path, campaign(tmp_path, **changes))
    with pytest.raises(CampaignError) as info:
        load_campaigns([str(path)])
    assert info.value.key.startswith(key) and problem in info.value.problem and "\n" not in str(info.value)


def test_noise_floor_without_lld_says_so(tmp_path, monkeypatch):
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "ld.lld" else real(name, *a, **k))
    with pytest.raises(CampaignError, match=r"needs lld \(Debian package lld"):
        load_campaigns([str(write_campaign(tmp_path, campaign(tmp_path)))])


def test_the_floor_campaign_builds_each_layout_once_for_every_record(tmp_path):
    main, derived = load_campaigns([str(write_campaign(tmp_path, campaign(tmp_path)))])
    assert derived.name == "nf__floor" and derived.floor_of == "nf" and derived.nb_runs == 1
    assert [r.path for r in derived.records[:2]] == ["label-a/layout-1", "label-a/layout-2"]
    # The layout is the only build variable: four builds, shared by both labels.
    assert sorted({r.build_key for r in derived.records}) == [f"layout-{k}" for k in range(1, 5)]
    assert main.data["noise_floor"]["max_padding"] == 4096 and derived.data["noise_floor"] is None


@pytest.mark.e2e
def test_layout_builds_move_a_function_and_an_unchanged_program_never_differs(tmp_path):
    spec = campaign(tmp_path)
    snakemake(tmp_path, write_campaign(tmp_path, spec), "--cores", "1", "all")
    with (tmp_path / "results/nf/floor/noise_floor.csv").open() as f:
        rows = {(r["label"], r["metric"]): r for r in csv.DictReader(f)}
    # The program's calls depend on kernel()'s place: the shuffled builds put it in several.
    slots = {float(s) for s in rows[("a", "slot")]["layout_means"].split()}
    assert len(slots) >= 2 and float(rows[("a", "iterations")]["floor"]) > 0
    assert float(rows[("a", "iterations")]["floor_low"]) > 0
    # A/A: the same program under another label gives the same count at every layout.
    assert rows[("a", "iterations")]["layout_means"] == rows[("b", "iterations")]["layout_means"]
    runs = json.loads((tmp_path / "results/nf__floor/results.json").read_text())
    by_layout: dict[str, set] = {}
    for run in runs:
        by_layout.setdefault(run["variables"]["layout"], set()).add(run["metrics"]["iterations"])
    assert len(by_layout) == 4 and all(len(v) == 1 for v in by_layout.values())
    # Each layout build is its own binary, linked by lld with its seed; runs got their own padding.
    builds = sorted((tmp_path / "resources/builds").glob("*/layout-*/build.sh"))
    assert len(builds) == 4 and all("--shuffle-sections=.text.*=" in b.read_text() for b in builds)
    pads = {
        len(line.split("=", 1)[1])
        for c in (tmp_path / "results/nf__floor/runs").rglob("command.sh")
        for line in c.read_text().splitlines()
        if line.startswith("export PERFSNAKE_ENV_PAD=")
    }
    assert len(pads) > 1
    # The main campaign: a against b is no difference, and within the floor.
    with (tmp_path / "results/nf/comparisons.csv").open() as f:
        comps = {r["metric"]: r for r in csv.DictReader(f)}
    assert float(comps["iterations"]["relative_difference"]) == 0
    assert comps["iterations"]["layout_noise"] == noise_floor.WITHIN
    header = (tmp_path / "results/nf/floor/noise_floor.csv").read_text().splitlines()[0]
    assert header.startswith("label,metric,layouts,runs,mean,floor,floor_low,floor_high")
