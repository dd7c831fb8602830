"""The instrument catalog: every instrument kind, registered once.

A new instrument is a class in one of the kind modules (wrappers, libs,
profiling, locks, hooks) plus one entry here; the campaign schema's name
lists are checked against these tables by tests/test_registries.py.
"""

from __future__ import annotations

from perfsnake.instruments.attach import Attach
from perfsnake.instruments.base import Instrument
from perfsnake.instruments.hooks import Command, Cooldown, Daemon, DropCaches, Governor, Hook, Monitor, Placement
from perfsnake.instruments.libs import Allocator, Jemalloc, Preload, SharedLib, Tcmalloc
from perfsnake.instruments.locks import Lock
from perfsnake.instruments.offcpu import OffCpu
from perfsnake.instruments.profiling import PerfRecord, PerfStat
from perfsnake.instruments.sched import SchedTimeline
from perfsnake.instruments.wrappers import Env, Ltrace, Nice, Numactl, Strace, Taskset, Time, Valgrind, Wrapper

WRAPPERS: dict[str, type[Wrapper]] = {
    w.kind: w
    for w in (Taskset, Numactl, Env, Nice, Time, Strace, Ltrace, Valgrind, PerfStat, PerfRecord, SchedTimeline, OffCpu)
}
LIBS: dict[str, type[SharedLib]] = {lib.kind: lib for lib in (Jemalloc, Tcmalloc, Allocator, Preload, Lock)}
HOOKS: dict[str, type[Hook]] = {
    h.kind: h for h in (Daemon, Placement, Monitor, DropCaches, Governor, Cooldown, Command, Attach)
}

#: campaign section -> the kinds it accepts
SECTIONS: dict[str, dict[str, type[Instrument]]] = {
    "wrappers": WRAPPERS,  # type: ignore[dict-item]
    "shared_libs": LIBS,  # type: ignore[dict-item]
    "pre_run_hooks": HOOKS,  # type: ignore[dict-item]
    "post_run_hooks": HOOKS,  # type: ignore[dict-item]
}
