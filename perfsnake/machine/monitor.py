"""Bottleneck monitor: samples the machine while a benchmark runs.

Run as `python -m perfsnake.machine.monitor --out FILE --interval S` (started by
the `monitor` hook through the launcher, stopped with SIGTERM). Every
interval it reads /proc/stat (per-CPU busy time), /proc/meminfo,
/proc/diskstats (time with I/O in flight) and /proc/net/dev (bytes), and
appends one CSV line per component. On exit it records its own CPU time,
so the monitor's overhead is measured, not assumed.
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import time
from pathlib import Path

THRESHOLD = 0.8


def cpu_times() -> dict[str, tuple[float, float]]:
    """cpuN -> (busy, total) jiffies."""
    out = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3:4].isdigit():
            name, *fields = line.split()
            values = [float(v) for v in fields]
            idle = values[3] + (values[4] if len(values) > 4 else 0.0)
            out[name] = (sum(values) - idle, sum(values))
    return out


def mem_used_fraction() -> float:
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        info[key] = float(rest.split()[0])
    return 1.0 - info.get("MemAvailable", info.get("MemFree", 0.0)) / info["MemTotal"]


def disk_ticks() -> dict[str, float]:
    """Whole disks -> milliseconds spent with I/O in flight."""
    out = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        fields = line.split()
        name = fields[2]
        if Path(f"/sys/block/{name}").exists():
            out[name] = float(fields[12])
    return out


def net_bytes() -> dict[str, float]:
    out = {}
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name.strip() != "lo":
            out[name.strip()] = float(fields[0]) + float(fields[8])
    return out


def sample_loop(out: Path, interval: float) -> None:
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    start_cpu = time.process_time()
    start = time.monotonic()
    prev = (time.monotonic(), cpu_times(), disk_ticks(), net_bytes())
    with out.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["t", "component", "utilisation"])
        while not stop:
            time.sleep(interval)
            now = (time.monotonic(), cpu_times(), disk_ticks(), net_bytes())
            dt = now[0] - prev[0]
            t = round(now[0] - start, 4)
            for cpu, (busy, total) in now[1].items():
                b0, t0 = prev[1].get(cpu, (busy, total))
                if total > t0:
                    writer.writerow([t, cpu, round((busy - b0) / (total - t0), 4)])
            writer.writerow([t, "memory", round(mem_used_fraction(), 4)])
            for disk, ticks in now[2].items():
                writer.writerow(
                    [t, f"disk:{disk}", round(min(1.0, (ticks - prev[2].get(disk, ticks)) / (dt * 1000)), 4)]
                )
            for dev, total_bytes in now[3].items():
                writer.writerow(
                    [t, f"net:{dev}:bytes_per_s", round((total_bytes - prev[3].get(dev, total_bytes)) / dt, 1)]
                )
            f.flush()
            prev = now
        elapsed = time.monotonic() - start
        writer.writerow(
            [
                round(elapsed, 4),
                "monitor:cpu_fraction",
                round((time.process_time() - start_cpu) / max(elapsed, 1e-9), 6),
            ]
        )


def summarise(path: Path, under_test: list[str]) -> tuple[dict[str, object], list[str]]:
    """(metrics, flagged bottlenecks) from a monitor file.

    A component is flagged when its mean utilisation over the run exceeds
    80 % and it is not one of `under_test` (prefixes: cpu, memory, disk, net).
    """
    series: dict[str, list[float]] = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            series.setdefault(row["component"], []).append(float(row["utilisation"]))
    means = {k: sum(v) / len(v) for k, v in series.items() if v}
    cpus = {k: v for k, v in means.items() if k.startswith("cpu")}
    disks = {k: v for k, v in means.items() if k.startswith("disk:")}
    metrics: dict[str, object] = {
        "monitor.cpu_util_max": max(cpus.values()) if cpus else None,
        "monitor.cpu_util_mean": sum(cpus.values()) / len(cpus) if cpus else None,
        "monitor.memory_used": means.get("memory"),
        "monitor.disk_util_max": max(disks.values()) if disks else None,
        "monitor.net_bytes_per_s": sum(v for k, v in means.items() if k.startswith("net:")) or 0.0,
        "monitor.own_cpu_fraction": means.get("monitor:cpu_fraction"),
        "monitor.samples": len(series.get("memory", [])),
    }
    flagged = sorted(
        name for name, value in means.items()
        if not name.startswith(("net:", "monitor:")) and value > THRESHOLD
        and not any(name.startswith(prefix) for prefix in under_test)
    )  # fmt: skip
    return metrics, flagged


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--interval", type=float, default=0.1)
    args = parser.parse_args(argv)
    os.nice(5)  # the monitor yields to the benchmark
    sample_loop(args.out, args.interval)


if __name__ == "__main__":
    main()
