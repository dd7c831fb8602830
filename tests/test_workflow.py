"""End-to-end runs of the real workflow on small campaigns."""

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, jobs_run, mtimes, snakemake, statuses, write_campaign

from perfsnake.campaign_csv import read_csv, read_metadata

pytestmark = pytest.mark.e2e


def command_campaign(name="c", command="echo value={x}", variables=None, **extra):
    data = {
        "name": name,
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": variables if variables is not None else {"x": [1, 2]},
        "nb_runs": 2,
    }
    data.update(extra)
    return data


def test_campaign_end_to_end(tmp_path):
    camp = write_campaign(tmp_path, command_campaign(
        command="echo value={x}; echo home=$HOME path=$PATH",
        pretty={"x": {"1": "one"}},
        plots=[{"kind": "line", "x": "x", "y": "value"}, {"kind": "strip", "x": "x", "y": "wall_s", "name": "walls"}],
    ))  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results" / "c"
    frame = read_csv(base / "c.csv")
    assert len(frame) == 4
    assert sorted(frame["value"]) == [1, 1, 2, 2]
    assert set(frame["status"]) == {"ok"}
    columns = list(frame.columns)
    assert columns[:10] == [
        "campaign",
        "benchmark",
        "x",
        "run",
        "value",
        "status",
        "exit_code",
        "wall_s",
        "start",
        "end",
    ]
    assert all(c.startswith(("machine.", "usage.")) for c in columns[10:]) and "machine.load1" in columns
    assert {"usage.peak_memory_mb", "usage.cpu_stall_s", "usage.steal_s"} <= set(columns)
    meta = read_metadata(base / "c.csv")
    assert meta["campaign"] == "c" and meta["runs_ok"] == "4"
    run = base / "runs" / "x-1" / "run-2"
    for name in ("command.sh", "stdout.txt", "stderr.txt", "status.json", "result.json"):
        assert (run / name).exists(), name
    result = json.loads((run / "result.json").read_text())
    assert result["variables"] == {"x": 1} and result["metrics"] == {"value": 1} and result["status"] == "ok"
    # The environment is extended, not replaced.
    out = (run / "stdout.txt").read_text()
    assert f"home={os.environ['HOME']}" in out and "/usr/bin" in out
    # command.sh re-runs the benchmark by hand.
    again = subprocess.run(["sh", str(run / "command.sh")], capture_output=True, text=True, check=True)
    assert again.stdout.startswith("value=1")
    commands = (base / "commands.sh").read_text()
    assert commands.count("echo value=") == 4
    for plot in ("line-value-by-x", "walls"):
        ET.parse(base / "plots" / f"{plot}.svg")
        assert (base / "plots" / f"{plot}.png").read_bytes()[:4] == b"\x89PNG"
    assert "run 4/4" in proc.stderr and "ETA" in proc.stderr
    # Re-running an unchanged campaign does nothing.
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_adding_a_value_runs_only_new_records(tmp_path):
    camp = write_campaign(tmp_path, command_campaign())
    snakemake(tmp_path, camp, "--cores", "1", "all")
    before = mtimes(tmp_path, "c")
    write_campaign(tmp_path, command_campaign(variables={"x": [1, 2, 3]}))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    after = mtimes(tmp_path, "c")
    assert jobs_run(proc, "run") == 2
    assert {k: after[k] for k in before} == before
    assert set(after) - set(before) == {"x-3/run-1", "x-3/run-2"}
    assert len(read_csv(tmp_path / "results" / "c" / "c.csv")) == 6


def build_campaign(flags, xs):
    return {
        "name": "b",
        "benchmark": {
            "type": "command",
            "build": "echo {flag} > {build_dir}/flag; date +%s%N > {build_dir}/built",
            "build_variables": ["flag"],
            "command": "echo value=$(cat {build_dir}/flag)-{x}",
            "metrics": {"value": r"value=(\S+)"},
        },
        "variables": {"flag": flags, "x": xs},
    }


