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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from perfsnake import layout
from perfsnake.instruments.base import Context
from perfsnake.instruments.wrappers import Wrapper
from perfsnake.machine import capabilities
from perfsnake.placement import OBSERVERS, RUN_TOOLS
from perfsnake.values import number

DATA_FILE = "sched.data"
PID_FILE = "sched.pid"
JSON_FILE = "sched.json"
GANTT = "sched_gantt"
EVENTS = ("sched:sched_switch", "sched:sched_waking", "sched:sched_wakeup_new", "sched:sched_migrate_task",
          "sched:sched_process_fork", "sched:sched_process_exec")  # fmt: skip
LOST = "sched.lost_events"
#: The parallel region (see parallel_region): its length, its threads and their time in it.
PARALLEL = ("sched.par.threads", "sched.par.region_ms", "sched.par.running_ms", "sched.par.wait_ms",
            "sched.par.blocked_ms", "sched.par.imbalance_ms", "sched.par.join_wait_ms")  # fmt: skip
#: A thread takes part in the parallel region when it ran or waited for a CPU
#: this share of it: a helper asleep throughout (LevelDB's compaction thread) does not.
PARTICIPATES = 0.05
#: the creator works beside its workers when it ran at least this share of an
#: average worker's running time in the region: a creator that only creates
#: and joins runs microseconds, or a few ms a loaded VM's steal adds to its
#: last slice before the join (CI: 3.2 ms beside a 14 ms worker)
CREATOR_SHARE = 0.5
METRICS = ("sched.threads", "sched.runtime_ms", "sched.wait_ms", "sched.delay_ms", "sched.blocked_ms",
           "sched.migrations", "sched.cpus_used", LOST, "sched.app.threads", "sched.app.runtime_ms",
           "sched.app.wait_ms", "sched.app.delay_ms", "sched.app.blocked_ms", *PARALLEL)  # fmt: skip

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

    def targets(self, campaign: str, plan: Mapping[str, Sequence[int]], pairs: list[tuple[str, str]]) -> list[str]:
        return [
            gantt(layout.run_dir(campaign, r, i), ext)
            for r, runs in plan.items()
            for i in runs
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
    last_out: dict[int, float] = {}  # tid -> its last recorded switch-out
    slices: list[dict[str, object]] = []
    migrations: list[dict[str, object]] = []
    wakeups: list[dict[str, object]] = []
    stats: dict[int, dict[str, float]] = defaultdict(lambda: {"run": 0.0, "wait": 0.0, "delay": 0.0, "blocked": 0.0})
    execs: dict[int, float] = {}  # tid -> its last exec
    parent: dict[int, int] = {}  # tid -> the thread that created it
    created: dict[int, float] = {}
    waits: list[tuple[int, float, float]] = []  # (tid, runnable from, to): the parallel region clips them
    sleeps: list[tuple[int, float, float, int]] = []  # (tid, asleep from, to, the thread that woke it or -1)
    start = end = None
    for _comm, waker, cpu, time, event, f in events:
        start = time if start is None else start
        end = time
        name = event.split(":")[1]
        if name == "sched_process_exec" and int(f.get("pid", -1)) in ours:
            execs[int(f["pid"])] = time  # a wrapper (taskset, a shell) becomes the program
        elif name == "sched_process_fork" and int(f.get("pid", -1)) in ours:
            child = int(f["child_pid"])
            ours.add(child)
            parent[child], created[child] = int(f["pid"]), time
            names[child] = f.get("child_comm", "")
            runnable_since[child] = (time, True)
        elif name in ("sched_waking", "sched_wakeup_new") and int(f.get("pid", -1)) in ours:
            tid = int(f["pid"])
            if tid not in running and tid not in runnable_since:
                if tid in asleep_since:
                    since = asleep_since.pop(tid)
                    stats[tid]["blocked"] += time - since
                    sleeps.append((tid, since, time, waker))
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
                    # some VMs, and lost under load): it began after this CPU's
                    # previous switch, after its own previous switch-out, and
                    # after it became runnable.
                    floor = max(cpu_last.get(cpu, start), last_out.get(prev, start))
                    if prev in asleep_since:  # its wake-up went unrecorded too: asleep until then
                        slept_from = asleep_since.pop(prev)
                        stats[prev]["blocked"] += max(floor - slept_from, 0.0)
                        sleeps.append((prev, slept_from, max(floor, slept_from), -1))
                    since, woken = runnable_since.pop(prev, (floor, False))
                    began = max(since, floor)
                    stats[prev]["wait"] += began - since
                    waits.append((prev, since, began))
                    if woken:
                        stats[prev]["delay"] += began - since
                    running[prev] = (began, cpu)
                began, where = running.pop(prev)
                slices.append({"tid": prev, "cpu": where, "start": began, "end": time})
                last_out[prev] = time
                stats[prev]["run"] += time - began
                state = f.get("prev_state", "R")
                if state.startswith("R"):  # preempted: still runnable
                    runnable_since[prev] = (time, False)
                elif not state.startswith(("X", "Z")):
                    asleep_since[prev] = time
            if nxt in ours:
                names.setdefault(nxt, f.get("next_comm", ""))
                if nxt in asleep_since:
                    # Its wake-up came while it was still switching out (the
                    # waking event precedes the switch that put it to sleep):
                    # the sleep ends here, not at some later wake-up.
                    since = asleep_since.pop(nxt)
                    stats[nxt]["blocked"] += time - since
                    sleeps.append((nxt, since, time, -1))
                since, woken = runnable_since.pop(nxt, (time, False))
                stats[nxt]["wait"] += time - since
                waits.append((nxt, since, time))
                if woken:
                    stats[nxt]["delay"] += time - since
                running[nxt] = (time, cpu)
            cpu_last[cpu] = time
    for tid, (began, where) in running.items():  # still running when the recording stopped
        slices.append({"tid": tid, "cpu": where, "start": began, "end": end})
        stats[tid]["run"] += (end or began) - began
    last = end or 0.0
    waits += [(t, since, last) for t, (since, _woken) in runnable_since.items()]
    sleeps += [(t, since, last, -1) for t, since in asleep_since.items()]
    seen = sorted({int(s["tid"]) for s in slices})  # type: ignore[call-overload]
    origin = min((number(s["start"]) for s in slices), default=0.0)
    for item in (*slices, *migrations, *wakeups):
        for key in ("start", "end", "t"):
            if key in item:
                item[key] = round((float(item[key]) - origin) * 1000, 6)  # type: ignore[arg-type]  # ms from the first slice
    pinned = {t: (cpu, round((at - origin) * 1000, 6)) for t, (cpu, at) in pins.items() if t in seen}
    span: dict[int, tuple[float, float]] = {}  # tid -> (its first slice's start, its last slice's end)
    for item in slices:
        t, a, b = int(item["tid"]), float(item["start"]), float(item["end"])  # type: ignore[call-overload, arg-type]
        span[t] = (min(a, span[t][0]), max(b, span[t][1])) if t in span else (a, b)
    waits_ms = [(t, (a - origin) * 1000, (b - origin) * 1000) for t, a, b in waits]
    sleeps_ms = [(t, (a - origin) * 1000, (b - origin) * 1000, w) for t, a, b, w in sleeps]
    created_ms = {t: (at - origin) * 1000 for t, at in created.items()}
    # Where a thread ran and how often it moved count from its last exec: before
    # it, the same task was the wrapper that started the program (taskset
    # pins itself, then execs it).
    after_exec = {t: round((execs[t] - origin) * 1000, 6) if t in execs else -math.inf for t in seen}
    threads = [{"tid": t, "name": names.get(t, ""), "runtime_ms": stats[t]["run"] * 1000,
                "wait_ms": stats[t]["wait"] * 1000, "delay_ms": stats[t]["delay"] * 1000,
                "blocked_ms": stats[t]["blocked"] * 1000,
                "migrations": sum(m["tid"] == t and number(m["t"]) > after_exec[t] for m in migrations),
                "cpus": sorted({int(s["cpu"]) for s in slices if s["tid"] == t and float(s["end"]) > after_exec[t]}),  # type: ignore[call-overload, arg-type]
                **({"pinned_cpu": pinned[t][0], "pinned_at_ms": pinned[t][1],
                    "migrations_after_pin": sum(m["tid"] == t and number(m["t"]) > pinned[t][1] and m["to"] != pinned[t][0]
                                                for m in migrations),
                    "cpus_after_pin": sorted({int(s["cpu"]) for s in slices if s["tid"] == t and float(s["start"]) >= pinned[t][1]})}  # type: ignore[call-overload, arg-type]
                   if t in pinned else {}),
                **({"exec_ms": after_exec[t]} if t in execs else {}),
                **({"parent": parent[t], "created_ms": round(created_ms[t], 6)} if t in parent else {}),
                "first_ms": span[t][0], "last_end_ms": span[t][1]} for t in seen]  # fmt: skip
    totals = {
        "sched.threads": len(threads),
        "sched.runtime_ms": sum(t["runtime_ms"] for t in threads),
        "sched.wait_ms": sum(t["wait_ms"] for t in threads),
        "sched.delay_ms": sum(t["delay_ms"] for t in threads),
        "sched.blocked_ms": sum(t["blocked_ms"] for t in threads),
        "sched.migrations": sum(int(t["migrations"]) for t in threads),
        "sched.cpus_used": len({c for t in threads for c in t["cpus"]}),
    }
    # The application: the threads of the name that ran the most, tools of the
    # run and shells left out (the wrappers and tracers that start or watch it
    # mostly wait, or work for themselves, and would swamp a breakdown of where
    # its own threads' time went; a shell that forks the program can outrun a
    # short program's busiest thread). Summed per name: one busy thread of a
    # shell must not outweigh a program's many.
    by_name: dict[str, float] = defaultdict(float)
    for t in threads:
        by_name[str(t["name"])] += float(t["runtime_ms"])
    names_ranked = (
        [n for n in by_name if n not in OBSERVERS] or [n for n in by_name if n not in RUN_TOOLS] or list(by_name)
    )
    app_name = max(names_ranked, key=lambda n: by_name[n], default=None)
    app = [t for t in threads if t["name"] == app_name]
    for part in ("runtime_ms", "wait_ms", "delay_ms", "blocked_ms"):
        totals[f"sched.app.{part}"] = sum(float(t[part]) for t in app)
    totals["sched.app.threads"] = len(app)
    region = parallel_region({int(t["tid"]) for t in app}, parent, created_ms, slices, waits_ms, sleeps_ms)
    totals.update({f"sched.par.{k}": v for k, v in region.items() if k != "participants"})
    return {
        "region": region,
        "root": root,
        "app": app_name,
        "threads": threads,
        "slices": slices,
        "migrations": migrations,
        "wakeups": wakeups,
        "totals": totals,
    }


def _overlap(intervals: Iterable[tuple[float, float]], lo: float, hi: float) -> float:
    """How much of [lo, hi] the intervals cover (they do not overlap each other)."""
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in intervals)


