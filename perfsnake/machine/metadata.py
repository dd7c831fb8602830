"""Describing the machine and software a campaign ran on (CSV # lines)."""

from __future__ import annotations

import glob
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
    """A file's text, stripped (None when unreadable). By descriptor: the
    machine's state is a dozen such reads before every run, and a Path's
    text layer costs more than the kernel's read of a sysfs file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace").strip()


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


#: bytes of /proc/cpuinfo read for the first CPU's microcode line (its block is about 1.5 KB)
CPUINFO_HEAD = 8192


def microcode(cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """The first CPU's microcode revision. Read before every run: only the
    file's head, since the kernel formats each CPU's block as it is read
    (with a frequency sample per CPU on x86: milliseconds on a large
    machine for the whole file)."""
    try:
        with open(cpuinfo, "rb") as f:
            head = f.read(CPUINFO_HEAD).decode(errors="replace")
    except OSError:
        return None
    for line in head.splitlines():
        if line.startswith("microcode"):
            return line.split(":", 1)[1].strip()
    return None


#: The files of the facts `perfsnake tune` also sets (perfsnake.machine.tune).
CPU_DIR = "/sys/devices/system/cpu"
SMT_CONTROL = f"{CPU_DIR}/smt/control"
ASLR = "/proc/sys/kernel/randomize_va_space"
PERF_SAMPLE_RATE = "/proc/sys/kernel/perf_event_max_sample_rate"
THP = "/sys/kernel/mm/transparent_hugepage/enabled"
THP_DEFRAG = "/sys/kernel/mm/transparent_hugepage/defrag"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
IRQ_DIR = "/proc/irq"


def turbo_files() -> list[tuple[str, str]]:
    """The files that switch frequency boost, each with the value meaning
    "boost off": intel_pstate's no_turbo, else cpufreq's global boost, else
    its per-policy boost (amd-pstate, acpi-cpufreq), else the older AMD
    per-CPU cpb. Only the first kind present counts: the global switch
    already governs the per-policy ones."""
    no_turbo = f"{CPU_DIR}/intel_pstate/no_turbo"
    if os.path.isfile(no_turbo):
        return [(no_turbo, "1")]
    boost = f"{CPU_DIR}/cpufreq/boost"
    if os.path.isfile(boost):
        return [(boost, "0")]
    policies = sorted(glob.glob(f"{CPU_DIR}/cpufreq/policy*/boost"))
    if policies:
        return [(p, "0") for p in policies]
    return [(p, "0") for c in online_cpus() if os.path.isfile(p := f"{CPU_DIR}/cpu{c}/cpufreq/cpb")]


def turbo() -> str | None:
    """Frequency boost: on, off, or None where the kernel does not say (a VM)."""
    states = [_read(path) == off for path, off in turbo_files()]
    if not states:
        return None
    return "off" if all(states) else "on"


def transparent_hugepages() -> str | None:
    """The selected mode of `always [madvise] never`."""
    return selected(_read(THP) or "")


def transparent_hugepage_defrag() -> str | None:
    """The selected mode of THP's defrag (`always defer defer+madvise [madvise] never`)."""
    return selected(_read(THP_DEFRAG) or "")


def boot_id() -> str:
    """This boot's random id: another value means the machine rebooted ("" when unreadable)."""
    return _read(BOOT_ID) or ""


def selected(text: str) -> str | None:
    """The bracketed choice of a sysfs list such as `always [madvise] never`."""
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


def smt_state() -> tuple[str | None, str | None]:
    """SMT's control (on, off, forceoff, notsupported, notimplemented) and
    whether sibling threads are active ("1"/"0"); None where the kernel has no
    SMT control."""
    return _read(SMT_CONTROL), _read(f"{CPU_DIR}/smt/active")


def smt() -> str | None:
    control, active = smt_state()
    if control is None:
        return None
    return f"{control} (active={active})"


def randomize_va_space() -> int | None:
    """ASLR: 0 off, 1 stack and libraries, 2 also the heap (the default)."""
    text = _read(ASLR)
    return int(text) if text and text.isdigit() else None


def aslr() -> str | None:
    value = randomize_va_space()
    return None if value is None else f"{'off' if value == 0 else 'on'} (randomize_va_space={value})"


def perf_sample_rate() -> int | None:
    """kernel.perf_event_max_sample_rate (the kernel lowers it by itself when
    sampling interrupts take too long)."""
    text = _read(PERF_SAMPLE_RATE)
    return int(text) if text and text.isdigit() else None


def isolated_cpus() -> list[int]:
    """CPUs taken from the scheduler's balancing (isolcpus= at boot)."""
    return parse_cpu_list(_read(f"{CPU_DIR}/isolated") or "")


def nohz_full_cpus() -> list[int]:
    """CPUs without the scheduler tick when they run one task (nohz_full= at
    boot); the file exists only in kernels built with NO_HZ_FULL."""
    return parse_cpu_list(_read(f"{CPU_DIR}/nohz_full") or "")


def rcu_nocbs_cpus() -> list[int]:
    """CPUs whose RCU callbacks run elsewhere: only the kernel command line says."""
    for word in (_read("/proc/cmdline") or "").split():
        if word.startswith("rcu_nocbs="):
            try:
                return parse_cpu_list(word.split("=", 1)[1])
            except ValueError:  # "all" and other forms this parser does not read
                return list(online_cpus())
    return []


def irqs() -> list[tuple[int, str, str]]:
    """Every IRQ with a settable affinity: its number, what it serves (the
    names of its handlers, to recognise it after a reboot) and the CPUs it
    may run on (smp_affinity_list)."""
    out = []
    for entry in Path(IRQ_DIR).glob("[0-9]*"):
        affinity = _read(f"{entry}/smp_affinity_list")
        if affinity is None:
            continue
        try:
            names = ",".join(sorted(p.name for p in entry.iterdir() if p.is_dir()))
        except OSError:
            names = ""
        out.append((int(entry.name), names, affinity))
    return sorted(out)


def numa_nodes() -> int | None:
    text = _read("/sys/devices/system/node/online")
    return len(parse_cpu_list(text)) if text else None


def mem_total() -> str | None:
    text = _read("/proc/meminfo") or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return line.split(":", 1)[1].strip()
    return None


def governor_files() -> dict[int, str]:
    """Online CPU -> its cpufreq governor file (none on a machine without cpufreq)."""
    files = {c: f"{CPU_DIR}/cpu{c}/cpufreq/scaling_governor" for c in online_cpus()}
    return {c: f for c, f in files.items() if os.path.isfile(f)}


def governor_by_cpu() -> dict[int, str]:
    return {c: g for c, f in governor_files().items() if (g := _read(f))}


def frequency_limits() -> dict[int, str]:
    """Online CPU -> its cpufreq limits "min-max" in kHz (scaling_min_freq,
    scaling_max_freq); none on a machine without cpufreq."""
    out = {}
    for cpu in online_cpus():
        low, high = (_read(f"{CPU_DIR}/cpu{cpu}/cpufreq/scaling_{end}_freq") for end in ("min", "max"))
        if low is not None or high is not None:
            out[cpu] = f"{low}-{high}"
    return out


def governors() -> str | None:
    seen = set(governor_by_cpu().values())
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
        # what `perfsnake tune` sets and a campaign's `requires:` asks for
        "aslr": aslr(),
        "perf_event_max_sample_rate": perf_sample_rate(),
        "isolated_cpus": ",".join(map(str, isolated_cpus())) or "none",
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
