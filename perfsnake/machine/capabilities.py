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

EVENT_SOURCES = Path("/sys/bus/event_source/devices")
TRACEFS = (Path("/sys/kernel/tracing/events"), Path("/sys/kernel/debug/tracing/events"))
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


def kprobes() -> bool:
    return (EVENT_SOURCES / "kprobe").exists()


def uprobes() -> bool:
    return (EVENT_SOURCES / "uprobe").exists()


def btf() -> bool:
    return BTF.exists()


@cache
def tracefs() -> bool:
    """Tracepoints are visible; as root, tracefs is mounted first when it is not.

    A freshly booted machine may not have it mounted until some tool does (perf
    mounts it on its first use of a tracepoint), so asking before perf ran would
    refuse a campaign that works.
    """
    if not any(root.is_dir() for root in TRACEFS) and os.geteuid() == 0 and TRACEFS[0].parent.is_dir():
        try:
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS[0].parent)],
                           capture_output=True, check=False, timeout=10)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            pass  # no mount(8), or it hung: the answer below says what is missing
    return any(root.is_dir() for root in TRACEFS)


@cache
def missing_tracepoint(events: tuple[str, ...]) -> str | None:
    """The first of `events` ("group:name") this kernel lacks (None: all there)."""
    tracefs()  # mounted if need be
    for event in events:
        group, name = event.split(":")
        if not any((root / group / name).is_dir() for root in TRACEFS):
            return event
    return None


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
    """Why `perf record` of our own processes cannot work here (None: it can).
    Debian's level 3 forbids perf to unprivileged users altogether."""
    level = paranoid()
    if os.geteuid() == 0 or level is None or level <= 2:
        return None
    return f"sampling needs root or kernel.perf_event_paranoid <= 2 (it is {level})"


def recording_problem(events: tuple[str, ...]) -> str | None:
    """Why `perf record -a` of these tracepoints cannot work here, in a line (None: it can)."""
    problem = whole_machine_problem()
    if problem:
        return problem
    absent = missing_tracepoint(events)
    return f"this kernel has no {absent} tracepoint (tracefs)" if absent else None


def describe() -> dict[str, object]:
    """The answers, for the machine's metadata and `perfsnake capabilities`."""
    return {
        "hardware_pmu": hardware_pmu(),
        "kprobes": kprobes(),
        "uprobes": uprobes(),
        "btf": btf(),
        "tracefs": tracefs(),
        "sched_tracepoints": missing_tracepoint(("sched:sched_switch", "sched:sched_waking")) is None,
        "lock_tracepoints": missing_tracepoint(("lock:contention_begin", "lock:contention_end")) is None,
        "perf_event_paranoid": paranoid(),
        "root": os.geteuid() == 0,
    }


def summary() -> str:
    """One line: `hardware_pmu=no kprobes=no ...` (the CSV header's `capabilities`)."""

    def word(value: object) -> str:
        return {True: "yes", False: "no"}.get(value, str(value)) if isinstance(value, bool) else str(value)

    return " ".join(f"{k}={word(v)}" for k, v in describe().items() if k not in ("perf_event_paranoid", "root"))
