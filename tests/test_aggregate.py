"""The CSV and metadata writer."""

import io
import json

import pandas as pd
import pytest
from helpers import snakemake, write_campaign

from perfsnake.campaign_csv import read_csv, read_metadata
from perfsnake.contract import CampaignInfo
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
    aggregate(results, CampaignInfo.from_dict(info), csv, js, cmds)
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
    aggregate(results, CampaignInfo.from_dict(info), csv, tmp_path / "c.json", tmp_path / "commands.sh")
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


def test_values_read_back_with_the_types_the_campaign_gave_them(tmp_path):
    # "" (no pinning) and "007" are strings the CSV cannot tell from a missing
    # value and a number; the campaign's JSON beside it can.
    results = tmp_path / "results.json"
    runs = [
        result(1, {"v": 1.5, "n": 3}, start=i, cpu_list=cpu, tag=tag, x=x, mixed=m)
        for i, (cpu, tag, x, m) in enumerate([("", "007", 1, 1), ("0", "010", 2, "a"), ("", "010", 1, "NA")])
    ]
    results.write_text(json.dumps(runs))
    info = {"name": "c", "file": "c.yaml", "sha256": "ab" * 32, "benchmark": "command",
            "variables": ["cpu_list", "tag", "x", "mixed"], "metrics": ["v", "n"]}  # fmt: skip
    csv = tmp_path / "c.csv"
    aggregate(results, CampaignInfo.from_dict(info), csv, tmp_path / "c.json", tmp_path / "commands.sh")
    frame = read_csv(csv)
    assert list(frame["cpu_list"]) == ["", "0", ""] and list(frame["tag"]) == ["007", "010", "010"]
    assert list(frame["mixed"]) == [1, "a", "NA"]
    for column in ("x", "n", "v", "exit_code", "wall_s"):
        assert pd.api.types.is_numeric_dtype(frame[column]), column
    assert list(frame["x"]) == [1, 2, 1] and frame["x"].dtype == "int64"
    # A text source has no JSON beside it: read as before.
    assert list(read_csv(io.StringIO(csv.read_text()))["tag"]) == [7, 10, 10]


@pytest.mark.e2e
def test_the_workflows_csv_reads_back_empty_and_numeric_looking_strings(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "types", "benchmark": {"type": "command", "command": "echo value={x}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"cpu_list": ["", "0"], "tag": ["007", "010"], "x": [1, 2.5]}, "nb_runs": 1,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/types/types.csv").sort_values(["cpu_list", "tag", "x"])
    assert list(frame["cpu_list"]) == ["", "", "", "", "0", "0", "0", "0"]
    assert list(frame["tag"]) == ["007", "007", "010", "010"] * 2
    assert list(frame["x"]) == [1.0, 2.5] * 4 and list(frame["value"]) == [1.0, 2.5] * 4
    assert all(pd.api.types.is_numeric_dtype(frame[c]) for c in ("x", "value", "wall_s", "exit_code"))
    assert set(frame["status"]) == {"ok"}
