"""What this machine's kernel and CPU let an instrument observe.

One owner for the questions instruments ask before any run: is there a
hardware PMU (cycles, instructions, cache events), kprobes, uprobes, BTF, a
given tracepoint, and may this user record the whole machine. The answers
come from sysfs and procfs, are cached per process, and go into the
machine's metadata, so a reader knows what the instruments could see.
`perfsnake capabilities` prints them.
"""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

from perfsnake.machine.sysinfo import online_cpus, online_nodes, parse_cpu_list

EVENT_SOURCES = Path("/sys/bus/event_source/devices")
TRACEFS = (Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events"))
NODES = Path("/sys/devices/system/node")
CPUS = Path("/sys/devices/system/cpu")
BTF = Path("/sys/kernel/btf/vmlinux")
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
PERF_TYPE_RAW = 4  # the CPU's own PMU registers with this type


@cache
def hardware_pmu() -> bool:
    """A CPU PMU is registered (a VM without PMU passthrough has only software ones)."""
    try:
        sources = list(EVENT_SOURCES.iterdir())
    except OSError:
        return False
    for source in sources:
        try:
            if int((source / "type").read_text()) == PERF_TYPE_RAW:
                return True
        except (OSError, ValueError):
            continue
    return False


@cache
def numa_nodes() -> dict[int, tuple[int, ...]]:
    """The online NUMA nodes and their CPUs (a kernel without NUMA: one node of every CPU)."""
    nodes: dict[int, tuple[int, ...]] = {}
    for node in online_nodes():
        try:
            cpus = tuple(parse_cpu_list((NODES / f"node{node}" / "cpulist").read_text()))
        except OSError:
            continue
        if cpus:  # a memory-only node runs no thread
            nodes[node] = cpus
    return nodes or {0: online_cpus()}


@cache
def node_distances() -> dict[int, tuple[int, ...]]:
    """Each node's row of the firmware's distance table (SLIT: 10 local), over `numa_nodes()`."""
    rows: dict[int, tuple[int, ...]] = {}
    every = sorted(online_nodes())
    for node in numa_nodes():
        try:
            row = [int(v) for v in (NODES / f"node{node}" / "distance").read_text().split()]
        except (OSError, ValueError):
            row = []
        if len(row) == len(every):
            rows[node] = tuple(row[every.index(other)] for other in numa_nodes())
        else:  # no table: every other node one step away
            rows[node] = tuple(10 if other == node else 20 for other in numa_nodes())
    return rows


@cache
def cache_domains() -> tuple[tuple[int, ...], ...]:
    """The sets of online CPUs that share a last-level cache (each CPU's
    highest cache level, as sysfs lists it); a CPU without cache facts is a
    domain of its own."""
    domains: set[tuple[int, ...]] = set()
    online = set(online_cpus())
    for cpu in sorted(online):
        levels: list[tuple[int, tuple[int, ...]]] = []
        for index in (CPUS / f"cpu{cpu}" / "cache").glob("index*"):
            try:
                level = int((index / "level").read_text())
                shared = tuple(c for c in parse_cpu_list((index / "shared_cpu_list").read_text()) if c in online)
            except (OSError, ValueError):
                continue
            levels.append((level, shared))
        domains.add(max(levels)[1] if levels else (cpu,))
    return tuple(sorted(domains))


def _present(path: Path) -> bool | None:
    """Whether `path` exists; None when this user may not look (tracefs is
    root-only on most distributions: an unprivileged user's question must be
    answered "no, needs root", not raise)."""
    try:
        path.stat()
    except PermissionError:
        return None
    except OSError:
        return False
    return True


def kprobes() -> bool:
    return _present(EVENT_SOURCES / "kprobe") is True


def uprobes() -> bool:
    return _present(EVENT_SOURCES / "uprobe") is True


def btf() -> bool:
    return _present(BTF) is True


def _events_dir() -> Path | None | bool:
    """The readable tracefs events directory; False: not mounted; None: not readable by this user."""
    denied = False
    for root in TRACEFS:
        found = _present(root)
        if found is None:
            denied = True
        elif found and os.access(root, os.R_OK | os.X_OK):
            return root
        elif found:
            denied = True
    return None if denied else False


def _mount_tracefs() -> None:
    if os.geteuid() != 0 or not TRACEFS[0].parent.is_dir():
        return
    try:
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS[0].parent)],
                       capture_output=True, check=False, timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        pass  # no mount(8), or it hung: tracefs_problem() says what is missing


