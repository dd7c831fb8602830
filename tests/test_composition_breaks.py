"""Issue 44's composition breaks 4 to 6, through the real workflow: features
that each work alone and broke when combined (a command hook's metrics and
the statistics; a variable named like a statistics column; numeric pretty
keys)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from helpers import snakemake, write_campaign

pytestmark = pytest.mark.e2e


def summary(base: Path) -> list[dict[str, str]]:
    with (base / "summary.csv").open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("batch", [1, 3])
def test_command_hook_metrics_are_numbers_in_the_statistics(tmp_path, batch):
    """Break 4: a command hook's metric is a number like a benchmark's, so
    it has its summary.csv rows, its comparisons and its gate, batched or not."""
    hook = {"type": "command", "name": "prep", "command": "echo free_kb=$(( {x} * 1000 ))",
            "metrics": {"free_kb": r"free_kb=(\d+)"}}  # fmt: skip
    camp = write_campaign(tmp_path, {
        "name": "c",
        "benchmark": {"type": "command", "command": "echo value={x}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1, 2]},
        "nb_runs": 2,
        "batch": batch,
        "pre_run_hooks": [hook],
        "references": [{"metric": "hook.prep.free_kb", "where": {"x": 1}, "lower": 500, "upper": 1500}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results" / "c"
    result = json.loads((base / "runs" / "x-2" / "run-1" / "result.json").read_text())
    assert result["metrics"]["hook.prep.free_kb"] == 2000
    rows = {r["x"]: r for r in summary(base) if r["metric"] == "hook.prep.free_kb"}
    assert set(rows) == {"1", "2"}
    assert float(rows["2"]["mean"]) == 2000 and rows["2"]["n"] == "2"
    assert float(rows["1"]["mean_ci_low"]) == float(rows["1"]["mean_ci_high"]) == 1000
    assert rows["1"]["verdict"] == "pass"
    with (base / "comparisons.csv").open() as f:
        compared = [r for r in csv.DictReader(f) if r["metric"] == "hook.prep.free_kb"]
    assert len(compared) == 1 and float(compared[0]["relative_difference"]) == pytest.approx(1.0)
    with (base / "gates.csv").open() as f:
        assert [(g["metric"], g["verdict"]) for g in csv.DictReader(f)] == [("hook.prep.free_kb", "pass")]


def test_variable_named_like_a_statistics_column_keeps_its_values(tmp_path):
    """Break 5: variables `n` and `mean` (a problem size, a mode) keep their
    values in summary.csv, the tables to paste and compare.md; the
    statistics' own n and mean stay beside them and the baseline ratios stay."""
    data = {
        "name": "c",
        "benchmark": {"type": "command", "command": "echo value={n}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"n": [10, 20], "mean": ["a", "b"]},
        "nb_runs": 2,
        "statistics": {"baseline": {"n": 10}},
    }
    camp = write_campaign(tmp_path, data)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results" / "c"
    rows = [r for r in summary(base) if r["metric"] == "value"]
    assert sorted((r["n"], r["mean"]) for r in rows) == [("10", "a"), ("10", "b"), ("20", "a"), ("20", "b")]
    for r in rows:
        # The statistics' columns, renamed beside the variables they would hide.
        assert r["stat.n"] == "2" and float(r["stat.mean"]) == float(r["n"])
        assert float(r["median"]) == float(r["n"])
    md = (base / "summary.md").read_text()
    lines = [line for line in md.splitlines() if "| value |" in line]
    assert len(lines) == 4, md
    head = md.splitlines()[0]
    assert head.split("|")[1:4] == [" n ", " mean ", " metric "], head
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[0] in ("10", "20") and cells[1] in ("a", "b"), line
        assert cells[-1] == ("1.00x (baseline)" if cells[0] == "10" else "2.00x"), line
    for table in ("summary.tex", "summary.org"):
        text = (base / table).read_text()
        assert "2.00x" in text and "stat.n" in text, table
    # compare_with: the same parameter space earlier (a copy) against now.
    shutil.copytree(base, tmp_path / "earlier" / "c")
    camp = write_campaign(tmp_path, {**data, "compare_with": [str(tmp_path / "earlier" / "c")]})
    snakemake(tmp_path, camp, "--cores", "1", "all")
    md = (base / "compare" / "compare.md").read_text()
    per_record = md.split("## Per record and metric", 1)[1]
    table = [line for line in per_record.splitlines() if line.startswith("| ")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    assert head[:3] == ["n", "mean", "metric"] and "stat.n" in head and "stat.mean" in head, head
    values = [dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True)) for line in table[2:]]
    mine = [v for v in values if v["metric"] == "value"]
    assert sorted({(v["n"], v["mean"]) for v in mine}) == [("10", "a"), ("10", "b"), ("20", "a"), ("20", "b")]
    assert all(v["stat.n"] == "2" and float(v["stat.mean"]) == float(v["n"]) for v in mine)
    assert all(v["ratio"] == "1" for v in mine if v["side"] == "2")


def test_numeric_pretty_keys_label_their_values(tmp_path):
    """Break 6: `pretty: {iters: {100000: 100k}}` (YAML's int key) names a
    value of iters, as would `1000.0`; the labels show in the tables and plots."""
    camp = write_campaign(tmp_path, {
        "name": "c",
        "benchmark": {"type": "command", "command": "echo value={iters}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"iters": [1000, 100000]},
        "nb_runs": 2,
        "pretty": {"iters": {100000: "100k", 1000.0: "1k"}},
        "plots": [{"kind": "bar", "x": "iters", "y": "value", "name": "bars"}],
    })  # fmt: skip
    assert "100000: 100k" in camp.read_text() and "1000.0: 1k" in camp.read_text()
    snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results" / "c"
    md = (base / "summary.md").read_text()
    assert "| 100k |" in md and "| 1k |" in md and "100000 |" not in md, md
    svg = (base / "plots" / "bars.svg").read_text()
    assert ">100k<" in svg and ">1k<" in svg


def test_variables_named_like_gate_columns_keep_their_values(tmp_path):
    """Break 5, the gates: variables `metric` and `value` keep their values in
    gates.csv beside the gate's own metric and value, and the verdict reaches
    the record's summary.csv row and significant.md."""
    camp = write_campaign(tmp_path, {
        "name": "c",
        "benchmark": {"type": "command", "command": "echo ops={value}", "metrics": {"ops": r"ops=(\S+)"}},
        "variables": {"metric": ["a", "b"], "value": [1, 2]},
        "nb_runs": 2,
        "references": [{"metric": "ops", "where": {"metric": "a"}, "lower": 0.5, "upper": 2.5}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results" / "c"
    with (base / "gates.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(g["metric"], g["value"], g["stat.metric"], float(g["stat.value"]), g["verdict"]) for g in rows] == [
        ("a", "1", "ops", 1.0, "pass"),
        ("a", "2", "ops", 2.0, "pass"),
    ]
    verdicts = {(r["metric"], r["value"]): r["verdict"] for r in summary(base) if r["stat.metric"] == "ops"}
    assert verdicts == {("a", "1"): "pass", ("a", "2"): "pass", ("b", "1"): "", ("b", "2"): ""}
    text = (base / "significant.md").read_text()
    assert "PASS: gate 0, ops (metric=a, value=1): mean 1" in text, text
