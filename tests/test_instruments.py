"""Wrappers, shared libraries and hooks, with real processes."""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import alive, processes_under, snakemake, write_campaign

from perfsnake.campaign import load_campaign
from perfsnake.campaign_csv import read_csv
from perfsnake.errors import CampaignError
from perfsnake.instruments.base import Context
from perfsnake.instruments.hooks import DropCaches
from perfsnake.instruments.wrappers import Strace, Time, parse_strace_summary
from perfsnake.machine.sysinfo import online_cpus


def campaign(command, variables, **extra):
    data = {
        "name": "i",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": variables,
    }
    data.update(extra)
    return data


def load(tmp_path, data):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_campaign(path)


def test_wrappers_compose_in_declared_order_with_quoting(tmp_path):
    c = load(
        tmp_path,
        campaign(
            "echo value={x}",
            {"x": ["a b"], "nice": [5]},
            wrappers=[{"type": "env", "set": {"V": "x y;$(id)"}}, "nice", "time"],
        ),
    )
    line = c.instruments.compose(Context({"x": "a b", "nice": 5}, tmp_path), "echo value='a b'")
    assert (
        line
        == "exec env 'V=x y;$(id)' nice -n 5 /usr/bin/time -v -o time.txt /bin/sh -c 'echo value='\"'\"'a b'\"'\"''"
    )


def test_no_instrument_leaves_the_command_alone(tmp_path):
    c = load(tmp_path, campaign("echo value={x}", {"x": [1]}))
    assert c.instruments.compose(Context({"x": 1}, tmp_path), "echo value=1") == "echo value=1"


@pytest.mark.parametrize(
    "extra,key,problem",
    [
        (
            {"wrappers": ["tasket"]},
            "wrappers[0]",
            "unknown wrapper 'tasket' (choose from env, ltrace, nice, numactl, offcpu, perf_record, perf_stat, sched_timeline, strace, taskset, time, valgrind)",
        ),
        ({"shared_libs": [{"type": "mimalloc"}]}, "shared_libs[0].type", "unknown shared lib 'mimalloc'"),
        ({"pre_run_hooks": ["nap"]}, "pre_run_hooks[0]", "unknown pre run hook 'nap'"),
        ({"post_run_hooks": [{"type": "daemon", "command": "sleep 1"}]}, "post_run_hooks[0]", "pre-run hook only"),
        (
            {"wrappers": ["taskset"], "variables": {"cpu_list": ["0", "4096"]}},
            "wrappers[0]",
            "CPU 4096 in '4096' is not online",
        ),
        (
            {"wrappers": ["taskset"], "variables": {"cpu_list": ["zero"]}},
            "wrappers[0].variables.cpu_list",
            "is not a CPU list",
        ),
        (
            {"shared_libs": [{"type": "preload", "path": "/nonexistent/lib.so"}]},
            "shared_libs[0].path",
            "does not exist",
        ),
        (
            {"shared_libs": ["allocator"], "variables": {"allocator": ["glibc", "hoard"]}},
            "shared_libs[0].variables.allocator",
            "unknown allocator 'hoard'",
        ),
        (
            {"wrappers": [{"type": "env", "variables": ["nope"]}]},
            "wrappers[0].variables",
            "'nope' is not a campaign variable",
        ),
        ({"wrappers": [{"type": "taskset", "cpus": "0"}]}, "wrappers[0].cpus", "unknown key for taskset"),
        (
            {"pre_run_hooks": [{"type": "command", "command": "echo {what}"}]},
            "pre_run_hooks[0].command",
            "unknown placeholder {what}",
        ),
    ],
)
def test_bad_instruments_fail_before_any_run(tmp_path, extra, key, problem):
    data = campaign("echo value=1", extra.pop("variables", {"x": [1]}), **extra)
    with pytest.raises(CampaignError) as info:
        load(tmp_path, data)
    assert info.value.key == key, str(info.value)
    assert problem in info.value.problem, str(info.value)
    assert "\n" not in str(info.value)


