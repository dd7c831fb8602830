"""The scheduler timeline: where and when the benchmark's threads ran.

`sched_timeline` (a wrapper, an observer: control runs drop it) records the
scheduler's tracepoints for the whole machine around the run with `perf
record -a` (sched_switch, sched_waking, sched_wakeup_new, sched_migrate_task,
sched_process_fork), into sched.data in the run directory. The benchmark's
own threads are the process tree of the command the wrapper starts (its pid
is written to sched.pid before it execs), followed through fork events.

From the events, per thread: its run slices (switched in to switched out, on
which CPU), the time it waited runnable (woken or preempted, not yet
running), the part of that between a wake-up and running (the scheduling
delay), the time it was blocked (switched out asleep) and its migrations.
The per-run metrics go to the CSV (`sched.*`); the slices to sched.json,
which the `sched_gantt` rule draws (rules/profile.smk).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from perfsnake import layout
from perfsnake.instruments.base import Context
from perfsnake.instruments.wrappers import Wrapper
from perfsnake.machine import capabilities

DATA_FILE = "sched.data"
PID_FILE = "sched.pid"
JSON_FILE = "sched.json"
GANTT = "sched_gantt"
EVENTS = ("sched:sched_switch", "sched:sched_waking", "sched:sched_wakeup_new", "sched:sched_migrate_task",
          "sched:sched_process_fork", "sched:sched_process_exec")  # fmt: skip
#: Process names of the run's own tools (never the application's threads).
TOOLS = frozenset({"perf", "perf-exec", "psrun", "psplace", "strace", "ltrace", "valgrind", "bpftrace", "taskset",
                   "numactl", "nice", "env", "time"})  # fmt: skip
LOST = "sched.lost_events"
METRICS = ("sched.threads", "sched.runtime_ms", "sched.wait_ms", "sched.delay_ms", "sched.blocked_ms",
           "sched.migrations", "sched.cpus_used", LOST, "sched.app.threads", "sched.app.runtime_ms",
           "sched.app.wait_ms", "sched.app.delay_ms", "sched.app.blocked_ms")  # fmt: skip

_LINE = re.compile(
    r"^\s*(?P<comm>.+?)\s+(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>[0-9.]+):\s+(?P<event>sched:\w+):\s+(?P<args>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S+)")


_LOST = re.compile(r"PERF_RECORD_LOST(?:_SAMPLES)?\s+lost (\d+)")


def lost_events(data: Path) -> int:
    """Events perf dropped from a recording (its buffers were full): the analysis undercounts by them."""
    proc = subprocess.run(["perf", "script", "-i", str(data), "--show-lost-events", "-F", "time"],
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    return count_lost(proc.stdout)


def count_lost(script_output: str) -> int:
    """Events lost, from `perf script --show-lost-events` output."""
    return sum(int(n) for n in _LOST.findall(script_output))


def buffer_option() -> list[str]:
    """A larger ring buffer per CPU for whole-machine recordings, where the user may lock that much.

    perf's default (512 KiB) overflows under a busy machine's context switches, and
    events lost there are blocked time and slices missing from the analysis.
    """
    return ["-m", "8M"] if os.geteuid() == 0 else []


class SchedTimeline(Wrapper):
    """`perf record -a` of the scheduler's tracepoints around the run."""

    kind = "sched_timeline"
    observer = True
    options: dict[str, object] = {}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("perf", "linux-perf")
        problem = capabilities.recording_problem(EVENTS)
        if problem:
            raise self.fail(f"{problem}: the timeline records every CPU's scheduler tracepoints")

    def declared_metrics(self) -> list[str]:
        return list(METRICS)

    def targets(self, campaign: str, records: list[str], nb_runs: int, compare: list[tuple[str, str]]) -> list[str]:
        return [
            gantt(layout.run_dir(campaign, r, i), ext)
            for r in records
            for i in range(1, nb_runs + 1)
            for ext in ("svg", "png")
        ]

    def prefix(self, ctx: Context) -> list[str]:
        # The monotonic clock: the placement daemon's pins are timed on it.
        argv = ["perf", "record", "--quiet", "-a", "-k", "monotonic", *buffer_option(), "-o", DATA_FILE]
        for event in EVENTS:
            argv += ["-e", event]
        # The benchmark's pid, written before it becomes the benchmark.
        return [*argv, "--", "/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', PID_FILE]

    def units(self, run_dir: Path) -> dict[str, str]:
        return {m: "ms" for m in METRICS if m.endswith("_ms")}

    def metrics(self, run_dir: Path) -> dict[str, object]:
        timeline = load(run_dir)
        return dict(timeline["totals"]) if timeline else {}


def gantt(run_dir: str, ext: str) -> str:
    return f"{run_dir}/{GANTT}.{ext}"


def _events(data: Path) -> Iterable[tuple[str, int, int, float, str, dict[str, str]]]:
    proc = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True, text=True, timeout=600, check=False)
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            args = m.group("args")
            fields = dict(_FIELD.findall(args))
            if "==>" in args:  # sched_switch: prev_* ==> next_*
                left, right = args.split("==>", 1)
                fields = {**dict(_FIELD.findall(left)), **dict(_FIELD.findall(right))}
            yield (
                m.group("comm"),
                int(m.group("tid")),
                int(m.group("cpu")),
                float(m.group("time")),
                m.group("event"),
                fields,
            )


