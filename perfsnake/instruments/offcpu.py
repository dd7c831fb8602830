"""Off-CPU analysis: where the benchmark's threads block, and for how long.

The `offcpu` wrapper (an observer) records, for the whole machine, every
context switch with its call graph (`perf record -a -g -e sched:sched_switch`)
and every wake-up, into offcpu.data; the benchmark's threads are its process
tree (its pid is written to offcpu.pid, children followed through forks). A
thread switched out asleep (state S or D) is blocked until it is woken (or,
without a recorded wake-up, until it runs again): its stack at the switch,
weighted by that time in microseconds, is one line of the run's folded
off-CPU stacks (offcpu.folded), which the rules of rules/sched.smk draw as
off-CPU flame graphs and, between records named by `flamegraph_pairs:`, differential
ones. Switch-outs of runnable threads (preemption) are the timeline's
concern, not blocking, and are left out.

Some machines never deliver tracepoints fired in an idle CPU's context (on
this project's VMs: every CPU but the first), so neither the timer's wake-up
of a sleeping thread nor its switch-in is there. Its blocked time then ends
at the first event in its own context (usually its next switch-out): an upper
bound, by the little it ran before that.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from perfsnake import layout
from perfsnake.instruments.base import Context
from perfsnake.instruments.sched import buffer_option, count_lost, lost_events
from perfsnake.instruments.wrappers import Wrapper
from perfsnake.machine import capabilities

DATA_FILE = "offcpu.data"
PID_FILE = "offcpu.pid"
FOLDED = "offcpu.folded"
LOST = "offcpu.lost_events"
EVENTS = ("sched:sched_switch", "sched:sched_waking", "sched:sched_process_fork")
_HEAD = re.compile(
    r"^\s*(?P<comm>.+?)\s+(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>[0-9.]+):\s+(?P<event>sched:\w+):\s+(?P<args>.*)$"
)
_FIELD = re.compile(r"(\w+)=(\S+)")
_FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>.+?)(?:\+0x[0-9a-f]+)?\s+\((?P<dso>.*)\)$")


class OffCpu(Wrapper):
    kind = "offcpu"
    observer = True
    options: dict[str, object] = {"call_graph": "fp"}
    MODES = ("fp", "dwarf")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.require_tool("perf", "linux-perf")
        if self.spec["call_graph"] not in self.MODES:
            raise self.fail(
                f"call graph mode {self.spec['call_graph']!r} (choose from {', '.join(self.MODES)})", "call_graph"
            )
        problem = capabilities.recording_problem(EVENTS)
        if problem:
            raise self.fail(f"{problem}: off-CPU analysis records every CPU's scheduler tracepoints")

    def declared_metrics(self) -> list[str]:
        return [LOST]

    def metrics(self, run_dir: Path) -> dict[str, object]:
        data = run_dir / DATA_FILE
        return {LOST: lost_events(data)} if data.exists() else {}

    def needs_flame_tools(self) -> bool:
        return True

    def targets(self, campaign: str, plan: Mapping[str, Sequence[int]], pairs: list[tuple[str, str]]) -> list[str]:
        out = [f"{layout.run_dir(campaign, r, i)}/offcpu.svg" for r, runs in plan.items() for i in runs]
        out += [layout.offcpu_diff(campaign, layout.flat(a), layout.flat(b)) for a, b in pairs]
        return out

    def prefix(self, ctx: Context) -> list[str]:
        argv = ["perf", "record", "--quiet", "-a", *buffer_option(), "--call-graph", str(self.spec["call_graph"])]
        argv += ["-o", DATA_FILE, "-e", EVENTS[0]]
        for event in EVENTS[1:]:  # stacks only where threads block: a smaller recording, fewer events lost
            argv += ["-e", f"{event}/call-graph=no/"]
        return [*argv, "--", "/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', PID_FILE]


def _records(text: str) -> Iterator[tuple[int, float, str, dict[str, str], list[str]]]:
    """(tid, time, event, fields, frames innermost first) per event of `perf script`."""
    head: tuple[int, float, str, dict[str, str]] | None = None
    frames: list[str] = []
    for line in [*text.splitlines(), ""]:
        m = _HEAD.match(line)
        if m or not line.strip():
            if head is not None:
                yield (*head, frames)
            head, frames = None, []
            if m:
                args = m.group("args")
                left, _, right = args.partition("==>")
                fields = {**dict(_FIELD.findall(left)), **{f"to_{k}": v for k, v in _FIELD.findall(right)}}
                head = (int(m.group("tid")), float(m.group("time")), m.group("event"), fields)
        elif head is not None and (f := _FRAME.match(line)):
            frames.append(f.group("sym"))


def fold(text: str, root: int) -> Counter[str]:
    """Blocked time (us) per stack of the threads descending from `root`."""
    ours = {root}
    pending: dict[int, tuple[float, str]] = {}  # tid -> (asleep since, folded stack)
    out: Counter[str] = Counter()
    for tid, time, event, f, frames in _records(text):
        name = event.split(":")[1]
        if tid in pending:  # an event in its own context: it ran, though its wake-up went unrecorded
            since, stack = pending.pop(tid)
            out[stack] += round((time - since) * 1e6)
        if name == "sched_process_fork" and int(f.get("pid", -1)) in ours:
            ours.add(int(f["child_pid"]))
        elif name == "sched_switch":
            prev, nxt = int(f.get("prev_pid", -1)), int(f.get("to_next_pid", -1))
            if nxt in pending:  # ran again without a recorded wake-up
                since, stack = pending.pop(nxt)
                out[stack] += round((time - since) * 1e6)
            if prev in ours and f.get("prev_state", "R")[:1] in ("S", "D"):
                stack = ";".join([f.get("prev_comm", "?"), *reversed(frames)]) if frames else f.get("prev_comm", "?")
                pending[prev] = (time, stack)
        elif name == "sched_waking" and int(f.get("pid", -1)) in pending:
            since, stack = pending.pop(int(f["pid"]))
            out[stack] += round((time - since) * 1e6)
    return out


def fold_run(run_dir: Path, output: Path) -> None:
    """The run's folded off-CPU stacks (empty when the run left no recording)."""
    data, pid = run_dir / DATA_FILE, run_dir / PID_FILE
    lines: list[str] = []
    if data.exists() and pid.exists() and pid.read_text().strip():
        proc = subprocess.run(["perf", "script", "-i", str(data), "--show-lost-events", "-F", "comm,tid,cpu,time,event,trace,ip,sym,dso"],
                              capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
        folded = fold(proc.stdout, int(pid.read_text()))
        lines = [f"{stack} {weight}" for stack, weight in sorted(folded.items()) if weight > 0]
        lost = count_lost(proc.stdout)  # the same pass: no second read of the recording
        if lost:  # the graph undercounts: say so where the user looks, not only in the log
            message = f"perfsnake: offcpu: {run_dir}: perf lost {lost} events (buffers full); blocked time undercounted"
            print(message, file=sys.stderr)
            print(message, file=sys.__stderr__)
    output.write_text("".join(f"{line}\n" for line in lines))
