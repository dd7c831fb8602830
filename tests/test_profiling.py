"""perf stat metrics, perf record profiles, flame graphs, with real perf."""

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import jobs_run, mtimes, skip_without_flame_tools, snakemake, write_campaign

from perfsnake.campaign_csv import read_csv, read_metadata
from perfsnake.instruments.profiling import parse_perf_stat, resolve_event

EVENTS = "task-clock,context-switches,page-faults,instructions,cycles"


def perf_stat(tmp_path, env=None):
    out = tmp_path / "perf.stat"
    subprocess.run(["perf", "stat", "-x", ";", "-o", str(out), "-e", EVENTS, "--", "/bin/sh", "-c", "ls / > /dev/null"],
                   env={**os.environ, **(env or {})}, check=True)  # fmt: skip
    return out.read_text()


def supported(event):
    probe = subprocess.run(
        ["perf", "stat", "-x", ";", "-e", event, "true"], capture_output=True, text=True, check=False
    ).stderr
    return "<not supported>" not in probe and "<not counted>" not in probe


def test_parse_real_perf_stat(tmp_path):
    values, units, unsupported = parse_perf_stat(perf_stat(tmp_path))
    assert values["perf_stat.task-clock"] > 0 and units["perf_stat.task-clock"] == "msec"
    assert values["perf_stat.page-faults"] > 0 and isinstance(values["perf_stat.context-switches"], int)
    for event in ("instructions", "cycles"):
        if supported(event):
            assert values[f"perf_stat.{event}"] > 0
        else:  # no hardware PMU here: an empty value, not a crash
            assert values[f"perf_stat.{event}"] is None and event in unsupported


def test_parse_perf_stat_in_a_decimal_comma_locale(tmp_path):
    locales = tmp_path / "locales"
    locales.mkdir()
    made = subprocess.run(
        ["localedef", "-i", "de_DE", "-f", "UTF-8", str(locales / "de_DE.UTF-8")], capture_output=True, check=False
    )
    if made.returncode not in (0, 1) or not (locales / "de_DE.UTF-8").exists():
        pytest.skip("cannot build the de_DE locale here")
    text = perf_stat(tmp_path, {"LOCPATH": str(locales), "LC_ALL": "de_DE.UTF-8"})
    # A normal user's perf (perf_event_paranoid 2) counts user space only and says so: task-clock:u.
    raw = next(line for line in text.splitlines() if re.search(r";task-clock(:u)?;", line)).split(";")[0]
    assert "," in raw, text  # perf really wrote the task-clock with a decimal comma
    values, units, _ = parse_perf_stat(text)
    # Read as the decimal it is ("1,73" is 1.73 ms: not 173, nor 1, nor nothing).
    whole, fraction = raw.split(",")
    assert values["perf_stat.task-clock"] == pytest.approx(int(whole) + int(fraction) / 10 ** len(fraction))
    assert values["perf_stat.task-clock"] > 0
    assert units["perf_stat.task-clock"] == "msec"


def test_portable_event_names():
    assert resolve_event("llc-misses", "GenuineIntel") == "LLC-load-misses"
    assert resolve_event("llc-misses", "AuthenticAMD") == "cache-misses"
    assert resolve_event("llc-misses", "SomethingElse") == "cache-misses"
    assert resolve_event("sched:sched_switch") == "sched:sched_switch"


def heater_campaign(**extra):
    data = {
        "name": "prof",
        "benchmark": "heater",
        "variables": {
            "cflags": ["-O2 -fno-omit-frame-pointer"],
            "cpu": [0, 1] if len(os.sched_getaffinity(0)) > 1 else [0],
        },
        "nb_runs": 1,
        "duration_s": 0.5,
        "wrappers": [{"type": "perf_record", "frequency": 499}, "perf_stat"],
        "timeout_s": 60,
    }
    data.update(extra)
    return data