_PIN = re.compile(r"^tid (\d+) thread \d+ policy \S+ cpu (\d+) pid \d+ at ([0-9.]+)$", re.M)


def placement_pins(run_dir: Path) -> dict[int, tuple[int, float]]:
    """The placement daemon's pins of this run: tid -> (CPU, when, on the monotonic clock)."""
    log = run_dir / "daemon-placement" / "stdout.txt"
    text = log.read_text(errors="replace") if log.exists() else ""
    return {int(tid): (int(cpu), float(at)) for tid, cpu, at in _PIN.findall(text)}


def analyse(
    events: Iterable[tuple[str, int, int, float, str, dict[str, str]]],
    root: int,
    pins: dict[int, tuple[int, float]] | None = None,
) -> dict[str, object]:
    """Slices, waits and migrations of the threads descending from `root`.

    `pins` (the placement daemon's, timed on the recording's clock) tell its
    moves from the scheduler's: per pinned thread, the CPU, when, and the
    migrations after it away from that CPU (none, when the pin holds; a
    thread asleep when pinned moves to its CPU at its next wake-up, which is
    the pin taking effect)."""
    pins = pins or {}
    ours = {root}
    names: dict[int, str] = {}
    running: dict[int, tuple[float, int]] = {}  # tid -> (switched in at, cpu)
    runnable_since: dict[int, tuple[float, bool]] = {}  # tid -> (since, woken: a wake-up, not a preemption)
    asleep_since: dict[int, float] = {}
    cpu_last: dict[int, float] = {}  # cpu -> time of its last recorded switch
    slices: list[dict[str, object]] = []
    migrations: list[dict[str, object]] = []
    wakeups: list[dict[str, object]] = []
    stats: dict[int, dict[str, float]] = defaultdict(lambda: {"run": 0.0, "wait": 0.0, "delay": 0.0, "blocked": 0.0})
    execs: dict[int, float] = {}  # tid -> its last exec
    start = end = None
    for _comm, _tid, cpu, time, event, f in events:
        start = time if start is None else start
        end = time
        name = event.split(":")[1]
        if name == "sched_process_exec" and int(f.get("pid", -1)) in ours:
            execs[int(f["pid"])] = time  # a wrapper (taskset, a shell) becomes the program
        elif name == "sched_process_fork" and int(f.get("pid", -1)) in ours:
            child = int(f["child_pid"])
            ours.add(child)
            names[child] = f.get("child_comm", "")
            runnable_since[child] = (time, True)
        elif name in ("sched_waking", "sched_wakeup_new") and int(f.get("pid", -1)) in ours:
            tid = int(f["pid"])
            if tid not in running and tid not in runnable_since:
                if tid in asleep_since:
                    stats[tid]["blocked"] += time - asleep_since.pop(tid)
                runnable_since[tid] = (time, True)
                wakeups.append({"tid": tid, "t": time, "cpu": int(f.get("target_cpu", cpu))})
        elif name == "sched_migrate_task" and int(f.get("pid", -1)) in ours:
            migrations.append({"tid": int(f["pid"]), "t": time, "from": int(f["orig_cpu"]), "to": int(f["dest_cpu"])})
        elif name == "sched_switch":
            prev, nxt = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            if prev in ours:
                names[prev] = f.get("prev_comm", names.get(prev, ""))  # the last name: exec changes it
                if prev not in running:
                    # Its switch-in was not recorded (seen from an idle CPU on
                    # some VMs): it began after this CPU's previous switch and
                    # after it became runnable.
                    since, woken = runnable_since.pop(prev, (cpu_last.get(cpu, start), False))
                    began = max(since, cpu_last.get(cpu, since))
                    stats[prev]["wait"] += began - since
                    if woken:
                        stats[prev]["delay"] += began - since
                    running[prev] = (began, cpu)
                began, where = running.pop(prev)
                slices.append({"tid": prev, "cpu": where, "start": began, "end": time})
                stats[prev]["run"] += time - began
                state = f.get("prev_state", "R")
                if state.startswith("R"):  # preempted: still runnable
                    runnable_since[prev] = (time, False)
                elif not state.startswith(("X", "Z")):
                    asleep_since[prev] = time
            if nxt in ours:
                names.setdefault(nxt, f.get("next_comm", ""))
                since, woken = runnable_since.pop(nxt, (time, False))
                stats[nxt]["wait"] += time - since
                if woken:
                    stats[nxt]["delay"] += time - since
                running[nxt] = (time, cpu)
            cpu_last[cpu] = time
    for tid, (began, where) in running.items():  # still running when the recording stopped
        slices.append({"tid": tid, "cpu": where, "start": began, "end": end})
        stats[tid]["run"] += (end or began) - began
    seen = sorted({int(s["tid"]) for s in slices})  # type: ignore[call-overload]
    origin = min((float(s["start"]) for s in slices), default=0.0)  # type: ignore[arg-type]
    for item in (*slices, *migrations, *wakeups):
        for key in ("start", "end", "t"):
            if key in item:
                item[key] = round((float(item[key]) - origin) * 1000, 6)  # type: ignore[arg-type]  # ms from the first slice
    pinned = {t: (cpu, round((at - origin) * 1000, 6)) for t, (cpu, at) in pins.items() if t in seen}
    # Where a thread ran and how often it moved count from its last exec: before
    # it, the same task was the wrapper that started the program (taskset
    # pins itself, then execs it).
    after_exec = {t: round((execs[t] - origin) * 1000, 6) if t in execs else -math.inf for t in seen}
    threads = [{"tid": t, "name": names.get(t, ""), "runtime_ms": stats[t]["run"] * 1000,
                "wait_ms": stats[t]["wait"] * 1000, "delay_ms": stats[t]["delay"] * 1000,
                "blocked_ms": stats[t]["blocked"] * 1000,
                "migrations": sum(m["tid"] == t and float(m["t"]) > after_exec[t] for m in migrations),  # type: ignore[arg-type]
                "cpus": sorted({int(s["cpu"]) for s in slices if s["tid"] == t and float(s["end"]) > after_exec[t]}),  # type: ignore[call-overload, arg-type]
                **({"pinned_cpu": pinned[t][0], "pinned_at_ms": pinned[t][1],
                    "migrations_after_pin": sum(m["tid"] == t and float(m["t"]) > pinned[t][1] and m["to"] != pinned[t][0]  # type: ignore[arg-type]
                                                for m in migrations),
                    "cpus_after_pin": sorted({int(s["cpu"]) for s in slices if s["tid"] == t and float(s["start"]) >= pinned[t][1]})}  # type: ignore[call-overload, arg-type]
                   if t in pinned else {}),
                **({"exec_ms": after_exec[t]} if t in execs else {})} for t in seen]  # fmt: skip
    totals = {
        "sched.threads": len(threads),
        "sched.runtime_ms": sum(t["runtime_ms"] for t in threads),
        "sched.wait_ms": sum(t["wait_ms"] for t in threads),
        "sched.delay_ms": sum(t["delay_ms"] for t in threads),
        "sched.blocked_ms": sum(t["blocked_ms"] for t in threads),
        "sched.migrations": sum(int(t["migrations"]) for t in threads),
        "sched.cpus_used": len({c for t in threads for c in t["cpus"]}),
    }
    # The application: the threads named like the busiest one that is not a
    # tool of the run (the wrappers and tracers that start or watch it mostly
    # wait, or work for themselves, and would swamp a breakdown of where its
    # own threads' time went).
    candidates = [t for t in threads if str(t["name"]) not in TOOLS] or threads
    busiest = max(candidates, key=lambda t: float(t["runtime_ms"]), default=None)
    app = [t for t in threads if busiest is not None and t["name"] == busiest["name"]]
    for part in ("runtime_ms", "wait_ms", "delay_ms", "blocked_ms"):
        totals[f"sched.app.{part}"] = sum(float(t[part]) for t in app)
    totals["sched.app.threads"] = len(app)
    return {
        "root": root,
        "app": busiest["name"] if busiest else None,
        "threads": threads,
        "slices": slices,
        "migrations": migrations,
        "wakeups": wakeups,
        "totals": totals,
    }


def load(run_dir: Path) -> dict | None:
    """The run's timeline (sched.json, made from sched.data on first use); None without a recording."""
    cached = run_dir / JSON_FILE
    if cached.exists():
        return json.loads(cached.read_text())
    data, pid = run_dir / DATA_FILE, run_dir / PID_FILE
    if not data.exists() or not pid.exists() or not pid.read_text().strip():
        return None
    timeline = analyse(_events(data), int(pid.read_text()), placement_pins(run_dir))
    totals = timeline["totals"]
    assert isinstance(totals, dict)
    totals[LOST] = lost_events(data)
    tmp = cached.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(timeline))
    tmp.replace(cached)
    return timeline
