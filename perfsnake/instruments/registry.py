"""The instrument catalog: every instrument kind, registered once.

The same face as the other catalogs (perfsnake.benchmarks, perfsnake.platforms,
perfsnake.importers): `CATALOG`, `names()` and `create(spec, origin, key)`,
re-exported by perfsnake.instruments. A new instrument is a class in one of
the kind modules (wrappers, libs, profiling, locks, hooks) plus one entry in
its section's table here; the campaign schema's name lists and the docs are
checked against these tables by tests/test_registries.py.
"""

from __future__ import annotations

from collections.abc import Mapping

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

#: The instrument catalog: every kind, whatever its section (the names are
#: unique across sections, so a kind names one class).
CATALOG: dict[str, type[Instrument]] = {**WRAPPERS, **LIBS, **HOOKS}


def names() -> list[str]:
    """Every instrument kind, in the catalog's order (wrappers, libraries, hooks)."""
    return list(CATALOG)


def create(spec: str | Mapping[str, object], origin: str, key: str) -> Instrument:
    """The instrument a campaign entry names (a kind's name, or a mapping with its type), at `key`
    (e.g. `wrappers[0]`); which section may hold it is perfsnake.instruments' check."""
    mapping = {"type": spec} if isinstance(spec, str) else spec
    return CATALOG[str(mapping["type"])](mapping, origin, key)
