"""Cheap machine state around each run, for drift and stability flags.

The launcher (psrun) reads /proc and /sys just before its clock starts and
just after it stops (never inside the timed interval) and puts both
snapshots in status.json's `machine`: the 1-minute load, the CPU time the
whole machine spent busy, available memory and the mean current frequency
of the CPUs where cpufreq exposes it. Collect turns them into what a
careful reviewer asks (`summarise`): how loaded the machine was, and how
much CPU other processes used while the benchmark ran.

Before each run also its state's identity (`identity()`): the settings that
change what a benchmark measures and stay put unless someone or a reboot
changes them (kernel, boot, microcode, frequency policy, SMT, huge pages,
online CPUs, the perf sample rate, ASLR). Collect compares every run's with
the campaign's first run (`annotate_drift`); a resume compares the runs it
keeps with the machine now (`kept_differences`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping

from perfsnake.machine import metadata
from perfsnake.machine.sysinfo import cpu_ranges, current_online_cpus

STATE_FILE = "machine.json"
#: machine.json's key (and result.json's `machine_state`) for the identity
IDENTITY = "state"
#: The identity's keys that are compared, in the order lines name them; its
#: `hostname` only says which runs to compare (each node of a cluster with its own first run).
DRIFT_KEYS = ("kernel", "boot_id", "microcode", "governor", "turbo", "smt", "thp", "thp_defrag", "online_cpus",
              "frequency_limits", "perf_event_max_sample_rate", "aslr")  # fmt: skip


def summarise(before: dict, after: dict, run_cpu_s: float | None) -> dict[str, float | None]:
    """What collect records per run: load at start, available memory, mean
    frequency, and other processes' CPU seconds during the run (the machine's
    busy time minus the benchmark's own)."""
    other = None
    if before.get("busy_s") is not None and after.get("busy_s") is not None:
        busy = after["busy_s"] - before["busy_s"]
        other = max(0.0, busy - (run_cpu_s or 0.0))
    return {
        "load1": before.get("load1"),
        "mem_available_mb": before.get("mem_available_mb"),
        "cpu_mhz": before.get("cpu_mhz"),
        "other_cpu_s": other,
    }


def _per_cpu(values: Mapping[int, str]) -> str | None:
    """CPU -> value as one comparable text: `performance on 0-3, powersave on 4-7`."""
    if not values:
        return None
    groups: dict[str, list[int]] = {}
    for cpu, value in sorted(values.items()):
        groups.setdefault(value, []).append(cpu)
    return ", ".join(f"{value} on {cpu_ranges(cpus)}" for value, cpus in groups.items())


#: (pid, kernel, boot id): what no process outlives, read once per process
_this_boot: tuple[int, str, str | None] | None = None


def _boot() -> tuple[str, str | None]:
    """The kernel release and boot id: fixed for as long as this process
    lives (another boot is another process), so read once, not before each
    run of a batch."""
    global _this_boot
    if _this_boot is None or _this_boot[0] != os.getpid():
        _this_boot = (os.getpid(), os.uname().release, metadata.boot_id() or None)
    return _this_boot[1], _this_boot[2]


def identity() -> dict[str, object]:
    """The machine state a run is measured in, from a few small files (the
    readers of perfsnake.machine.metadata, which the CSV's metadata and
    `perfsnake tune` use too). None where this machine has no such setting
    (no cpufreq on a VM, no SMT control)."""
    kernel, boot_id = _boot()
    return {
        "hostname": os.uname().nodename,
        "kernel": kernel,
        "boot_id": boot_id,
        "microcode": metadata.microcode(),
        "governor": _per_cpu(metadata.governor_by_cpu()),
        "turbo": metadata.turbo(),
        "smt": metadata.smt(),
        "thp": metadata.transparent_hugepages(),
        "thp_defrag": metadata.transparent_hugepage_defrag(),
        "online_cpus": cpu_ranges(current_online_cpus()),
        "frequency_limits": _per_cpu(metadata.frequency_limits()),
        "perf_event_max_sample_rate": metadata.perf_sample_rate(),
        "aslr": metadata.randomize_va_space(),
    }


def drift(
    first: Mapping[str, object], this: Mapping[str, object], ignore: Collection[str] = ()
) -> dict[str, dict[str, object]]:
    """The keys whose value differs between two identities, each with both
    values. A key only one of them recorded (another perfsnake version) is
    not compared, nor those in `ignore` (what the campaign's hooks set)."""
    return {
        key: {"first": first[key], "this": this[key]}
        for key in DRIFT_KEYS
        if key in first and key in this and first[key] != this[key] and key not in ignore
    }


def drift_text(found: Mapping[str, Mapping[str, object]], second: str = "this") -> str:
    """`thp: always -> never; boot_id: 8c1f... -> 3a9e...` (empty when nothing drifted)."""
    return "; ".join(f"{key}: {values['first']} -> {values[second]}" for key, values in found.items())


def annotate_drift(results: Iterable[dict], ignore: Collection[str] = ()) -> None:
    """Give each result that recorded its machine state (`machine_state`) a
    `state_drift`: what differs from the campaign's first run on the same
    host (by start time), `{}` when nothing does (`ignore`: as drift's)."""
    recorded = sorted((r for r in results if isinstance(r.get("machine_state"), dict)),
                      key=lambda r: r.get("start_epoch") or 0.0)  # fmt: skip
    first: dict[object, Mapping[str, object]] = {}
    for result in recorded:
        state = result["machine_state"]
        reference = first.setdefault(state.get("hostname"), state)
        result["state_drift"] = drift(reference, state, ignore)


def kept_differences(
    kept: Iterable[Mapping[str, object]], now: Mapping[str, object], ignore: Collection[str] = ()
) -> tuple[int, dict[str, dict[str, object]]]:
    """Of the identities recorded by runs a resume keeps (in start order),
    how many were measured in another state than `now` on this host, and the
    keys that differ (the earliest such run's value -> now's; `ignore`: as drift's)."""
    count = 0
    keys: dict[str, dict[str, object]] = {}
    for state in kept:
        if state.get("hostname") != now.get("hostname"):
            continue  # measured on another node: its own state, not this one's
        found = drift(state, now, ignore)
        if found:
            count += 1
            for key, values in found.items():
                keys.setdefault(key, {"first": values["first"], "now": values["this"]})
    return count, {k: keys[k] for k in DRIFT_KEYS if k in keys}
