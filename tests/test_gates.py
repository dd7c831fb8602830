"""Reference gates (`references:`), their verdicts and `perfsnake check`."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT, env_without_snakemake, snakemake, write_campaign

from perfsnake import gates
from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError

OPTS = {"confidence": 0.95, "autocorrelation_threshold": 0.1, "alpha": 0.05, "statistic": "mean"}


def verdict(ref: dict, x, base=None) -> str:
    samples = {"m": {("a",): np.asarray(x, dtype=float)}}
    if base is not None:
        samples["m"][("b",)] = np.asarray(base, dtype=float)
    ref = {"index": 0, "metric": "m", "where": {"v": "a"}, **ref}
    (row,) = gates.evaluate([ref], samples, ["v"], OPTS)
    return str(row["verdict"])


def test_absolute_bounds_on_the_interval():
    rng = np.random.default_rng(1)
    x = rng.normal(100, 1, 20)  # mean CI about [99.5, 100.9]
    assert verdict({"kind": "absolute", "lower": 95, "upper": 105}, x) == "pass"
    assert verdict({"kind": "absolute", "lower": 110, "upper": None}, x) == "fail"
    assert verdict({"kind": "absolute", "lower": None, "upper": 100.2}, x) == "inconclusive"
    assert verdict({"kind": "absolute", "lower": 95, "upper": 105}, [100]) == "inconclusive"  # one run


@pytest.mark.parametrize(
    ("better", "shift", "expected"),
    [("higher", -20, "fail"), ("higher", +20, "pass"), ("lower", +20, "fail"), ("lower", -20, "pass"),
     ("higher", -5, "inconclusive")],
)  # fmt: skip
def test_baseline_gates_use_the_interval_of_the_difference(better, shift, expected):
    rng = np.random.default_rng(7)
    base = rng.normal(100, 2, 15)
    x = rng.normal(100 + shift, 2, 15)
    ref = {"kind": "baseline", "baseline": {"v": "b"}, "max_regression": 0.05, "better": better}
    assert verdict(ref, x, base) == expected


def test_worst_verdict():
    assert gates.worst(["pass", "inconclusive"]) == "inconclusive" and gates.worst(["fail", "pass"]) == "fail"


def campaign(**extra: object) -> dict:
    # A deterministic metric: the verdicts cannot flip on a loaded machine.
    return {
        "name": "g",
        "benchmark": {"type": "command", "command": "echo cost={work}", "metrics": {"cost": r"cost=(\d+)"}},
        "variables": {"work": [100, 120]},
        "nb_runs": 3,
        **extra,
    }


@pytest.mark.parametrize(
    ("refs", "key", "problem"),
    [
        ([{"metric": "costt", "lower": 1}], "references[0].metric", "did you mean 'cost'"),
        ([{"metric": "cost", "where": {"work": 7}, "lower": 1}], "references[0].where", "selects no record"),
        ([{"metric": "cost", "baseline": {"work": 100}}], "references[0].max_regression", "needs the regression"),
        ([{"metric": "cost", "baseline": {"work": 100}, "max_regression": "lots"}], "references[0].max_regression", "not a percentage"),
        ([{"metric": "cost", "baseline": {"work": 100}, "max_regression": "5%"}], "references[0].better", "higher or lower"),
        ([{"metric": "cost", "baseline": {"wrk": 100}, "max_regression": "5%", "better": "lower"}], "references[0]", "not a variable"),
        ([{"metric": "cost"}], "references[0]", "set lower and/or upper"),
    ],
)  # fmt: skip
def test_bad_references_are_refused_in_one_line(tmp_path, refs, key, problem):
    with pytest.raises(CampaignError) as info:
        load_campaign(write_campaign(tmp_path, campaign(references=refs)))
    assert info.value.key == key and problem in info.value.problem, str(info.value)


def check(workdir, camp, *args: str) -> subprocess.CompletedProcess:
    env = {**env_without_snakemake(), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "perfsnake", "check", *args, "--config", f"campaign={camp}"]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.e2e
def test_gates_end_to_end_and_perfsnake_check(tmp_path):
    refs = [
        {"metric": "cost", "where": {"work": 100}, "lower": 90, "upper": 110},
        {
            "metric": "cost",
            "where": {"work": 120},
            "baseline": {"work": 100},
            "max_regression": "5%",
            "better": "lower",
        },
    ]
    camp = write_campaign(tmp_path, campaign(references=refs))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert "gates: 1 pass, 1 fail" in proc.stdout + proc.stderr
    with (tmp_path / "results/g/gates.csv").open() as f:
        rows = {r["gate"]: r for r in csv.DictReader(f)}
    assert rows["0"]["verdict"] == "pass" and rows["1"]["verdict"] == "fail"
    with (tmp_path / "results/g/summary.csv").open() as f:
        summary = {(r["work"], r["metric"]): r["verdict"] for r in csv.DictReader(f)}
    assert (
        summary[("100", "cost")] == "pass" and summary[("120", "cost")] == "fail" and summary[("100", "wall_s")] == ""
    )
    assert "- FAIL: gate 1, cost (work=120)" in (tmp_path / "results/g/significant.md").read_text()
    out = check(tmp_path, camp)
    assert out.returncode == 1 and out.stdout.count("FAIL") == 1 and "work=120" in out.stdout, out.stdout + out.stderr
    # The same campaign gated on an earlier result directory: unchanged, so it passes.
    shutil.copytree(tmp_path / "results", tmp_path / "old" / "results")
    refs = [{"metric": "cost", "baseline": "old/results", "max_regression": "5%", "better": "lower"}]
    write_campaign(tmp_path, campaign(references=refs))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert "rule run:" not in proc.stdout + proc.stderr  # only the analysis re-ran
    out = check(tmp_path, camp)
    assert out.returncode == 0 and "2 gate(s) passed" in out.stdout, out.stdout + out.stderr


def test_check_before_the_campaign_ran_says_so(tmp_path):
    camp = write_campaign(tmp_path, campaign(references=[{"metric": "cost", "lower": 1}]))
    out = check(tmp_path, camp)
    assert out.returncode == 2 and "run the campaign first" in out.stderr


@pytest.mark.e2e
def test_check_inconclusive_fail_counts_an_inconclusive_gate_as_a_failure(tmp_path):
    """`perfsnake check --inconclusive fail` exits 1 on an inconclusive gate;
    without it (or with `pass`) the gate is listed and check exits 0."""
    # Deterministic values, each run its number (1, 2, 3): mean 2, its interval
    # about [0, 4.5], so `lower: 1.5` is straddled and `upper: 100` is met.
    data = {
        "name": "g",
        "benchmark": {"type": "command", "command": 'echo x={work} cost=$(basename "$PWD" | tr -dc 0-9)',
                      "metrics": {"cost": r"cost=(\d+)"}},
        "variables": {"work": [1]},
        "nb_runs": 3,
        "references": [{"metric": "cost", "lower": 1.5}, {"metric": "cost", "upper": 100}],
    }  # fmt: skip
    camp = write_campaign(tmp_path, data)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    with (tmp_path / "results/g/gates.csv").open() as f:
        assert [r["verdict"] for r in csv.DictReader(f)] == ["inconclusive", "pass"]
    default, lenient, strict = (check(tmp_path, camp, *args) for args in ((), ("--inconclusive", "pass"),
                                                                           ("--inconclusive", "fail")))  # fmt: skip
    for out in (default, lenient, strict):
        # Every invocation lists the one gate that did not pass, and only it.
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("g: ")]
        assert len(lines) == 1 and lines[0].startswith("g: INCONCLUSIVE: gate 0, cost"), out.stdout + out.stderr
    assert (default.returncode, lenient.returncode, strict.returncode) == (0, 0, 1)
