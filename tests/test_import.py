"""perfsnake import: hyperfine, Google Benchmark, Criterion and pyperf results
(files the real tools wrote, tests/data/import/README.md) as campaigns."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import ROOT, jobs_run, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.campaign_csv import read_results, read_results_metadata
from perfsnake.errors import CampaignError
from perfsnake.importers import ImportFormatError, read

DATA = ROOT / "tests" / "data" / "import"


def _json(name: str) -> dict:
    return json.loads((DATA / name).read_text())


# ---- each tool's files, read as the tool meant them --------------------------------------
def test_hyperfine_parameter_scan_keeps_every_run_and_its_parameters():
    data = read("hyperfine", [DATA / "hyperfine_scan.json"], "t")
    raw = _json("hyperfine_scan.json")["results"]
    assert data.variables == ["ms"] and data.metrics == ["memory_bytes"]
    for result in raw:
        rows = [r for r in data.rows if r.record == result["parameters"]]
        assert [r.wall_s for r in rows] == result["times"]
        # hyperfine's own mean, from the same runs
        assert np.mean([r.wall_s for r in rows]) == pytest.approx(result["mean"], rel=1e-12)
        assert [r.metrics["memory_bytes"] for r in rows] == result["memory_usage_byte"]


def test_hyperfine_commands_and_failed_runs():
    data = read("hyperfine", [DATA / "hyperfine_commands.json", DATA / "hyperfine_failed.json"], "t")
    assert data.variables == ["command"]
    commands = list(dict.fromkeys(str(r.record["command"]) for r in data.rows))
    assert commands == ["true", 'sh -c "exit 0"', 'sh -c "exit 3"']
    failed = [r for r in data.rows if r.status == "failed"]
    assert len(failed) == 4 and {r.exit_code for r in failed} == {3} and failed[0].reason == "exit code 3"


def test_google_benchmark_repetitions_not_its_aggregates():
    data = read("google-benchmark", [DATA / "google_benchmark.json"], "t")
    raw = _json("google_benchmark.json")["benchmarks"]
    assert data.variables == ["function", "args"]
    assert len(data.rows) == sum(1 for b in raw if b["run_type"] == "iteration") == 15
    for name, (function, args) in {"BM_sum/4000": ("BM_sum", "4000"), "BM_copy": ("BM_copy", "-")}.items():
        ours = [r.metrics["real_time_ns"] for r in data.rows if r.record == {"function": function, "args": args}]
        theirs = next(b for b in raw if b["name"] == f"{name}_mean")
        assert len(ours) == 5 and np.mean(ours) == pytest.approx(theirs["real_time"], rel=1e-9)
    assert "items_per_second" in data.metrics and data.context["hostname"] == "vm"
    assert data.context["utc_time"] == _json("google_benchmark.json")["context"]["date"]


def test_criterion_samples_are_time_per_iteration():
    data = read("criterion", [DATA / "criterion"], "t")
    assert data.variables == ["group", "function"]  # no parameterised benchmark: no empty `value`
    sample = _json("criterion/sum/4000/new/sample.json")
    ours = [r.metrics["time_ns"] for r in data.rows if r.record == {"group": "sum", "function": "4000"}]
    assert ours == pytest.approx([t / n for n, t in zip(sample["iters"], sample["times"], strict=True)])
    # one sample.json, named by the benchmark.json beside it
    one = read("criterion", [DATA / "criterion/sum/1000/new/sample.json"], "t")
    assert {str(r.record["function"]) for r in one.rows} == {"1000"} and len(one.rows) == 10


def test_pyperf_values_of_every_worker(tmp_path):
    data = read("pyperf", [DATA / "pyperf.json"], "t")
    raw = _json("pyperf.json")
    assert data.variables == ["name"] and data.metrics == ["time_s"]
    for bench in raw["benchmarks"]:
        values = [v for run in bench["runs"] for v in run.get("values", [])]
        ours = [r.metrics["time_s"] for r in data.rows if r.record == {"name": bench["metadata"]["name"]}]
        assert ours == values and len(ours) == 12
    gz = tmp_path / "p.json.gz"
    gz.write_bytes(gzip.compress((DATA / "pyperf.json").read_bytes()))
    assert len(read("pyperf", [gz], "t").rows) == len(data.rows)


# ---- what is not the tool's output is refused in one line ------------------------------
@pytest.mark.parametrize(
    ("tool", "content", "message"),
    [
        ("hyperfine", "not json", "not JSON"),
        ("hyperfine", {"results": [{"command": "true", "mean": 1.0}]}, "results[0].times: missing: per-run times"),
        ("hyperfine", {"results": [{"command": "true", "times": [1.0, "x"]}]}, "results[0].times[1]: expected a number"),
        ("hyperfine", {"results": []}, "results: empty"),
        ("hyperfine", {"benchmarks": []}, "results: missing"),
        ("google-benchmark", {"context": {}, "benchmarks": [{"name": "a_mean", "run_type": "aggregate"}]},
         "no run_type: iteration row"),
        ("google-benchmark", {"context": {}, "benchmarks": [{"name": "a", "real_time": 1, "cpu_time": 1,
                                                             "iterations": 3, "time_unit": "fs"}]},
         "benchmarks[0].time_unit: unknown unit 'fs'"),
        ("google-benchmark", {"benchmarks": []}, "context: missing"),
        ("pyperf", {"version": "1.0", "benchmarks": [{"metadata": {"name": "a", "unit": "furlong"}, "runs": []}]},
         "benchmarks[0].metadata.unit: unknown unit 'furlong'"),
        ("pyperf", {"version": "1.0", "benchmarks": [{"metadata": {}, "runs": []}]}, "benchmarks[0].metadata.name: missing"),
        ("criterion", {"iters": [1.0, 2.0], "times": [1.0]}, "times: 1 times for 2 iteration counts"),
    ],
)  # fmt: skip
def test_malformed_files_are_refused_in_one_line(tmp_path, tool, content, message):
    path = tmp_path / ("sample.json" if tool == "criterion" else "f.json")
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ImportFormatError) as info:
        read(tool, [path], "t")
    text = str(info.value)
    assert text.startswith(str(path)) and message in text and "\n" not in text


def test_cli_refuses_a_bad_file_and_writes_nothing(tmp_path):
    bad = tmp_path / "h.json"
    bad.write_text(json.dumps({"results": [{"command": "true"}]}))
    proc = subprocess.run(
        [sys.executable, "-m", "perfsnake", "import", "hyperfine", str(bad), "--campaign", "h"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "results[0].times: missing" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.json"]
    wrong = subprocess.run(
        [sys.executable, "-m", "perfsnake", "import", "pyperf", str(DATA / "hyperfine_scan.json"), "--campaign", "h"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert wrong.returncode == 1 and "version: missing" in wrong.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.json"]


def test_an_imported_campaign_takes_no_variables(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "x", "variables": {"ms": [1]},
        "benchmark": {"type": "imported", "tool": "hyperfine", "files": [str(DATA / "hyperfine_scan.json")]},
    })  # fmt: skip
    with pytest.raises(CampaignError, match=r"c.yaml: variables: not for an imported campaign"):
        load_campaign(camp)
    camp = write_campaign(tmp_path, {
        "name": "x", "benchmark": {"type": "imported", "tool": "perf", "files": ["a.json"]},
    })  # fmt: skip
    with pytest.raises(CampaignError, match=r"benchmark.tool: 'perf' is not one of"):
        load_campaign(camp)


# ---- end to end: a result directory like a native campaign's, and compare --------------
def _import(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    # This checkout's package, as the workflow under test uses (not whichever the venv installed).
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "perfsnake", "import", *args], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip


@pytest.mark.e2e
def test_every_tool_becomes_a_result_directory(tmp_path):
    shutil.copytree(DATA, tmp_path / "data")
    made = {
        "gb": ("google-benchmark", "data/google_benchmark.json", "real_time_ns", ["function", "args"]),
        "crit": ("criterion", "data/criterion", "time_ns", ["group", "function"]),
        "pp": ("pyperf", "data/pyperf.json", "time_s", ["name"]),
        "hf": ("hyperfine", "data/hyperfine_commands.json", "wall_s", ["command"]),
    }
    for name, (tool, path, metric, variables) in made.items():
        proc = _import(tmp_path, tool, path, "--campaign", name)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = tmp_path / "results" / name
        meta, runs = read_results_metadata(out / f"{name}.csv"), read_results(out / f"{name}.csv")
        assert meta["imported_tool"] == tool and meta["benchmark"] == "imported"
        assert list(runs.columns[2 : 2 + len(variables)]) == variables and (runs["status"] == "ok").all()
        summary = pd.read_csv(out / "summary.csv")
        assert set(summary["metric"]) >= {metric}
        rows = summary[summary["metric"] == metric]
        assert (rows["n"] >= 5).all() and (rows["mean_ci_low"] <= rows["mean"]).all()
        comparisons = pd.read_csv(out / "comparisons.csv")
        assert "p_adjusted" in comparisons
        plots = list((out / "plots").iterdir())
        assert {p.suffix for p in plots} == {".svg", ".png", ".pdf"}
        assert f"{name}: " in proc.stdout and "ok" in proc.stdout
    # Google Benchmark's own means, recomputed from its repetitions
    gb = pd.read_csv(tmp_path / "results/gb/summary.csv", keep_default_na=False)
    raw = json.loads((DATA / "google_benchmark.json").read_text())["benchmarks"]
    mean = float(gb[(gb["args"].astype(str) == "4000") & (gb["metric"] == "real_time_ns")]["mean"].iloc[0])
    assert mean == pytest.approx(next(b["real_time"] for b in raw if b["name"] == "BM_sum/4000_mean"), rel=1e-9)
    # made once; an edited file is read again, through the same rules as runs
    pp = Path("config/campaigns/pp.yaml")
    again = snakemake(tmp_path, pp, "--cores", "1", "all")
    reasons = [ln for ln in (again.stdout + again.stderr).splitlines() if "reason" in ln.lower()]
    assert sum(jobs_run(again, r) for r in ("collect", "aggregate", "analyse", "plot")) == 0, reasons
    raw = json.loads((tmp_path / "data/pyperf.json").read_text())
    del raw["benchmarks"][0]["runs"][-1]  # one worker's 3 values fewer
    (tmp_path / "data/pyperf.json").write_text(json.dumps(raw))
    assert jobs_run(snakemake(tmp_path, pp, "--cores", "1", "all"), "collect") == 1
    assert len(read_results(tmp_path / "results/pp/pp.csv")) == 24 - 3


@pytest.mark.e2e
def test_imported_failures_are_loud_and_compare_with_a_native_campaign(tmp_path):
    shutil.copytree(DATA, tmp_path / "data")
    proc = _import(tmp_path, "hyperfine", "data/hyperfine_scan.json", "--campaign", "hf")
    assert proc.returncode == 0, proc.stderr[-3000:]
    failed = _import(tmp_path, "hyperfine", "data/hyperfine_failed.json", "--campaign", "bad")
    assert "4 imported run(s) failed in their own tool" in failed.stdout + failed.stderr
    bad = read_results(tmp_path / "results/bad/bad.csv")
    assert list(bad["status"]) == ["failed"] * 4 and list(bad["exit_code"]) == [3] * 4
    # the same commands measured by perfsnake's launcher
    native = write_campaign(tmp_path, {
        "name": "native", "benchmark": {"type": "command", "command": "sleep 0.00{ms}"},
        "variables": {"ms": [1, 2, 3]}, "nb_runs": 4,
    })  # fmt: skip
    snakemake(tmp_path, native, "--cores", "1", "all")
    out = tmp_path / "cmp"
    cmp = subprocess.run([sys.executable, "-m", "perfsnake", "compare", "results/hf", "results/native",
                          "--output", str(out)], cwd=tmp_path, capture_output=True, text=True, check=False)  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    table = pd.read_csv(out / "compare.csv")
    second = table[(table["side"] == 2) & (table["metric"] == "wall_s")]
    assert sorted(second["ms"].astype(str)) == ["1", "2", "3"] and second["ratio"].notna().all()
    assert "hf vs native" in cmp.stdout and "hyperfine, imported" in cmp.stdout
    # The imported side recorded no machine state: compare says it cannot tell, never "the same".
    report = (out / "compare.md").read_text()
    assert "UNKNOWN: side 1 recorded no machine state" in report and "The same on every side" not in report
    # different parameter spaces are refused in one line
    other = subprocess.run([sys.executable, "-m", "perfsnake", "compare", "results/hf", "results/bad"],
                           cwd=tmp_path, capture_output=True, text=True, check=False)  # fmt: skip
    assert other.returncode == 2 and other.stderr.count("\n") == 1 and "one parameter space" in other.stderr