def test_parse_real_strace_and_time_outputs(tmp_path):
    subprocess.run(
        [
            "strace",
            "-c",
            "-f",
            "-o",
            str(tmp_path / "strace.txt"),
            "/bin/sh",
            "-c",
            "ls / > /dev/null; cat /nonexistent 2>/dev/null; true",
        ],
        check=True,
    )
    subprocess.run(["/usr/bin/time", "-v", "-o", str(tmp_path / "time.txt"), "/bin/sh", "-c", "true"], check=True)
    strace = parse_strace_summary((tmp_path / "strace.txt").read_text())
    assert strace["strace.total_calls"] > 10 and strace["strace.total_errors"] >= 1
    assert strace["strace.calls.execve"] >= 2
    assert sum(v for k, v in strace.items() if k.startswith("strace.calls.")) == strace["strace.total_calls"]
    assert Strace({"type": "strace"}, "t", "w").metrics(tmp_path)["strace.total_calls"] == strace["strace.total_calls"]
    metrics = Time({"type": "time"}, "t", "w").metrics(tmp_path)
    assert metrics["time.max_rss_kb"] > 100 and metrics["time.voluntary_ctx_switches"] >= 0


@pytest.mark.e2e
def test_affinity_preload_and_measuring_wrappers_end_to_end(tmp_path):
    cpu = online_cpus()[-1]
    command = "grep Cpus_allowed_list /proc/self/status; grep -c libjemalloc /proc/self/maps || true; echo path=$PATH; echo value=1"
    camp = write_campaign(tmp_path, campaign(
        command, {"cpu_list": ["", str(cpu)], "allocator": ["glibc", "jemalloc"]},
        wrappers=["taskset", "time", "strace"], shared_libs=["allocator"], nb_runs=1,
    ))  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = tmp_path / "results/i/runs"
    cpus = online_cpus()
    unpinned = f"{cpus[0]}-{cpus[-1]}" if len(cpus) > 1 else str(cpus[0])
    for cpu_dir, allowed in (("cpu_list-%", None), (f"cpu_list-{cpu}", str(cpu))):
        for alloc, _maps in (("glibc", "0"), ("jemalloc", None)):
            out = (runs / cpu_dir / f"allocator-{alloc}" / "run-1" / "stdout.txt").read_text().splitlines()
            assert out[0].split(":")[1].strip() == (allowed or unpinned), out
            if alloc == "glibc":
                assert out[1] == "0"
            else:
                assert int(out[1]) >= 1  # the library is mapped into the child
            assert "/usr/bin" in out[2]  # PATH kept
            cmd = (runs / cpu_dir / f"allocator-{alloc}" / "run-1" / "command.sh").read_text()
            assert ("taskset -c" in cmd) == (allowed is not None)
            assert ("LD_PRELOAD" in cmd) == (alloc == "jemalloc")
    frame = read_csv(tmp_path / "results/i/i.csv")
    assert (frame["status"] == "ok").all()
    assert (frame["time.max_rss_kb"] > 0).all() and (frame["strace.total_calls"] > 0).all()


@pytest.mark.e2e
def test_valgrind_counts_instructions(tmp_path):
    camp = write_campaign(tmp_path, campaign("/bin/true; echo value=1", {"x": [1]}, wrappers=["valgrind"], nb_runs=2))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/i/i.csv")
    assert (frame["valgrind.instructions"] > 1000).all()


def assert_gone(pid: int, what: str, within: float = 60.0) -> None:
    """`pid` ends: a deadline that says it ends, not how fast."""
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"{what} (pid {pid}) outlived its run"
        time.sleep(0.05)


