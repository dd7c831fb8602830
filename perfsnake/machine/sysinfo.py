"""Facts about the machine, read from /proc and /sys."""

from __future__ import annotations

import os
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


def cpu_ranges(numbers: list[int] | set[int] | tuple[int, ...]) -> str:
    """The kernel's list format ("0-3,8") of some CPU or IRQ numbers (parse_cpu_list's inverse)."""
    out: list[str] = []
    ordered = sorted(set(numbers))
    start = prev = None
    for n in [*ordered, None]:
        if n is not None and prev is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = n
    return ",".join(out)


def current_online_cpus() -> tuple[int, ...]:
    """The CPUs online now (read each call: a CPU taken offline between two runs shows)."""
    try:
        return tuple(parse_cpu_list(Path("/sys/devices/system/cpu/online").read_text()))
    except OSError:
        import os

        return tuple(sorted(os.sched_getaffinity(0)))


@cache
def online_cpus() -> tuple[int, ...]:
    return current_online_cpus()


@cache
def online_nodes() -> tuple[int, ...]:
    try:
        return tuple(parse_cpu_list(Path("/sys/devices/system/node/online").read_text()))
    except OSError:
        return (0,)


#: Where Debian puts programs a normal user may run but whose PATH lacks
#: (mariadbd, ldconfig): looked in after PATH.
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


def find_program(name: str) -> str | None:
    """`name` on PATH, else in the sbin directories (a normal user's PATH has none)."""
    import shutil

    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))


def find_library(soname_prefix: str) -> str | None:
    """The path of a shared library known to the dynamic linker (ldconfig -p)."""
    import subprocess

    try:
        out = subprocess.run(
            [find_program("ldconfig") or "ldconfig", "-p"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.split(" ")[0] == soname_prefix or name.startswith(soname_prefix + " "):
            return path.strip()
    return None