def test_only_changed_builds_rebuild(tmp_path):
    camp = write_campaign(tmp_path, build_campaign(["a", "b"], [1]))
    proc = snakemake(tmp_path, camp, "--cores", "2", "all")
    assert jobs_run(proc, "build") == 2
    builds = tmp_path / "resources" / "builds"
    stamp = {p.parent.name: p.read_text() for p in builds.rglob("built")}
    # A new run value: no build at all.
    write_campaign(tmp_path, build_campaign(["a", "b"], [1, 2]))
    proc = snakemake(tmp_path, camp, "--cores", "2", "all")
    assert jobs_run(proc, "build") == 0 and jobs_run(proc, "run") == 2
    # One build value changed: only that build.
    write_campaign(tmp_path, build_campaign(["a", "c"], [1, 2]))
    proc = snakemake(tmp_path, camp, "--cores", "2", "all")
    assert jobs_run(proc, "build") == 1
    now = {p.parent.name: p.read_text() for p in builds.rglob("built")}
    assert now["flag-a"] == stamp["flag-a"] and "flag-c" in now
    frame = read_csv(tmp_path / "results" / "b" / "b.csv")
    assert sorted(frame["value"]) == ["a-1", "a-2", "c-1", "c-2"]


# Three realistic CFLAGS-like build values (~110 characters each): their
# var-value components alone join into a ~362-byte name.
LONG_BUILD_VALUES = {
    "cflags": "-O2 -march=native -fno-omit-frame-pointer -funroll-loops -fstack-protector-strong -D_FORTIFY_SOURCE=2 -pipe -g3",
    "ldflags": "-Wl,-O1 -Wl,--as-needed -Wl,-z,relro -Wl,-z,now -Wl,--hash-style=gnu -Wl,--build-id=sha1 -L/opt/local/lib64 -lm",
    "defines": "-DNDEBUG -DUSE_SNAPPY=1 -DLEVELDB_PLATFORM_POSIX -DOS_LINUX -DHAVE_FDATASYNC=1 -DHAVE_O_CLOEXEC=1 -DLOCKS=mcs",
}


def test_long_build_values_build_and_run(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "long",
        "benchmark": {
            "type": "command",
            "build": "printf '%s\\n' {cflags} {ldflags} {defines} > {build_dir}/flags",
            "build_variables": list(LONG_BUILD_VALUES),
            "command": "echo value=$(wc -l < {build_dir}/flags)",
            "metrics": {"value": r"value=(\S+)"},
        },
        "variables": {**{k: [v] for k, v in LONG_BUILD_VALUES.items()}, "x": [1, 2]},
        "nb_runs": 1,
    })  # fmt: skip
    subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(camp)], cwd=tmp_path, check=True)
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "build") == 1 and jobs_run(proc, "run") == 2
    assert {s["status"] for s in statuses(tmp_path, "long").values()} == {"ok"}
    (flags,) = (tmp_path / "resources" / "builds").rglob("flags")
    assert flags.read_text().splitlines() == list(LONG_BUILD_VALUES.values())
    assert list(read_csv(tmp_path / "results" / "long" / "long.csv")["value"]) == [3, 3]
    for path in (tmp_path / "resources").rglob("*"):
        assert len(path.name.encode()) <= 255, path
    # The same values name the same build: nothing to do the second time.
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_runs_never_overlap_with_two_cores(tmp_path):
    camp = write_campaign(tmp_path, command_campaign(command="sleep 0.3; echo value={x}", variables={"x": [1, 2, 3]}))
    snakemake(tmp_path, camp, "--cores", "2", "all")
    spans = sorted((s["start_epoch"], s["end_epoch"]) for s in statuses(tmp_path, "c").values())
    assert len(spans) == 6
    for (_s0, e0), (s1, _e1) in zip(spans, spans[1:]):
        assert s1 >= e0, spans