@pytest.mark.e2e
def test_daemon_never_outlives_its_run(tmp_path):
    # The daemon ignores SIGTERM and leaves a child that never ends by itself
    # in time to pass the deadline below; the run starts once the child runs.
    daemon = {
        "type": "daemon",
        "name": "bg",
        "command": "sleep 1000 & echo $! > {run_dir}/daemon-child.pid; trap '' TERM; while :; do sleep 0.1; done",
        "ready": {"command": "test -s daemon-child.pid"},
    }
    # The slow run never ends by itself: its time-out is certain; the others end at once, well within it.
    command = "if [ {x} = fail ]; then exit 4; fi; if [ {x} = slow ]; then sleep 1000; fi; echo value=1"
    camp = write_campaign(
        tmp_path,
        campaign(
            command,
            {"x": ["ok", "fail", "slow"]},
            timeout_s=2,
            pre_run_hooks=[daemon],
            post_run_hooks=[{"type": "cooldown", "seconds": 0}],
        ),
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/i/i.csv")
    assert dict(zip(frame["x"], frame["status"])) == {"ok": "ok", "fail": "failed", "slow": "timeout"}
    for x in ("ok", "fail", "slow"):
        rdir = tmp_path / f"results/i/runs/x-{x}/run-1"
        assert_gone(int((rdir / "daemon-child.pid").read_text()), f"the daemon's child in run {x}")
        hooks = json.loads((rdir / "hooks.json").read_text())
        assert [h["phase"] for h in hooks] == ["pre", "teardown", "post"]
        assert hooks[1]["stopped"] is True
    # Only this test's processes: other test runs may share the machine.
    assert processes_under(tmp_path, "sleep 1000") == []


@pytest.mark.e2e
def test_hooks_report_what_they_applied(tmp_path):
    can_drop = os.access(DropCaches.PATH, os.W_OK)  # root, with /proc/sys writable
    hooks = [
        *(["drop_caches"] if can_drop else []),
        {"type": "governor", "governor": "performance"},
        {"type": "command", "name": "probe", "command": "echo seen={x}", "metrics": {"seen": r"seen=(\S+)"}},
    ]
    data = campaign(
        "echo value={x}",
        {"x": [7]},
        pre_run_hooks=hooks,
        post_run_hooks=[{"type": "command", "name": "after", "command": "exit 3"}],
    )
    if not can_drop:  # a normal user: refused before anything runs, in one line, naming root
        refused = write_campaign(tmp_path, {**data, "pre_run_hooks": ["drop_caches", *hooks]}, "refused.yaml")
        with pytest.raises(CampaignError, match="dropping the page cache needs root"):
            load_campaign(refused)
    camp = write_campaign(tmp_path, data)
    snakemake(tmp_path, camp, "--cores", "1", "all")
    result = json.loads((tmp_path / "results/i/runs/x-7/run-1/result.json").read_text())
    by_type = {(h["type"], h["phase"]): h for h in result["hooks"]}
    if can_drop:  # dropped, nothing to note
        drop = by_type[("drop_caches", "pre")]
        assert drop["applied"] is True and "note" not in drop, drop
    gov = by_type[("governor", "pre")]
    has_cpufreq = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists()
    if not has_cpufreq:
        assert gov["applied"] is False and gov["note"] == "no cpufreq on this machine"
    else:
        assert gov["in_force"]
    # A number, as a benchmark's metric is (issue 44, break 4: the statistics skipped text).
    assert result["metrics"]["hook.probe.seen"] == 7
    after = by_type[("command", "post")]
    assert after["applied"] is False and after["exit_code"] == 3 and "exited with 3" in after["note"]
    assert result["status"] == "ok"


@pytest.mark.e2e
def test_placement_daemon_pins_threads_by_policy(tmp_path):
    program = Path(__file__).parent / "data" / "threads_report.c"
    camp = write_campaign(tmp_path, {
        "name": "place",
        "benchmark": {"type": "command", "build": f"cc -O2 -pthread -o {{build_dir}}/threads {shlex.quote(str(program))}",
                      "command": "{build_dir}/threads 4", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"placement": ["normal", "round_robin", "close", "far"]},
        "pre_run_hooks": ["placement"], "nb_runs": 1, "timeout_s": 30,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    cpus = online_cpus()
    for policy in ("normal", "round_robin", "close", "far"):
        rdir = tmp_path / f"results/place/runs/placement-{policy}/run-1"
        allowed = [
            line.split("allowed ")[1] for line in (rdir / "stdout.txt").read_text().splitlines() if "allowed" in line
        ]
        assert len(allowed) == 4
        log = (rdir / "daemon-placement" / "stdout.txt").read_text()
        assert f"policy {policy}" in log and "psplace done" in log
        if policy == "normal":
            assert all(a != str(c) for a in allowed for c in cpus) or len(cpus) == 1
        else:
            # Every worker thread is pinned to one CPU, and the log says which.
            assert all(a.isdigit() and int(a) in cpus for a in allowed), allowed
            assert log.count(f"policy {policy} cpu ") >= 5  # main thread + 4 workers
        if policy == "round_robin" and len(cpus) > 1:
            assert len(set(allowed)) > 1


@pytest.mark.e2e
def test_numactl_and_ltrace(tmp_path):
    cpu = online_cpus()[-1]
    command = "grep Cpus_allowed_list /proc/self/status; echo value=1"
    camp = write_campaign(
        tmp_path,
        campaign(command, {"physcpubind": [str(cpu)], "membind": ["0"]}, wrappers=["numactl", "ltrace"], nb_runs=1),
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    rdir = next((tmp_path / "results/i/runs").rglob("run-1"))
    assert f"numactl --physcpubind={cpu} --membind=0 ltrace" in (rdir / "command.sh").read_text()
    assert (rdir / "stdout.txt").read_text().startswith(f"Cpus_allowed_list:\t{cpu}\n")
    frame = read_csv(tmp_path / "results/i/i.csv")
    assert frame["ltrace.total_calls"][0] > 0


def test_ltrace_refuses_to_start_a_script_or_a_profiler(tmp_path, monkeypatch):
    """ltrace starts only ELF programs (Debian's valgrind is a script), and
    with -f it would count a profiler's own library calls: a wrapper after
    it that is either is refused in one line naming both; the other order,
    and an ELF program, are not."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    fake = bin_dir / "nice"
    fake.write_text('#!/bin/sh\nshift 2; exec "$@"\n')
    fake.chmod(0o755)
    data = campaign("echo value=1", {"nice": [5]}, wrappers=["ltrace", "nice"])
    with pytest.raises(CampaignError) as info:
        load(tmp_path, data)
    assert str(info.value).endswith(
        f"wrappers[0]: ltrace cannot start wrappers[1] (nice): {fake} is a script and ltrace starts only ELF "
        "programs; put it after nice"
    )
    load(tmp_path, {**data, "wrappers": ["nice", "ltrace"]})
    fake.unlink()
    fake.symlink_to(sys.executable)  # an ELF program
    load(tmp_path, data)
    for profiler in ("perf_stat", "perf_record"):
        with pytest.raises(CampaignError) as info:
            load(tmp_path, {**data, "wrappers": ["ltrace", profiler]})
        assert str(info.value).endswith(
            f"wrappers[0]: ltrace cannot start wrappers[1] ({profiler}): ltrace -f would count perf's own "
            f"library calls, not only the benchmark's; put it after {profiler}"
        )
        load(tmp_path, {**data, "wrappers": [profiler, "ltrace"]})
    # valgrind and ltrace: neither order works, so no order is suggested.
    for order in (["ltrace", "valgrind"], ["valgrind", "ltrace"]):
        with pytest.raises(CampaignError) as info:
            load(tmp_path, {**data, "wrappers": order})
        assert str(info.value).endswith("keep one of them"), str(info.value)


def test_strace_and_ltrace_are_refused_together(tmp_path):
    """Both trace with ptrace and a process has one tracer: nested, the inner
    one fails (PTRACE_TRACEME) or, ltrace outside, strace fails silently."""
    for first, second in (("strace", "ltrace"), ("ltrace", "strace")):
        with pytest.raises(CampaignError) as info:
            load(tmp_path, campaign("echo value=1", {"x": [1]}, wrappers=[first, "time", second]))
        assert str(info.value).endswith(
            f"wrappers[2]: {second} and wrappers[0] ({first}) both trace with ptrace, and a process has one tracer: "
            "keep one"
        )


def test_numactl_rejects_two_memory_policies(tmp_path):
    with pytest.raises(CampaignError, match="one memory policy"):
        load(tmp_path, campaign("echo", {"membind": ["0"], "interleave": ["0"]}, wrappers=["numactl"]))


def test_unparsable_instrument_output_is_recorded_not_fatal(tmp_path):
    from perfsnake.stages.collect import collect_run

    c = load(tmp_path, campaign("echo value=1", {"x": [1]}, wrappers=["time"]))
    rdir = tmp_path / "run"
    rdir.mkdir()
    (rdir / "status.json").write_text(
        json.dumps(
            {
                "status": "ok",
                "exit_code": 0,
                "wall_s": 0.1,
                "start": "s",
                "end": "e",
                "start_epoch": 1.0,
                "end_epoch": 1.1,
            }
        )
    )
    (rdir / "stdout.txt").write_text("value=1\n")
    (rdir / "time.txt").write_text("\tMaximum resident set size (kbytes): lots\n")
    result = collect_run(rdir, c.benchmark, {"x": 1}, {"x": 1}, "i", 1, c.instruments)
    assert result["metrics"]["value"] == 1 and result["status"] == "ok"
    assert "instruments" in result["parse_errors"][0]


def test_preload_extends_an_inherited_ld_preload(tmp_path):
    from perfsnake.machine.sysinfo import find_library

    c = load(tmp_path, campaign("echo", {"allocator": ["jemalloc"]}, shared_libs=["allocator"]))
    line = c.instruments.compose(Context({"allocator": "jemalloc"}, tmp_path), "cat /proc/self/maps; echo PATH=$PATH")
    inherited = find_library("libtcmalloc.so.4")
    out = subprocess.run(
        ["sh", "-c", line], env={**os.environ, "LD_PRELOAD": inherited}, capture_output=True, text=True, check=True
    ).stdout
    assert "libjemalloc.so.2" in out and "libtcmalloc.so.4" in out
    assert f"PATH={os.environ['PATH']}" in out


@pytest.mark.e2e
def test_bottleneck_monitor_flags_a_busy_component(tmp_path):
    # The benchmark keeps every CPU busy for BUSY of the monitor's samples,
    # counted in its monitor.csv, not for a time: whatever the machine's speed
    # or load, those samples outnumber the few the monitor can take before the
    # benchmark starts (at most its 0.3 s start-up over 50 ms) and after it
    # ends, so the CPUs' mean utilisation is high by construction. With the
    # CPU not "under test", it is flagged.
    busy = 100
    samples = "$(cat monitor.csv 2>/dev/null | grep -c ,memory,)"
    burners = " ".join(f"sh -c 'while :; do :; done' & b{c}=$!;" for c in online_cpus())
    burn = (f"{burners} until=$(({samples} + {busy})); while [ {samples} -lt $until ]; do sleep 0.05; done; "
            f"kill {' '.join(f'$b{c}' for c in online_cpus())}; echo value=1")  # fmt: skip
    camp = write_campaign(tmp_path, campaign(burn, {"x": [1]}, nb_runs=1, timeout_s=300,  # (should the monitor die)
                          pre_run_hooks=[{"type": "monitor", "interval_ms": 50, "under_test": ["disk"]}]))  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    rdir = tmp_path / "results/i/runs/x-1/run-1"
    result = json.loads((rdir / "result.json").read_text())
    assert result["status"] == "ok"
    m = result["metrics"]
    assert m["monitor.samples"] >= busy
    # The monitor's own cost is measured: some CPU time, at most one CPU's worth (one thread).
    assert 0 < m["monitor.own_cpu_fraction"] <= 1
    cpus = [b for b in result["bottlenecks"] if b.startswith("cpu")]
    assert cpus, (result["bottlenecks"], m)
    assert m["monitor.cpu_util_max"] > 0.8
    assert (rdir / "monitor.csv").read_text().startswith("t,component,utilisation")
    # The reader sees the flags where the stability warnings are: summary.csv's
    # flags, significant.md, and the end-of-invocation summary.
    flag = f"bottleneck: {cpus[0]} above 80% busy in 1 of 1 runs"
    summary = read_csv(tmp_path / "results/i/summary.csv")
    assert summary["flags"].str.contains(flag, regex=False).all(), summary["flags"].tolist()
    assert flag in (tmp_path / "results/i/significant.md").read_text()
    out = proc.stdout + proc.stderr
    assert (
        f"bottlenecks (the monitor, not under test): {', '.join(f'{b} in 1 of 1 runs' for b in result['bottlenecks'])}"
        in out
    ), out[-2000:]
    assert "warnings: 1 record(s) flagged in summary.csv" in out, out[-2000:]
