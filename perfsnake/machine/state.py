"""Cheap machine state around each run, for drift and stability flags.

Read from /proc and /sys just before the launcher starts and just after it
returns (never inside the timed interval): the 1-minute load, the CPU time
the whole machine spent busy, available memory and the current frequency of
each CPU where cpufreq exposes it. Collect turns two snapshots into what a
careful reviewer asks: how loaded the machine was, and how much CPU other
processes used while the benchmark ran.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_FILE = "machine.json"


def _busy_seconds() -> float | None:
    """CPU time all CPUs spent not idle since boot (from /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(v) for v in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _available_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _mean_mhz() -> float | None:
    freqs = []
    for path in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"):
        try:
            freqs.append(int(path.read_text()) / 1000)
        except (OSError, ValueError):
            continue
    return sum(freqs) / len(freqs) if freqs else None


def snapshot() -> dict[str, float | None]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"load1": load, "busy_s": _busy_seconds(), "mem_available_mb": _available_mb(), "cpu_mhz": _mean_mhz()}


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
