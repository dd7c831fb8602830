"""The placement daemon for asymsched, sam and sas, started by the Placement
hook for the run (as psplace is for the simple policies):

    python -m perfsnake.placement.daemon --policy sam --dir RUN_DIR [--interval-ms 1000]
        [--bandwidth JSON] [--events role=EVENT,...]

Every interval it finds the run's threads (processes whose working directory
is the run directory, outside the daemon's process group), counts each
thread's events with `perf stat --per-thread` and, at the same time, samples
remote-cache loads with their data addresses (`perf record -d`, for the
sharing signatures), asks the policy, and sets each moved thread's affinity
with sched_setaffinity. Every decision and every pin is a line on stdout,
which the run directory keeps (daemon-placement/stdout.txt).

Each piece is a function of its inputs (perf's text, a decision), so they are
tested apart from perf and the PMU this runtime needs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfsnake.placement import OBSERVERS, host
from perfsnake.placement.model import DEFAULT_THRESHOLDS, Decision, ThreadSample, Thresholds, Topology
from perfsnake.placement.policies import POLICIES

#: What the policies count, by role, and the event that samples remote-cache
#: loads with their addresses (`address`); per CPU family, the first set
#: whose events this machine's perf knows is used.
EVENT_SETS: tuple[dict[str, str], ...] = (
    {  # Intel Xeon, Skylake-SP and later
        "local_dram": "mem_load_l3_miss_retired.local_dram",
        "remote_dram": "mem_load_l3_miss_retired.remote_dram",
        "remote_cache": "mem_load_l3_miss_retired.remote_hitm",
        "address": "mem_load_l3_miss_retired.remote_hitm:pp",
    },
    {  # AMD Zen 4 (IBS samples every load with its address)
        "local_dram": "ls_dmnd_fills_from_sys.dram_io_near",
        "remote_dram": "ls_dmnd_fills_from_sys.dram_io_far",
        "remote_cache": "ls_dmnd_fills_from_sys.far_cache",
        "address": "ibs_op//",
    },
    {  # AMD Zen 3
        "local_dram": "ls_dmnd_fills_from_sys.mem_io_local",
        "remote_dram": "ls_dmnd_fills_from_sys.mem_io_remote",
        "remote_cache": "ls_dmnd_fills_from_sys.ext_cache_remote",
        "address": "ibs_op//",
    },
)
ROLES = ("local_dram", "remote_dram", "remote_cache", "address")
#: One address sample every this many events (perf record -c).
SAMPLE_PERIOD = 1000


# ---- reading: the run's threads, perf's outputs -------------------------------------------------


def run_threads(
    run_dir: Path, proc: Path = Path("/proc"), own_pgid: int | None = None, observers: frozenset[str] = OBSERVERS
) -> dict[int, int]:
    """The threads of the run's processes (working directory = the run
    directory, not in our process group), its observers left out (a shell,
    perf stat, ...: `observers`, process names): thread id -> process id."""
    own = os.getpgid(0) if own_pgid is None else own_pgid
    target = os.path.realpath(run_dir)
    found: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if os.getpgid(pid) == own or os.readlink(entry / "cwd") != target:
                continue
            if (entry / "comm").read_text().rstrip("\n") in observers:
                continue  # looked at again next time: a wrapper's child is named after it until it execs
            found.update({int(t.name): pid for t in (entry / "task").iterdir() if t.name.isdigit()})
        except OSError:
            continue  # it ended while we looked
    return found


def last_cpu(tid: int, proc: Path = Path("/proc")) -> int | None:
    """The CPU a thread last ran on (field 39 of its stat line)."""
    try:
        text = (proc / str(tid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()  # the name, in parentheses, may hold spaces
    return int(fields[36]) if len(fields) > 36 else None


def parse_perf_stat(text: str, roles: Mapping[str, str]) -> dict[int, dict[str, float]]:
    """`perf stat --per-thread -x,` output -> thread id -> role -> count.

    A line is `comm-tid,count,unit,event,run time,percent,metric,unit`; the
    command name may hold commas or dashes, so the fields are split from the
    right. Uncounted events (`<not counted>`, `<not supported>`) are absent."""
    by_event = {event.split(":")[0]: role for role, event in roles.items() if role != "address"}
    counts: dict[int, dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.rsplit(",", 7)
        if len(parts) != 8:
            continue
        who, count, _unit, event = parts[:4]
        match = re.search(r"-(\d+)$", who)
        role = by_event.get(event.split(":")[0])
        if not match or role is None:
            continue
        try:
            value = float(count)
        except ValueError:
            continue
        counts.setdefault(int(match.group(1)), {})[role] = value
    return counts


def parse_perf_script(text: str, region_bits: int) -> dict[int, dict[int, float]]:
    """`perf script -F tid,addr` output -> thread id -> memory region -> samples."""
    signatures: dict[int, dict[int, float]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        try:
            address = int(parts[1], 16)
        except ValueError:
            continue
        if address == 0:
            continue  # a sample without a data address
        region = address >> region_bits
        sig = signatures.setdefault(int(parts[0]), {})
        sig[region] = sig.get(region, 0.0) + 1
    return signatures


def samples_of(
    threads: Mapping[int, int], counts: Mapping[int, Mapping[str, float]], signatures: Mapping[int, Mapping[int, float]],
    cpus: Mapping[int, int | None], seconds: float,
) -> list[ThreadSample]:  # fmt: skip
    """One interval's ThreadSamples: counts as rates per second; a thread
    perf did not see counts nothing."""
    out = []
    for tid, pid in sorted(threads.items()):
        cpu = cpus.get(tid)
        if cpu is None:
            continue  # it ended
        c = counts.get(tid, {})
        out.append(ThreadSample(
            tid, pid, cpu,
            local_dram=c.get("local_dram", 0.0) / seconds, remote_dram=c.get("remote_dram", 0.0) / seconds,
            remote_cache=c.get("remote_cache", 0.0) / seconds, signature=dict(signatures.get(tid, {})),
        ))  # fmt: skip
    return out


@dataclass
class Sampler:
    """perf, run for one interval over the run's processes."""

    events: dict[str, str]
    region_bits: int = 12
    period: int = SAMPLE_PERIOD
    perf: str = "perf"

    def sample(self, pids: Sequence[int], seconds: float) -> tuple[dict[int, dict[str, float]], dict[int, dict[int, float]]]:  # fmt: skip
        """Counts and signatures over the same `seconds` (both perf runs at once)."""
        targets = ",".join(str(p) for p in sorted(set(pids)))
        counted = [e for role, e in self.events.items() if role != "address"]
        with tempfile.TemporaryDirectory(prefix="psplace-") as tmp:
            data = Path(tmp) / "perf.data"
            stat = subprocess.Popen(
                [self.perf, "stat", "--per-thread", "-x,", "-e", ",".join(counted), "-p", targets, "--", "sleep", f"{seconds:g}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            record = None
            if "address" in self.events:
                record = subprocess.Popen(
                    [self.perf, "record", "-q", "-d", "-c", str(self.period), "-e", self.events["address"], "-p", targets,
                     "-o", str(data), "--", "sleep", f"{seconds:g}"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
            _, stat_text = stat.communicate()
            signatures: dict[int, dict[int, float]] = {}
            if record is not None and record.wait() == 0 and data.exists():
                script = subprocess.run([self.perf, "script", "-i", str(data), "-F", "tid,addr"],
                                        capture_output=True, text=True, check=False)  # fmt: skip
                signatures = parse_perf_script(script.stdout, self.region_bits)
        return parse_perf_stat(stat_text, self.events), signatures


def choose_events(known: Callable[[str], bool], given: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The events to use: `given` (the campaign's), else the first of
    EVENT_SETS whose counted events this machine knows (None: none)."""
    if given:
        return dict(given)
    for events in EVENT_SETS:
        if all(known(e) for role, e in events.items() if role != "address"):
            return dict(events)
    return None


def perf_knows(event: str) -> bool:
    done = subprocess.run(["perf", "stat", "-e", event, "--", "true"], capture_output=True, check=False)
    return done.returncode == 0


# ---- applying ------------------------------------------------------------------------------------


def cpu_list(cpus: frozenset[int]) -> str:
    """0,1,2,5 -> 0-2,5 (the kernel's list format)."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def apply(
    decision: Decision, pinned: dict[int, frozenset[int]], setaffinity: Callable[[int, frozenset[int]], None] = os.sched_setaffinity,
) -> list[str]:  # fmt: skip
    """Set the affinity of each thread whose CPU set changed (`pinned`, what
    was set before, is updated); one log line per thread set or failed."""
    lines = []
    for tid, cpus in sorted(decision.cpus.items()):
        if pinned.get(tid) == cpus:
            continue
        at = time.monotonic()  # before the call: the moves it causes come after
        try:
            setaffinity(tid, cpus)
        except OSError as exc:
            lines.append(f"tid {tid} policy {decision.policy} cpus {cpu_list(cpus)} error {exc.strerror}")
            continue
        pinned[tid] = cpus
        lines.append(f"tid {tid} policy {decision.policy} cpus {cpu_list(cpus)} at {at:.6f}")
    return lines


def step(
    policy: str, topology: Topology, samples: Sequence[ThreadSample], pinned: dict[int, frozenset[int]], number: int,
    thresholds: Thresholds = DEFAULT_THRESHOLDS, setaffinity: Callable[[int, frozenset[int]], None] = os.sched_setaffinity,
) -> list[str]:  # fmt: skip
    """One interval's decision applied: its log lines."""
    decision = POLICIES[policy](topology, samples, thresholds)
    return [f"decision {number} {decision.reason}", *apply(decision, pinned, setaffinity)]


# ---- the daemon ----------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perfsnake.placement.daemon")
    parser.add_argument("--policy", required=True, choices=sorted(POLICIES))
    parser.add_argument("--dir", required=True, type=Path, help="the run directory")
    parser.add_argument("--interval-ms", type=int, default=1000)
    parser.add_argument("--bandwidth", help="link bandwidths, GB/s: a JSON list of rows, one per NUMA node")
    parser.add_argument("--events", default="", help="role=EVENT,... (roles: " + ", ".join(ROLES) + ")")
    parser.add_argument("--region-bits", type=int, default=12, help="a signature's region: 2^bits bytes")
    parser.add_argument("--observers", default=",".join(sorted(OBSERVERS)), help="process names never placed: NAME,...")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    problem = host.problem(args.policy)
    if problem:
        print(f"psplace: {problem}", file=sys.stderr)
        return 2
    given = dict(item.split("=", 1) for item in args.events.split(",") if item)
    events = choose_events(perf_knows, given)
    if events is None:
        print(f"psplace: perf knows none of the event sets of {args.policy} on this CPU; give them: --events role=EVENT,...", file=sys.stderr)  # fmt: skip
        return 2
    topology = host.topology(json.loads(args.bandwidth) if args.bandwidth else None)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    nodes = " ".join(f"node {i}: {cpu_list(frozenset(c))}" for i, c in zip(topology.node_ids, topology.nodes))
    print(f"psplace policy {args.policy} {nodes}; domains {' '.join(cpu_list(frozenset(d)) for d in topology.domains)}; events {json.dumps(events)}", flush=True)  # fmt: skip
    sampler = Sampler(events, args.region_bits)
    pinned: dict[int, frozenset[int]] = {}
    number = 0
    seconds = args.interval_ms / 1000
    while not stop:
        threads = run_threads(args.dir, observers=frozenset(args.observers.split(",")))
        if not threads:
            time.sleep(min(seconds, 0.05))  # the benchmark has not started yet
            continue
        counts, signatures = sampler.sample(list(threads.values()), seconds)
        cpus = {tid: last_cpu(tid) for tid in threads}
        number += 1
        for line in step(args.policy, topology, samples_of(threads, counts, signatures, cpus, seconds), pinned, number):
            print(line, flush=True)
    print(f"psplace done: {number} decisions, {len(pinned)} threads placed with policy {args.policy}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