def test_failures_are_data_and_rerun_failed_reruns_only_them(tmp_path):
    fixed = "[ -e {run_dir}/../../../ok ]"
    command = f"if [ {{x}} = bad ] && ! {fixed}; then echo broken >&2; exit 3; fi; if [ {{x}} = slow ] && ! {fixed}; then sleep 30; fi; echo value=1"
    camp = write_campaign(
        tmp_path, command_campaign(command=command, variables={"x": ["good", "bad", "slow"]}, timeout_s=1)
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results" / "c" / "c.csv")
    status = dict(zip(frame["x"] + "/" + frame["run"].astype(str), frame["status"]))
    assert status == {
        "good/1": "ok",
        "good/2": "ok",
        "bad/1": "failed",
        "bad/2": "failed",
        "slow/1": "timeout",
        "slow/2": "timeout",
    }
    assert set(frame[frame["x"] == "bad"]["exit_code"]) == {3}
    bad = json.loads((tmp_path / "results/c/runs/x-bad/run-1/result.json").read_text())
    assert "broken" in bad["stderr_tail"] and bad["exit_code"] == 3
    assert read_metadata(tmp_path / "results" / "c" / "c.csv")["runs_failed"] == "2"
    before = mtimes(tmp_path, "c")
    # Fix the cause outside the campaign, then re-run only the failures.
    (tmp_path / "results" / "c" / "ok").touch()
    env = {**os.environ, "PATH": f"{Path(SNAKEMAKE).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [str(Path(SNAKEMAKE).with_name("python")), "-m", "perfsnake", "rerun-failed", "--config", f"campaign={camp}", "--",
         "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"), "--configfile", str(ROOT / "config/config.yaml")],
        cwd=tmp_path, capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = mtimes(tmp_path, "c")
    assert after["x-good/run-1"] == before["x-good/run-1"] and after["x-good/run-2"] == before["x-good/run-2"]
    frame = read_csv(tmp_path / "results" / "c" / "c.csv")
    assert set(frame["status"]) == {"ok"}
    # The failed attempt is kept, not lost.
    kept = tmp_path / "results/c/runs/x-bad/run-1/previous/attempt-1"
    assert "broken" in (kept / "stderr.txt").read_text()


def test_kill_and_resume(tmp_path):
    # The kill lands in a run that waits for the test, not in whichever a
    # sleep's length and the machine's speed make it: runs of x >= 3 wait for
    # results/c/go (made after the kill), saying so in results/c/blocked. The
    # campaign's order is run 1 of x = 0..5, then run 2: the kill leaves x-0,
    # x-1 and x-2's run 1 done, x-3's run 1 aborted, eight never started.
    gate = "{run_dir}/../../../go"
    command = (
        f"if [ {{x}} -ge 3 ] && [ ! -e {gate} ]; then touch {{run_dir}}/../../../blocked; "
        f"while [ ! -e {gate} ]; do sleep 0.05; done; fi; echo value={{x}}"
    )
    camp = write_campaign(tmp_path, command_campaign(command=command, variables={"x": list(range(6))}))
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--config", f"campaign={camp}", "--cores", "1", "all"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while not (tmp_path / "results/c/blocked").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # An orphaned launcher notices its parent died (within a second) and goes.
    deadline = time.monotonic() + 30
    while True:
        leftovers = subprocess.run(
            ["pgrep", "-f", f"{tmp_path}/results"], capture_output=True, text=True, check=False
        ).stdout.split()
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert leftovers == []
    # Taken once the launchers are gone: the runs before the blocked one, and
    # not the blocked one (its benchmark was stopped, not finished).
    done = mtimes(tmp_path, "c")
    assert sorted(done) == ["x-0/run-1", "x-1/run-1", "x-2/run-1"]
    assert (tmp_path / "results/c/runs/x-3/run-1").is_dir()
    # The documented resume: unlock, then run with --rerun-incomplete.
    (tmp_path / "results/c/go").touch()
    snakemake(tmp_path, camp, "--unlock", "all")
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", "--rerun-incomplete")
    after = mtimes(tmp_path, "c")
    assert len(after) == 12
    assert {k: after[k] for k in done} == done
    assert jobs_run(proc, "run") == 12 - len(done)


