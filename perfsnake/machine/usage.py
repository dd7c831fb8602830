"""What each run used and what it waited for: peak memory, stall time, steal.

Standard columns of every run (`usage.<key>` in the CSV), no instrument to
add. The launcher reads them once the run has ended, outside the timed
interval (psrun.c, `read_usage`):

- peak memory: the run cgroup's `memory.peak` (every process of the run at
  once) where the cgroup has the memory controller; otherwise the largest
  single process's maximum resident set (`getrusage`'s `ru_maxrss`), which
  is the run's peak for one process and an underestimate for several.
  `peak_memory_source` says which.
- stall time: the seconds in which at least one of the run's tasks waited
  for a CPU, for memory or for I/O (pressure stall information, "some"),
  from the run's cgroup; without a cgroup the whole machine's over the run
  (`stall_source` is then "machine": it counts other processes' waits too).
- steal: CPU seconds the hypervisor gave other guests during the run
  (/proc/stat, all CPUs), the interference no process on this machine sees.
"""

from __future__ import annotations

#: The pressure kinds, as psrun names them in status.json's `usage`.
STALLS = ("cpu", "memory", "io")
#: A record's runs whose stall (or steal) shares of wall time are this far
#: apart (max - min) waited for different things: summary.csv flags them.
SHARE_SPREAD = 0.2
#: ... and whose peak memory differs by more than this fraction (max / min - 1).
PEAK_SPREAD = 0.1


def run_usage(status: dict) -> dict[str, object]:
    """The `usage` of one run's result from its status.json."""
    recorded: dict = status["usage"] if isinstance(status.get("usage"), dict) else {}
    usage: dict[str, object] = {}
    peak = recorded.get("peak_memory_bytes")
    if isinstance(peak, int | float):
        usage["peak_memory_mb"] = round(peak / 2**20, 3)
        usage["peak_memory_source"] = "cgroup"
    elif isinstance(status.get("maxrss_kb"), int | float) and status["maxrss_kb"] > 0:
        usage["peak_memory_mb"] = round(status["maxrss_kb"] / 1024, 3)
        usage["peak_memory_source"] = "maxrss"
    for kind in STALLS:
        value = recorded.get(f"{kind}_stall_us")
        if isinstance(value, int | float):
            usage[f"{kind}_stall_s"] = round(value / 1e6, 6)
    if recorded.get("stall_source"):
        usage["stall_source"] = recorded["stall_source"]
    around: dict = status["machine"] if isinstance(status.get("machine"), dict) else {}
    before, after = (around.get(side) or {} for side in ("before", "after"))
    if isinstance(before.get("steal_s"), int | float) and isinstance(after.get("steal_s"), int | float):
        usage["steal_s"] = round(max(0.0, after["steal_s"] - before["steal_s"]), 2)
    return usage


def usage_flags(record_runs: list[dict]) -> list[str]:
    """A record's flags when its runs differ by what they waited for or used:
    stall or steal shares of wall time SHARE_SPREAD apart, peak memory more
    than PEAK_SPREAD apart."""
    flags = []
    for key, what in (*((f"{k}_stall_s", f"{k} stall") for k in STALLS), ("steal_s", "steal")):
        shares = [
            float(r["usage"][key]) / float(r["wall_s"])
            for r in record_runs
            if isinstance((r.get("usage") or {}).get(key), int | float) and r.get("wall_s")
        ]
        if len(shares) >= 2 and max(shares) - min(shares) > SHARE_SPREAD:
            flags.append(f"runs differ by {what}: {min(shares):.0%} to {max(shares):.0%} of their wall time")
    peaks = [float(r["usage"]["peak_memory_mb"]) for r in record_runs if (r.get("usage") or {}).get("peak_memory_mb")]
    if len(peaks) >= 2 and min(peaks) > 0 and max(peaks) / min(peaks) - 1 > PEAK_SPREAD:
        flags.append(f"runs differ by peak memory: {min(peaks):.1f} to {max(peaks):.1f} MB")
    return flags