def _merged(intervals: Iterable[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """The intervals clipped to [lo, hi], overlaps joined, in order."""
    out: list[tuple[float, float]] = []
    for a, b in sorted((max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo)):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _partition(layers: Iterable[list[tuple[float, float]]], lo: float, hi: float) -> list[float]:
    """How much of [lo, hi] each layer covers that no earlier layer does.

    A recording that lost events can leave a thread running, runnable and
    asleep at once; taken in order of precedence the parts still add up to at
    most hi - lo, as a thread's time does."""
    taken: list[tuple[float, float]] = []
    out = []
    for layer in layers:
        both = _merged([*taken, *layer], lo, hi)
        out.append(sum(b - a for a, b in both) - sum(b - a for a, b in taken))
        taken = both
    return out


def parallel_region(
    app: set[int],
    parent: dict[int, int],
    created: dict[int, float],
    slices: list[dict[str, object]],
    waits: list[tuple[int, float, float]],
    sleeps: list[tuple[int, float, float, int]],
) -> dict[str, object]:
    """Where the threads of the parallel region spent it (times in ms), for a speedup stack.

    The creator is the application thread that created the most of the
    others; the workers, those of its children that ran or waited for a CPU
    at least PARTICIPATES of the region, which runs from the first worker's
    creation to the end of the last one's last slice (T_p). The creator takes
    part when it ran that much of the region and at least CREATOR_SHARE of an
    average worker's running time (it worked beside them); else it only
    waited (db_bench's main thread, a pthread_join). Per participant, its T_p
    is running + runnable (`wait_ms`) + blocked + imbalance: a worker's time
    in the region before it was created and after its last slice, and the
    creator's join wait, its sleeps that a worker ended once the first worker
    was in its last slice (pthread_join, or db_bench's wait for 'all done'), which is
    waiting for the others, not for a lock. What the recording missed (lost
    events) is in none of them."""
    runs: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for s in slices:
        runs[int(s["tid"])].append((float(s["start"]), float(s["end"])))  # type: ignore[call-overload, arg-type]
    waited: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for t, a, b in waits:
        waited[t].append((a, b))
    slept: dict[int, list[tuple[float, float]]] = defaultdict(list)
    woken_by: dict[tuple[int, float], int] = {}
    for t, a, b, w in sleeps:
        slept[t].append((a, b))
        woken_by[(t, b)] = w
    children: dict[int, list[int]] = defaultdict(list)
    for child, p in parent.items():
        if child in app and p in app and runs.get(child):
            children[p].append(child)
    first = {t: created.get(t, min(a for a, _ in runs[t])) for t in runs}
    last = {t: max(b for _, b in runs[t]) for t in runs}
    busy = [t for t in app if runs.get(t)]
    if not children:  # one thread did everything: its lifetime is the region
        if not busy:
            return {}
        only = max(busy, key=lambda t: sum(b - a for a, b in runs[t]))
        creator, workers, lo, hi = only, [only], first[only], last[only]
    else:
        creator = max(children, key=lambda p: (len(children[p]), -first.get(p, 0.0)))
        workers = children[creator]
        for _ in range(2):  # the span of the workers, then of those that took part in it
            lo, hi = min(first[t] for t in workers), max(last[t] for t in workers)
            length = max(hi - lo, 1e-9)
            active = [t for t in workers
                      if (_overlap(runs[t], lo, hi) + _overlap(waited[t], lo, hi)) >= PARTICIPATES * length]  # fmt: skip
            workers = active or workers
        lo, hi = min(first[t] for t in workers), max(last[t] for t in workers)
    length = hi - lo
    parts = {"running_ms": 0.0, "wait_ms": 0.0, "blocked_ms": 0.0, "imbalance_ms": 0.0}
    for t in workers:
        start, stop = max(lo, first[t]), last[t]
        ran, waiting, blocked = _partition((runs[t], waited[t], slept[t]), start, stop)
        parts["running_ms"] += ran
        parts["wait_ms"] += waiting
        parts["blocked_ms"] += blocked
        parts["imbalance_ms"] += (start - lo) + (hi - stop)
    # A wait for the workers is ended by one of them (or an unseen waker) once
    # the first worker is in its last slice: a worker's exit for pthread_join,
    # the last one's signal for a condition variable (then perhaps the mutex).
    done = min(max(a for a, _ in runs[t]) for t in workers)
    joins = [(a, b) for a, b in slept[creator] if b >= done and woken_by.get((creator, b), -1) in {-1, *workers}]
    joins = joins if creator not in workers else []
    join_wait = _overlap(joins, lo, hi)
    worked = _overlap(runs[creator], lo, hi)
    average = sum(_overlap(runs[t], lo, hi) for t in workers) / len(workers)
    takes_part = creator not in workers and worked >= max(PARTICIPATES * max(length, 1e-9), CREATOR_SHARE * average)
    participants = [*workers, *([creator] if takes_part else [])]
    if takes_part:
        ran, waiting, blocked = _partition((runs[creator], waited[creator], slept[creator]), lo, hi)
        joined = min(join_wait, blocked)
        parts["running_ms"] += ran
        parts["wait_ms"] += waiting
        parts["blocked_ms"] += blocked - joined
        parts["imbalance_ms"] += joined
    return {
        "participants": sorted(participants),
        "threads": len(participants),
        "region_ms": length,
        **parts,
        "join_wait_ms": join_wait,
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
