"""The CSV and metadata writer."""

import json

import pandas as pd

from perfsnake.results import read_csv, read_metadata
from perfsnake.stages.aggregate import aggregate, rows_of


def result(run, metrics, status="ok", start=0.0, **variables):
    return {
        "campaign": "c", "benchmark": "command", "variables": variables, "run": run, "metrics": metrics,
        "status": status, "exit_code": 0 if status == "ok" else 1, "wall_s": 0.5,
        "start": f"t{start}", "end": f"t{start + 0.5}", "start_epoch": start, "end_epoch": start + 0.5,
        "run_dir": "/nonexistent",
    }  # fmt: skip


def test_header_is_the_union_of_keys_and_rows_are_never_ragged():
    results = [
        result(1, {"a": 1}, start=2, x=1),
        result(2, {"b": 2}, start=1, x=1),
        result(1, {}, "failed", start=3, x=2),
    ]
    rows, columns = rows_of(results, ["x"], ["a"])
    assert columns == ["campaign", "benchmark", "x", "run", "a", "b", "status", "exit_code", "wall_s", "start", "end"]
    assert all(list(r) == columns for r in rows)
    assert [r["start"] for r in rows] == ["t1", "t2", "t3"]  # in execution order


def test_csv_with_metadata_round_trips(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps([result(1, {"v": 1.5}, x="a,b"), result(1, {"v": None}, "timeout", start=1, x='q"uote')])
    )
    info = {
        "name": "c",
        "file": "c.yaml",
        "sha256": "ab" * 32,
        "benchmark": "command",
        "variables": ["x"],
        "metrics": ["v"],
    }
    csv, js, cmds = tmp_path / "c.csv", tmp_path / "c.json", tmp_path / "commands.sh"
    aggregate(results, info, csv, js, cmds)
    lines = csv.read_text().splitlines()
    assert lines[0].startswith("# metadata_lines: ") and lines[1].startswith("# campaign: c")
    assert not any(line.startswith("#") for line in lines[int(lines[0].split()[-1]) :])  # nothing below the header
    meta = read_metadata(csv)
    for key in ("utc_time", "hostname", "uname", "os_release", "cpu_model", "online_cpus", "smt", "numa_nodes", "memory",
                "cpufreq_governor", "perf_event_paranoid", "kernel_cmdline", "compiler", "python", "snakemake", "pandas",
                "perfsnake_commit", "perfsnake_tree", "campaign_sha256", "total_duration_s", "runs_ok", "runs_failed"):  # fmt: skip
        assert key in meta, key
    assert meta["runs_ok"] == "1" and meta["total_duration_s"] == "1.5"
    frame = read_csv(csv)
    assert list(frame["x"]) == ["a,b", 'q"uote']
    assert list(frame["status"]) == ["ok", "timeout"]
    assert pd.isna(frame["v"][1])
    rows = json.loads(js.read_text())
    assert rows["columns"] == list(frame.columns) and len(rows["rows"]) == 2
    assert cmds.read_text().startswith("#!/bin/sh")


def test_footer_names_the_hosts_that_measured():
    from perfsnake.stages.aggregate import footer

    runs = [
        {**result(1, {"a": 1}, x=1), "host": "node2"},
        {**result(2, {"a": 1}, x=1), "host": "node1"},
        result(3, {"a": 1}, x=1),
    ]
    assert footer(runs)["run_hosts"] == "node1,node2"
    assert "run_hosts" not in footer([result(1, {"a": 1}, x=1)])


HOSTILE = [
    "C#",
    "a,b",
    'say "hi"',
    "two\nlines",
    "  leading spaces",
    "trailing ",
    "ünïcødé ☃",
    "# not a comment",
    "NA",
    "null",
    "=1+1",
    "x;y|z&",
]


def test_hostile_values_read_back_exactly(tmp_path):
    results = tmp_path / "results.json"
    runs = [result(1, {"v": i, "label": text}, start=i, x=text) for i, text in enumerate(HOSTILE)]
    results.write_text(json.dumps(runs))
    info = {
        "name": "c",
        "file": "c.yaml",
        "sha256": "ab" * 32,
        "benchmark": "command",
        "variables": ["x"],
        "metrics": ["v", "label"],
    }
    csv = tmp_path / "c.csv"
    aggregate(results, info, csv, tmp_path / "c.json", tmp_path / "commands.sh")
    frame = read_csv(csv)
    assert (
        list(frame["x"]) == HOSTILE
        and list(frame["label"]) == HOSTILE
        and list(frame["v"]) == list(range(len(HOSTILE)))
    )
    # The same with pandas alone, as documented: skip the counted metadata lines.
    skip = int(csv.read_text().split("\n", 1)[0].split()[-1])
    plain = pd.read_csv(csv, skiprows=skip, keep_default_na=False, na_values=[""])
    assert list(plain["x"]) == HOSTILE