@pytest.mark.e2e
def test_heater_flame_graphs_and_differential(tmp_path):
    skip_without_flame_tools()
    cpus = heater_campaign()["variables"]["cpu"]
    compare = [{"a": {"cpu": cpus[0]}, "b": {"cpu": cpus[-1]}}] if len(cpus) > 1 else []
    camp = write_campaign(tmp_path, heater_campaign(flamegraph_pairs=compare, flamegraph={"colors": "hot"}))
    snakemake(tmp_path, camp, "--cores", "2", "all")
    base = tmp_path / "results/prof"
    rdir = base / "runs/cflags--O2%20-fno-omit-frame-pointer/cpu-0/run-1"
    svg = (rdir / "flamegraph.svg").read_text()
    ET.fromstring(svg)
    assert "heat_batch" in svg and "prof: cflags--O2%20-fno-omit-frame-pointer/cpu-0 run-1" in svg
    assert "heat_batch" in (rdir / "perf.report").read_text()
    folded = [line.rsplit(" ", 1) for line in (rdir / "perf.folded").read_text().splitlines()]
    # Stacks weighed by their samples, not nanoseconds: together, the recording's samples (how
    # many depends on the CPU time the heater got, which a loaded machine shares out).
    samples = int(re.search(r"^# Samples: (\d+) ", (rdir / "perf.report").read_text(), re.M).group(1))
    assert sum(int(n) for _, n in folded) == samples > 0
    # Attributed to the heater, which spends its time in its loop's batch.
    heater = {stack: int(n) for stack, n in folded if stack.split(";")[0] == "heater"}
    in_batch = sum(n for stack, n in heater.items() if "heat_batch" in stack.split(";"))
    assert in_batch > sum(heater.values()) / 2, heater
    frame = read_csv(base / "prof.csv")
    assert (frame["perf_stat.task-clock"] > 0).all()
    assert "perf_stat.task-clock=msec" in read_metadata(base / "prof.csv")["metric_units"]
    if compare:
        diffs = sorted((base / "diff").glob("*.svg"))
        assert len(diffs) == 2
        for d in diffs:
            ET.parse(d)
            assert "heat_batch" in d.read_text()
    # Asking for a differential by path works for any two records.
    a, b = "cflags--O2%20-fno-omit-frame-pointer,cpu-0", f"cflags--O2%20-fno-omit-frame-pointer,cpu-{cpus[-1]}"
    snakemake(tmp_path, camp, "--cores", "1", f"results/prof/diff/{b}~vs~{a}.svg")
    ET.parse(base / "diff" / f"{b}~vs~{a}.svg")
    # New flame-graph options: only post-processing runs again.
    before = mtimes(tmp_path, "prof")
    write_campaign(tmp_path, heater_campaign(flamegraph_pairs=compare, flamegraph={"colors": "blue", "min_width": 0.5}))
    proc = snakemake(tmp_path, camp, "--cores", "2", "all")
    assert jobs_run(proc, "run") == 0 and jobs_run(proc, "flamegraph") == len(cpus)
    assert mtimes(tmp_path, "prof") == before


@pytest.mark.e2e
def test_unsupported_events_left_empty_on_request_warn_once_per_run(tmp_path):
    if supported("instructions"):
        pytest.skip("this machine counts hardware events")
    camp = write_campaign(tmp_path, {
        "name": "ps", "benchmark": {"type": "command", "command": "ls / > /dev/null; echo value=1", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1]}, "nb_runs": 2,
        "wrappers": [{"type": "perf_stat", "events": ["task-clock", "instructions"], "unsupported": "empty"}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/ps/ps.csv")
    assert frame["perf_stat.instructions"].isna().all() and (frame["perf_stat.task-clock"] > 0).all()
    assert (frame["status"] == "ok").all()
    for log in Path(tmp_path / "results/ps/runs").rglob("perf_stat.log"):
        assert log.read_text().count("warning") == 1 and "instructions" in log.read_text()
    result = json.loads(next(Path(tmp_path / "results/ps/runs").rglob("result.json")).read_text())
    assert result["units"]["perf_stat.task-clock"] == "msec"
