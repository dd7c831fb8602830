"""Why it changed: profile_differences profiles both sides of the largest
significant differences and names the functions that changed."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from helpers import ROOT, jobs_run, skip_without_flame_tools, snakemake, write_campaign

from perfsnake import profile_differences
from perfsnake.campaign import load_campaigns
from perfsnake.campaign_csv import read_results
from perfsnake.errors import CampaignError
from perfsnake.machine import capabilities


def test_pick_takes_the_largest_significant_differences_once_per_pair():
    rows = [
        {"metric": "m", "record_a": "x-1", "record_b": "x-2", "relative_difference": "0.5", "significant": "True"},
        {"metric": "n", "record_a": "x-1", "record_b": "x-2", "relative_difference": "-0.9", "significant": "True"},
        {"metric": "m", "record_a": "x-1", "record_b": "x-3", "relative_difference": "2.0", "significant": "False"},
        {"metric": "m", "record_a": "x-2", "record_b": "x-3", "relative_difference": "0.1", "significant": "True"},
    ]
    picked = profile_differences.pick(rows, 5)
    assert [(r["metric"], r["record_b"]) for r in picked] == [("n", "x-2"), ("m", "x-3")]
    assert profile_differences.pick(rows, 1) == [rows[1]]


def test_symbol_table_ranks_own_samples_per_run():
    a = "prog;main;work 90\nprog;main;other 10\n"
    b = "prog;main;work 92\nprog;main;planted 100\nprog;main;other 9\n"
    table = profile_differences.symbol_table(a, b, limit=2, runs_a=2, runs_b=2)
    assert [r["symbol"] for r in table] == ["planted", "work"]
    top = table[0]
    assert top["per_run_a"] == 0 and top["per_run_b"] == 50 and top["colour"] == profile_differences.GREW
    assert table[1]["share_b"] == pytest.approx(92 / 201) and table[1]["delta"] == pytest.approx(92 / 201 - 0.9)
    assert profile_differences.symbol_table("", b) == []


def _campaign(tmp_path, **extra):
    return write_campaign(tmp_path, {
        "name": "planted",
        "benchmark": {
            "type": "command",
            "source": {"path": str(ROOT / "src/demo")},
            "build": "cc -O2 -fno-omit-frame-pointer -fno-inline -o {build_dir}/planted {src_dir}/planted.c",
            # The score separates the variants by construction (100 vs 200, plus
            # the pid's jitter): which difference is significant does not depend
            # on this machine's speed; the profile of the planted loop is what is tested.
            "command": "{build_dir}/planted {variant} 150000000 && case {variant} in hot) b=200;; *) b=100;; esac; "
                       "echo score=$((b + $$ % 7))",
            "metrics": {"score": r"score=(\d+)"},
        },
        "variables": {"variant": ["plain", "hot"]},
        "nb_runs": 4,
        "statistics": {"metrics": ["score"]},
        **extra,
    })  # fmt: skip


@pytest.mark.e2e
def test_a_planted_loop_is_named_at_the_top_of_its_differential_profile(tmp_path):
    skip_without_flame_tools()
    camp = _campaign(tmp_path, profile_differences={"top": 2, "runs": 2})
    snakemake(tmp_path, camp, "--cores", "1", "all")
    out = tmp_path / "results/planted"
    pairs = json.loads((out / "why/pairs.json").read_text())
    assert [(p["metric"], p["a"], p["b"]) for p in pairs] == [("score", "plain", "hot")]
    table = pd.read_csv(out / "why/variant-plain~vs~variant-hot.csv")
    top = table.iloc[0]
    assert top["symbol"] == "planted_hot_loop" and top["per_run_a"] == 0 and top["per_run_b"] > 0
    assert top["colour"] == profile_differences.GREW
    assert (tmp_path / "results/planted__why/diff/variant-plain~vs~variant-hot.svg").stat().st_size > 0
    text = (out / "why/why.md").read_text()
    assert "planted_hot_loop" in text and "score: variant plain -> hot" in text
    assert "why: differential profile in why/why.md" in (out / "significant.md").read_text()
    comparisons = pd.read_csv(out / "comparisons.csv")
    assert list(comparisons["profile"]) == ["why/variant-plain~vs~variant-hot.csv"]
    page = (out / "report/why.html").read_text()
    assert "data:image/svg+xml;base64," in page and "planted_hot_loop" in page
    # The profiled runs are the derived campaign's, never the statistics'.
    assert len(read_results(out / "planted.csv")) == 8
    assert len(list((tmp_path / "results/planted__why/runs").glob("*/run-*/perf.data"))) == 4
    # Resumable: nothing left to do.
    again = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(again, "run") == 0 and jobs_run(again, "why_report") == 0


def test_an_event_perf_cannot_sample_here_is_refused_in_one_line(tmp_path):
    camp = _campaign(tmp_path, profile_differences={"event": "no-such-event"})
    with pytest.raises(CampaignError, match=r"profile_differences.event: perf does not know the event"):
        load_campaigns([str(camp)])
    if not capabilities.hardware_pmu():
        camp = _campaign(tmp_path, profile_differences={"event": "cycles"})
        with pytest.raises(CampaignError, match=r"'cycles' needs a hardware PMU"):
            load_campaigns([str(camp)])