@cache
def tracefs_problem() -> str | None:
    """Why this user cannot see tracepoints, in a few words (None: it can).

    As root, tracefs is mounted first when it is not: a freshly booted machine
    may not have it until some tool does (perf mounts it on its first use of a
    tracepoint), so asking before perf ran would refuse a campaign that works.
    """
    if _events_dir() is False:
        _mount_tracefs()
    found = _events_dir()
    if found is None:
        return f"tracepoints need read access to tracefs ({TRACEFS[0].parent}): root only on this machine"
    if found is False:
        return "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing as root)"
    return None


def tracefs() -> bool:
    """Tracepoints are visible to this user."""
    return tracefs_problem() is None


@cache
def missing_tracepoint(events: tuple[str, ...]) -> str | None:
    """The first of `events` ("group:name") this kernel lacks (None: all there,
    or this user cannot tell: `tracepoint_problem` says which)."""
    root = _events_dir()
    if not isinstance(root, Path):
        return None
    for event in events:
        group, name = event.split(":")
        if _present(root / group / name) is not True:
            return event
    return None


def tracepoint_problem(events: tuple[str, ...]) -> str | None:
    """Why these tracepoints cannot be used here, in a line (None: they can)."""
    problem = tracefs_problem()
    if problem:
        return problem
    absent = missing_tracepoint(events)
    return f"this kernel has no {absent} tracepoint" if absent else None


def paranoid() -> int | None:
    try:
        return int(PARANOID.read_text())
    except (OSError, ValueError):
        return None


def whole_machine_problem() -> str | None:
    """Why this user may not record every CPU's tracepoints (None: it may)."""
    level = paranoid()
    if os.geteuid() == 0 or level is None or level <= -1:
        return None
    return f"recording every CPU needs root or kernel.perf_event_paranoid = -1 (it is {level})"


def sampling_problem() -> str | None:
    """Why perf (stat or record) of our own processes cannot work here (None:
    it can). Debian's level 3 forbids perf to unprivileged users altogether."""
    level = paranoid()
    if os.geteuid() == 0 or level is None or level <= 2:
        return None
    return f"perf needs root or kernel.perf_event_paranoid <= 2 (it is {level})"


def recording_problem(events: tuple[str, ...]) -> str | None:
    """Why `perf record -a` of these tracepoints cannot work here, in a line (None: it can)."""
    return whole_machine_problem() or tracepoint_problem(events)


def describe() -> dict[str, object]:
    """The answers, for the machine's metadata and `perfsnake capabilities`."""
    return {
        "hardware_pmu": hardware_pmu(),
        "kprobes": kprobes(),
        "uprobes": uprobes(),
        "btf": btf(),
        "tracefs": tracefs(),
        "sched_tracepoints": tracepoint_problem(("sched:sched_switch", "sched:sched_waking")) is None,
        "lock_tracepoints": tracepoint_problem(("lock:contention_begin", "lock:contention_end")) is None,
        "numa_nodes": len(numa_nodes()),
        "cache_domains": len(cache_domains()),
        "perf_event_paranoid": paranoid(),
        "root": os.geteuid() == 0,
    }


def summary() -> str:
    """One line: `hardware_pmu=no kprobes=no ...` (the CSV header's `capabilities`)."""

    def word(value: object) -> str:
        return {True: "yes", False: "no"}.get(value, str(value)) if isinstance(value, bool) else str(value)

    return " ".join(
        f"{k}={word(v)}"
        for k, v in describe().items()
        if k not in ("perf_event_paranoid", "root", "numa_nodes", "cache_domains")
    )
