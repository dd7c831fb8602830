"""Facts about the machine, read from /proc and /sys."""

from __future__ import annotations

from functools import cache
from pathlib import Path


def parse_cpu_list(text: str) -> list[int]:
    """Parse the kernel's CPU list format ("0-3,8,10-11")."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


@cache
def online_cpus() -> tuple[int, ...]:
    try:
        return tuple(parse_cpu_list(Path("/sys/devices/system/cpu/online").read_text()))
    except OSError:
        import os

        return tuple(sorted(os.sched_getaffinity(0)))
