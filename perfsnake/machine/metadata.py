"""Describing the machine and software a campaign ran on (CSV # lines)."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
import time
from importlib import metadata as importlib_metadata
from pathlib import Path

from perfsnake import ROOT
from perfsnake.machine import capabilities
from perfsnake.machine.sysinfo import online_cpus, parse_cpu_list


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cmd(argv: list[str], cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip()


def cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def microcode() -> str | None:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("microcode"):
            return line.split(":", 1)[1].strip()
    return None


def turbo() -> str | None:
    """Frequency boost: on, off, or None where the kernel does not say (a VM)."""
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return "off" if no_turbo == "1" else "on"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    return None if boost is None else ("on" if boost == "1" else "off")


def transparent_hugepages() -> str | None:
    """The selected mode of `always [madvise] never`."""
    text = _read("/sys/kernel/mm/transparent_hugepage/enabled") or ""
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else None


def mitigations() -> str | None:
    """How many CPU vulnerabilities are mitigated, vulnerable or not affected
    (the full list is long; a change in any count is what matters)."""
    root = Path("/sys/devices/system/cpu/vulnerabilities")
    if not root.is_dir():
        return None
    states = [(_read(str(p)) or "").split(":")[0].split(";")[0].strip() for p in sorted(root.iterdir())]
    counts = {s: states.count(s) for s in sorted(set(states))}
    return ", ".join(f"{n} {s.lower()}" for s, n in counts.items())


def os_release() -> str | None:
    text = _read("/etc/os-release") or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return None


def smt() -> str | None:
    control = _read("/sys/devices/system/cpu/smt/control")
    active = _read("/sys/devices/system/cpu/smt/active")
    if control is None:
        return None
    return f"{control} (active={active})"


def numa_nodes() -> int | None:
    text = _read("/sys/devices/system/node/online")
    return len(parse_cpu_list(text)) if text else None


def mem_total() -> str | None:
    text = _read("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return line.split(":", 1)[1].strip()
    return None


def governors() -> str | None:
    seen = set()
    for cpu in online_cpus():
        gov = _read(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
        if gov:
            seen.add(gov)
    return ",".join(sorted(seen)) if seen else "unavailable (no cpufreq)"


def version(package: str) -> str | None:
    try:
        return importlib_metadata.version(package)
    except importlib_metadata.PackageNotFoundError:
        return None


def git_state() -> tuple[str | None, str | None]:
    commit = _cmd(["git", "rev-parse", "HEAD"], cwd=ROOT)
    if commit is None:
        return None, None
    dirty = _cmd(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT)
    return commit, "dirty" if dirty else "clean"


def host_metadata() -> dict[str, object]:
    """Everything the CSV header records about this host, as key -> value."""
    compiler = _cmd(["cc", "--version"])
    commit, dirty = git_state()
    return {
        "utc_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hostname": socket.gethostname(),
        "uname": " ".join(os.uname()),
        "os_release": os_release(),
        "cpu_model": cpu_model(),
        "online_cpus": ",".join(map(str, online_cpus())),
        "smt": smt(),
        "numa_nodes": numa_nodes(),
        "memory": mem_total(),
        "cpufreq_governor": governors(),
        "microcode": microcode(),
        "turbo": turbo(),
        "transparent_hugepages": transparent_hugepages(),
        "mitigations": mitigations(),
        # load of the other processes when the campaign was aggregated; each run's own is in machine.*
        "load_average": " ".join((_read("/proc/loadavg") or "").split()[:3]) or None,
        "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid"),
        "capabilities": capabilities.summary(),
        "kernel_cmdline": _read("/proc/cmdline"),
        "compiler": compiler.splitlines()[0] if compiler else None,
        "python": platform.python_version(),
        "snakemake": version("snakemake"),
        "pandas": version("pandas"),
        "perfsnake_commit": commit,
        "perfsnake_tree": dirty,
    }


def file_sha256(path: str | Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