@pytest.mark.parametrize(
    "text,needle",
    [
        ("name: c\nbenchmark: {type: command, command: 'echo {x}'}\nvariables: {x: []}\n", "variables.x: empty list"),
        ("name: c\nbenchmark: nosuch\n", "benchmark: unknown benchmark"),
        (
            "name: c\nbenchmark: {type: command, command: echo, metrics: {m: 'x'}}\n",
            "benchmark.metrics.m: regex must have exactly one group",
        ),
        ("name: c\nbenchmark: heater\nextra: 1\n", "extra: unknown key"),
    ],
)
def test_bad_campaign_stops_before_anything_with_one_line(tmp_path, text, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    proc = snakemake(tmp_path, path, "--cores", "1", "all", check=False)
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
    assert len(lines) == 1 and str(path) in lines[0] and needle in lines[0], proc.stderr
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "resources").exists()


def test_injection_attempts_stay_inert(tmp_path):
    canary = tmp_path / "canary"
    nasty = [
        f"$(touch {canary})",
        f"`touch {canary}`",
        f"; touch {canary}",
        "../../../../escape",
        "a b/c",
        "ünï cødé",
        "{x}",
    ]
    camp = write_campaign(
        tmp_path, command_campaign(command="printf 'value=%s\\n' {x}", variables={"x": nasty}, nb_runs=1)
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    assert not canary.exists()
    results = (tmp_path / "results").resolve()
    for p in tmp_path.rglob("*"):
        assert "escape" not in p.name or p.resolve().is_relative_to(results)
    frame = read_csv(tmp_path / "results" / "c" / "c.csv")
    assert sorted(frame["x"]) == sorted(nasty)
    runs = tmp_path / "results" / "c" / "runs"
    assert len([d for d in runs.iterdir() if d.is_dir()]) == len(nasty)
    for x in nasty:
        out = (tmp_path / "results/c/runs").rglob("stdout.txt")
        assert any(f"value={x}\n" == p.read_text() or p.read_text().startswith(f"value={x}") for p in out), x


def test_editing_analysis_code_reruns_only_analysis(tmp_path):
    camp = write_campaign(tmp_path, command_campaign(plots=[{"kind": "bar", "x": "x", "y": "value"}]))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    plots_py = ROOT / "perfsnake" / "stages" / "plots.py"
    original = plots_py.read_bytes()
    stat = plots_py.stat()
    try:
        # A real edit: Snakemake ignores a bare touch of a small unchanged file.
        plots_py.write_bytes(original + b"\n# edited by a test\n")
        proc = snakemake(tmp_path, camp, "--cores", "1", "all", "-n")
    finally:
        plots_py.write_bytes(original)
        os.utime(plots_py, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    text = proc.stdout + proc.stderr
    assert jobs_run(proc, "plot") == 1 and jobs_run(proc, "run") == 0 and jobs_run(proc, "aggregate") == 0, text


def test_snakemake_report_shows_the_plots(tmp_path):
    camp = write_campaign(tmp_path, command_campaign(plots=[{"kind": "bar", "x": "x", "y": "value", "name": "values"}]))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    snakemake(tmp_path, camp, "--report", str(tmp_path / "report.zip"), "all")
    import zipfile

    with zipfile.ZipFile(tmp_path / "report.zip") as zf:
        names = zf.namelist()
        assert any(n.endswith("values.svg") for n in names), names
        index = next(n for n in names if n.endswith("report.html"))
        html = zf.read(index).decode()
    assert "values" in html


def test_summary_and_comparisons(tmp_path):
    # value = 100*x + small noise from the run's PID: x=1 vs x=2 differ, x=2 vs x=2b do not.
    command = "echo value=$(( {x} * 100 + $$ % 7 ))"
    camp = write_campaign(tmp_path, command_campaign(
        command=command.replace("{x}", "{level}"), variables={"level": [1, 2], "tag": ["a", "b"]}, nb_runs=5,
        statistics={"confidence": 0.9, "alpha": 0.01},
    ))  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results/c"
    import pandas as pd

    summary = pd.read_csv(base / "summary.csv")
    row = summary[(summary["metric"] == "value") & (summary["level"] == 2) & (summary["tag"] == "a")].iloc[0]
    assert row["n"] == 5 and row["confidence"] == 0.9 and 200 <= row["mean"] <= 206
    assert row["mean_ci_low"] <= row["mean"] <= row["mean_ci_high"]
    comps = pd.read_csv(base / "comparisons.csv")
    level = comps[(comps["metric"] == "value") & (comps["variable"] == "level")]
    assert len(level) == 2 and level["significant"].all()
    assert level["relative_difference"].between(0.9, 1.1).all()
    tag = comps[(comps["metric"] == "value") & (comps["variable"] == "tag")]
    assert len(tag) == 2 and (tag["p_value"] > 0.001).all()
    text = (base / "significant.md").read_text()
    assert "value: level 2 vs 1" in text


def test_warmup_is_removed_from_heater_time_series(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "warm", "benchmark": "heater", "variables": {"cpu": [0], "interval_ms": [20]},
        "nb_runs": 1, "duration_s": 1,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    rdir = tmp_path / "results/warm/runs/cpu-0/interval_ms-20/run-1"
    # The series is the run's printed intervals, however many the load let it
    # print (one per loop batch at most; at least the one its deadline falls
    # in): one rate each, ops over the interval's length, read here without
    # the parser.
    rows = [line.split(" ") for line in (rdir / "stdout.txt").read_text().splitlines() if line.startswith("interval ")]
    intervals = [(float(t), int(n)) for _word, _k, t, n in rows]
    assert intervals
    starts = [0.0] + [t for t, _n in intervals[:-1]]
    rates = [n / (t - start) for (t, n), start in zip(intervals, starts, strict=True)]
    result = json.loads((rdir / "result.json").read_text())
    # Fewer than two intervals (a whole second without the CPU) make no series.
    assert (rdir / "samples.csv").exists() == ("steady" in result) == (len(rates) >= 2), rows
    if len(rates) < 2:
        return
    header, *samples = (rdir / "samples.csv").read_text().splitlines()
    assert header == "index,value" and samples == [f"{i},{v!r}" for i, v in enumerate(rates)]
    steady = result["steady"]
    assert steady["samples"] == len(rates) and 0 <= steady["removed"] <= steady["samples"] // 2
    assert 0 <= steady["start"] < steady["end"] <= steady["samples"]
    assert steady["removed"] == steady["samples"] - (steady["end"] - steady["start"])
    stable = rates[steady["start"] : steady["end"]]
    assert result["metrics"]["ops_per_s_steady"] == pytest.approx(sum(stable) / len(stable))


@pytest.mark.parametrize("order", ["interleaved", "grouped", "random"])
def test_runs_execute_in_the_campaign_order(tmp_path, order):
    camp = write_campaign(
        tmp_path, command_campaign(command="echo value={x}", variables={"x": [1, 2, 3]}, nb_runs=3, order=order, seed=7)
    )
    snakemake(tmp_path, camp, "--cores", "2", "all")
    executed = [k for k, _ in sorted(statuses(tmp_path, "c").items(), key=lambda kv: kv[1]["start_epoch"])]
    slots = [f"x-{x}/run-{i}" for x in (1, 2, 3) for i in (1, 2, 3)]
    if order == "interleaved":
        assert executed == [f"x-{x}/run-{i}" for i in (1, 2, 3) for x in (1, 2, 3)]
    elif order == "grouped":
        assert executed == slots
    else:
        import random

        pairs = [(f"x-{x}", i) for x in (1, 2, 3) for i in (1, 2, 3)]
        random.Random(7).shuffle(pairs)
        assert executed == [f"{r}/run-{i}" for r, i in pairs]


def test_run_until_precise(tmp_path):
    # "quiet" is constant: met after min_runs; "noisy" varies ~3 %: needs more runs.
    command = "if [ {x} = quiet ]; then echo value=1000; else echo value=$(( 1000 + ($$ * 7919) % 60 )); fi"
    data = command_campaign(command=command, variables={"x": ["quiet", "noisy"]},
                            precision={"metric": "value", "target_rel_ci": 0.01, "min_runs": 3, "max_runs": 12})  # fmt: skip
    del data["nb_runs"]
    camp = write_campaign(tmp_path, data)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = statuses(tmp_path, "c")
    quiet = [k for k in runs if k.startswith("x-quiet/")]
    noisy = [k for k in runs if k.startswith("x-noisy/")]
    assert len(quiet) == 3 and 3 < len(noisy) <= 12
    rounds = sorted((tmp_path / "results/c/precision").glob("round-*.json"))
    assert len(rounds) >= 2 and json.loads(rounds[-1].read_text())["done"]
    import pandas as pd

    summary = pd.read_csv(tmp_path / "results/c/summary.csv")
    value = summary[summary["metric"] == "value"].set_index("x")
    assert bool(value.loc["quiet", "precision_target_met"]) and value.loc["quiet", "n"] == 3
    assert value.loc["noisy", "n"] == len(noisy)
    met = bool(value.loc["noisy", "precision_target_met"])
    assert met == (value.loc["noisy", "precision_rel_ci"] <= 0.01)
    assert met or len(noisy) == 12
    # Re-running the finished campaign does nothing.
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_observer_effect_control(tmp_path):
    # Behaviour only (which runs ran, what overhead.csv holds): whether strace's
    # cost comes out significant from 4 live runs depends on the machine's load.
    command = "for i in 1 2 3 4 5 6 7 8; do ls / > /dev/null; done; echo value=1"
    camp = write_campaign(tmp_path, command_campaign(
        command=command, variables={"x": [1]}, nb_runs=4, wrappers=["strace"], control="per_instrument",
    ))  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    import pandas as pd

    over = pd.read_csv(tmp_path / "results/c/overhead.csv")
    wall = over[over["metric"] == "wall_s"].set_index("instruments")
    assert set(wall.index) == {"all", "strace"}
    assert wall["overhead"].notna().all() and wall["p_value"].between(0, 1).all()
    assert (wall["diff_ci_low"] <= wall["diff_ci_high"]).all()
    # Control runs have no wrapper in their command, and interleave with the campaign's.
    control_cmd = (tmp_path / "results/c__control/runs/x-1/run-1/command.sh").read_text()
    assert "strace" not in control_cmd
    order = sorted(
        [
            (s["start_epoch"], name)
            for name in ("c", "c__control", "c__only-strace")
            for s in statuses(tmp_path, name).values()
        ]
    )
    assert [n for _, n in order[:3]] == ["c", "c__control", "c__only-strace"]


def test_work_per_second_option(tmp_path):
    # Readings of varying work, taking 0.01 s + work / 5000 s each (known truth: v = 5000).
    lines = "; ".join(f"echo reading {w} {0.01 + w / 5000:.6f}" for w in (100, 250, 400, 800, 1200, 50))
    camp = write_campaign(tmp_path, {
        "name": "wps", "benchmark": {"type": "command", "command": f"{lines}; echo value=1", "metrics": {"value": r"value=(\d+)"},
                                     "readings": r"^reading (\S+) (\S+)$"},
        "variables": {"x": [1]}, "nb_runs": 1, "statistics": {"warmup": "wps"},
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    m = json.loads((tmp_path / "results/wps/runs/x-1/run-1/result.json").read_text())["metrics"]
    assert m["work_per_s_wps"] == pytest.approx(5000, rel=1e-3)
    assert m["wps_alpha_s"] == pytest.approx(0.01, abs=1e-4) and m["wps_r2"] > 0.999


def test_a_run_that_finished_before_the_kill_is_kept(tmp_path):
    """The launcher's status.json exists, Snakemake's incomplete mark too (the
    workflow was killed in between): the mark goes, so the run is not redone;
    marks of unfinished runs and of other files stay."""
    import base64

    from perfsnake.stages.run import keep_finished_runs

    def mark(key: str) -> Path:
        path = tmp_path / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(key.encode()).decode()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        return path

    finished, unfinished = "results/c/runs/x-2/run-1/status.json", "results/c/runs/x-3/run-1/status.json"
    (tmp_path / finished).parent.mkdir(parents=True)
    (tmp_path / finished).write_text('{"status": "ok"}')
    (tmp_path / unfinished).parent.mkdir(parents=True)
    (tmp_path / "results/c/c.csv").write_text("x\n")
    marks = [mark(finished), mark(unfinished), mark("results/c/c.csv")]
    assert keep_finished_runs(tmp_path) == [finished]
    assert [m.exists() for m in marks] == [False, True, True]
    assert keep_finished_runs(tmp_path / "elsewhere") == []
