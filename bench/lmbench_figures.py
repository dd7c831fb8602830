"""Benchmark (not a test): the lmbench-style suite's figures on this machine,
and side by side with a real lmbench3 when one is given.

usage: .venv/bin/python bench/lmbench_figures.py [--lmbench3 PATH] [--rounds 3]
           [--enough-us 100000] [--placement unpinned|same] [--only NAME,...]

Builds perfsnake/csrc/lmbench (-O2, as the catalog does) into a directory of its own
and runs every comparison in rotated rounds (the order changes each round,
and who goes first alternates), both programs with the same interval
(LMBENCH_ENOUGH_US for ours, ENOUGH for lmbench3) and the same number of
repetitions. PATH is an lmbench3 source tree (built with its own Makefile if
it has no bin/ yet; it must lie outside this repository) or its bin/<os>
directory. Writes bench/results/lmbench_figures.json (machine, load,
placement, interval; per comparison the values, medians, CVs and the median
of the per-round ratios ours / lmbench3) and prints a Markdown table. The
derived row `wr/bzero 4 MB` is the ratio of our bw_mem wr to bzero on the
same buffer, per round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results"
sys.path.insert(0, str(ROOT))

from perfsnake.benchmarks.lmbench import IPC, PROGRAMS, program_flags, program_sources  # noqa: E402
from perfsnake.layout import c_source  # noqa: E402

SRC = c_source("lmbench")

_OURS_LINE = re.compile(r"^(\S+) (-?[0-9.]+) (ns|us|MB/s|MHz|/s|bytes|pages|x|levels)$", re.M)


@dataclass(frozen=True)
class Comparison:
    name: str  # row label
    ours: tuple[str, ...]  # our program and operands ({file} {dir} substituted)
    line: str | None  # which of our lines (default: the first)
    unit: str
    theirs: tuple[str, ...] | None = None  # lmbench3 program and operands
    pattern: str | None = None  # regex with one group: lmbench3's value (stderr + stdout)
    differs: str = ""  # how the definitions differ, for the docs' table
    server: tuple[str, ...] | None = None  # lmbench3's server, started before its run and stopped (-S) after
    server_socket: str | None = None  # the server's fixed socket path: removed before, waited for after the start
    timeout: float = 300  # seconds for one run of either program
    server_stop: tuple[str, ...] = ("-S",)  # the server program's operands that stop it
    server_ready: str = ""  # a shell test that holds once the server serves (waited for after the start)
    needs: str = ""  # a daemon lmbench3's side needs running (rpcbind): started here when root, else skipped
    fixed: bool = False  # lmbench3's side runs a copy built with FIXES applied (it cannot run as released)


def _c(
    name, ours, unit, theirs=None, pattern=None, line=None, differs="", server=None, server_socket=None, timeout=300,
    server_stop="-S", server_ready="", needs="", fixed=False,
):  # fmt: skip
    return Comparison(
        name, tuple(ours.split()), line, unit, tuple(theirs.split()) if theirs else None, pattern, differs,
        tuple(server.split()) if server else None, server_socket, timeout, tuple(server_stop.split()), server_ready,
        needs, fixed,
    )  # fmt: skip


#: Source fixes for lmbench3 programs that cannot run as released, as (file, text, replacement, why). Applied to
#: a copy of the tree built beside this script's other files; the comparisons marked `fixed` run that copy.
FIXES = [
    ("src/cache.c", "\tdouble\tt;\n\n\tfor (i = 0; i < n - 1; ++i) {",
     "\tdouble\tt;\n\n\tif (n < 2) return;\n\tfor (i = 0; i < n - 1; ++i) {",
     "cache's pagesort() loops to n - 1 of an unsigned n: called with no page to sort, it never ends"),
]  # fmt: skip


#: lmbench3's lat_rpc server registers both transports with rpcbind; its client asks rpcbind for the port
_RPC_READY = "[ \"$(PATH=$PATH:/usr/sbin:/sbin rpcinfo -p 127.0.0.1 2>/dev/null | grep -c ' 404040 ')\" -ge 2 ]"
_CACHE = "cache -L 64 -M 65536"
_CACHE3 = "cache -L 64 -M 64M"


_US = r"(\S+) microseconds"
COMPARISONS = [
    _c("lat_syscall null", "lat_syscall null", "us", "lat_syscall null", "Simple syscall: " + _US, differs="getppid (lmbench: getppid)"),
    _c("lat_syscall read", "lat_syscall read", "us", "lat_syscall read", "Simple read: " + _US),
    _c("lat_syscall write", "lat_syscall write", "us", "lat_syscall write", "Simple write: " + _US),
    _c("lat_syscall stat", "lat_syscall stat {file}", "us", "lat_syscall stat {file}", "Simple stat: " + _US),
    _c("lat_syscall fstat", "lat_syscall fstat {file}", "us", "lat_syscall fstat {file}", "Simple fstat: " + _US),
    _c("lat_syscall open", "lat_syscall open {file}", "us", "lat_syscall open {file}", "Simple open/close: " + _US),
    _c("lat_sig install", "lat_sig install", "us", "lat_sig install", "Signal handler installation: " + _US),
    _c("lat_sig catch", "lat_sig catch", "us", "lat_sig catch", "Signal handler overhead: " + _US,
       differs="includes the kill() that lmbench subtracts"),
    _c("lat_sig catch_lmbench", "lat_sig catch_lmbench", "us", "lat_sig catch", "Signal handler overhead: " + _US),
    _c("lat_sig prot", "lat_sig prot", "us", differs="mprotect + fault + signal + mprotect; lmbench: a re-fault only (prints nothing here)"),
    _c("lat_proc fork", "lat_proc fork", "us", "lat_proc fork", r"Process fork\+exit: " + _US, differs="child _exit(0); lmbench: exit(1)"),
    _c("lat_proc fork_lmbench", "lat_proc fork_lmbench", "us", "lat_proc fork", r"Process fork\+exit: " + _US),
    _c("lat_proc exec", "lat_proc exec", "us", "lat_proc exec", r"Process fork\+execve: " + _US),
    _c("lat_proc shell", "lat_proc shell", "us", "lat_proc shell", r"Process fork\+/bin/sh -c: " + _US),
    _c("lat_pipe", "lat_pipe", "us", "lat_pipe", "Pipe latency: " + _US),
    _c("lat_unix", "lat_unix", "us", "lat_unix", "AF_UNIX sock stream latency: " + _US),
    _c("lat_pipe placement same", "lat_pipe -A same", "us"),
    _c("lat_pipe placement different", "lat_pipe -A different", "us"),
    _c("lat_fifo", "lat_fifo {dir}", "us", differs="lmbench3's lat_fifo spins on EINVAL here"),
    _c("lat_sem", "lat_sem", "us", "lat_sem", "Semaphore latency: " + _US,
       differs="a round trip of two semop calls per side; lmbench: one two-operation semop per pass, half a round trip"),
    _c("lat_sem roundtrip_lmbench", "lat_sem roundtrip_lmbench", "us", "lat_sem", "Semaphore latency: " + _US),
    _c("lat_ctx 0 KB 2 procs", "lat_ctx 0 2", "us", "lat_ctx -s 0 2", r"^2 (\S+)$"),
    _c("lat_select file 200", "lat_select file 200", "us", "lat_select -n 200 file", r"Select on 200 fd's: " + _US),
    _c("lat_tcp", "lat_tcp", "us"),
    _c("lat_udp", "lat_udp", "us"),
    _c("lat_connect", "lat_connect", "us", differs="closes with a reset (no TIME_WAIT)"),
    _c("lat_mmap 4 MB", "lat_mmap 4096 map {dir}", "us", "lat_mmap 4m {file}", r"^\S+ (\S+)$", differs="touches every page; lmbench: a byte every 16 KB of the first tenth"),
    _c("lat_mmap 4 MB map_lmbench", "lat_mmap 4096 map_lmbench {dir}", "us", "lat_mmap 4m {file}", r"^\S+ (\S+)$"),
    _c("lat_pagefault 4 MB", "lat_pagefault 4096 fault {dir}", "us", "lat_pagefault {file}", r"Pagefaults on \S+: " + _US,
       differs="re-faults after MADV_DONTNEED; lmbench: a fresh MAP_SHARED map, its cost subtracted"),
    _c("lat_pagefault 4 MB fault_lmbench", "lat_pagefault 4096 fault_lmbench {dir}", "us", "lat_pagefault {file}", r"Pagefaults on \S+: " + _US),
    _c("lat_mem_rd 4 MB seq", "lat_mem_rd 4096 64 sequential", "ns", "lat_mem_rd 4 64", r"^4\.00000 (\S+)$"),
    _c("lat_mem_rd 4 MB random", "lat_mem_rd 4096 64 random", "ns", "lat_mem_rd -t 4 64", r"^4\.00000 (\S+)$",
       differs="all lines shuffled; lmbench -t: pages shuffled, lines within a page"),
    _c("bw_mem rd 4 MB", "bw_mem 4096 rd", "MB/s", "bw_mem 4m rd", r"^\S+ (\S+)$"),
    _c("bw_mem rd 64 MB", "bw_mem 65536 rd", "MB/s", "bw_mem 64m rd", r"^\S+ (\S+)$"),
    _c("bw_mem wr 4 MB", "bw_mem 4096 wr", "MB/s", "bw_mem 4m wr", r"^\S+ (\S+)$"),
    _c("bw_mem wr 64 MB", "bw_mem 65536 wr", "MB/s", "bw_mem 64m wr", r"^\S+ (\S+)$"),
    _c("bw_mem bzero 4 MB", "bw_mem 4096 bzero", "MB/s", "bw_mem 4m bzero", r"^\S+ (\S+)$"),
    _c("bw_mem cp 4 MB", "bw_mem 4096 cp", "MB/s", "bw_mem 4m bcopy", r"^\S+ (\S+)$", differs="memcpy, compared with lmbench's bcopy"),
    *[_c(f"bw_mem {op} {mb} MB", f"bw_mem {mb * 1024} {op}", "MB/s", f"bw_mem {mb}m {theirs or op}", r"^\S+ (\S+)$")
      for op, theirs in (("frd", None), ("fwr", None), ("fcp", None), ("rdwr", None), ("bcopy", None), ("cp_lmbench", "cp"))
      for mb in (4, 64)],
    _c("bw_pipe", "bw_pipe", "MB/s", "bw_pipe", r"Pipe bandwidth: (\S+) MB/sec"),
    _c("bw_unix", "bw_unix", "MB/s", "bw_unix", r"AF_UNIX sock stream bandwidth: (\S+) MB/sec"),
    _c("bw_tcp", "bw_tcp", "MB/s"),
    _c("bw_file_rd 4 MB io_only", "bw_file_rd 4096 io_only {dir}", "MB/s", "bw_file_rd 4m io_only {file}", r"^\S+ (\S+)$"),
    _c("bw_mmap_rd 4 MB mmap_only", "bw_mmap_rd 4096 mmap_only {dir}", "MB/s", "bw_mmap_rd 4m mmap_only {file}", r"^\S+ (\S+)$"),
    _c("bw_file_rd 4 MB open2close", "bw_file_rd 4096 open2close {dir}", "MB/s", "bw_file_rd 4m open2close {file}", r"^\S+ (\S+)$"),
    _c("bw_mmap_rd 4 MB open2close", "bw_mmap_rd 4096 open2close {dir}", "MB/s", "bw_mmap_rd 4m open2close {file}", r"^\S+ (\S+)$"),
    *[_c(f"lat_fs {kb}k {what}/s", f"lat_fs {kb} {{dir}}", "/s", "lat_fs {dir}", rf"^{kb}k\t\d+\t{skip}(\d+)",
         line=f"lat_fs.{kb}k.{what}_per_s", timeout=1800)
      for what, skip in (("creates", ""), ("deletes", r"\d+\t")) for kb in (0, 1, 4, 10)],
    _c("lat_fcntl", "lat_fcntl {dir}", "us", "lat_fcntl", "Fcntl lock latency: " + _US,
       differs="files in DIR ($TMPDIR); lmbench's in /tmp"),
    _c("lat_unix_connect", "lat_unix_connect {dir}", "us", "lat_unix_connect", "UNIX connection cost: " + _US,
       server="lat_unix_connect -s", server_socket="/tmp/af_unix"),
    _c("bw_udp", "bw_udp", "MB/s", differs="lmbench3's bw_udp cannot run on 64-bit Linux"),
    _c("bw_udp 1024", "bw_udp 1024", "MB/s"),
    *[_c(f"lat_usleep {op} {us}", f"lat_timer {op} {us}", "us", f"lat_usleep -u {op} {us}",
         rf"^{op} {us} microseconds: (\S+) microseconds", line=f"lat_timer.{op}.actual")
      for op in ("usleep", "nanosleep", "select", "pselect", "itimer") for us in (100, 1000)],
    *[_c(f"lat_rand {op}", f"lat_rand {op}", "ns", "lat_rand", rf"^{op} latency: (\S+) nanoseconds")
      for op in ("drand48", "lrand48", "rand", "random")],
    _c("line (bytes)", "line", "bytes", "line", r"^(\d+)$", line="line.bytes"),
    _c("tlb (pages)", "tlb -L 64", "pages", "tlb -c -L 64", r"^tlb: (\d+) pages", line="tlb.pages"),
    _c("tlb miss (ns)", "tlb -L 64", "ns", "tlb -c -L 64", r"^tlb: \d+ pages (\S+) nanoseconds", line="tlb"),
    *[_c(f"par_mem {kb} KB", f"par_mem -L 64 {kb}", "x", "par_mem -L 64 -M 64M", rf"^{kb * 1024 / 1e6:.6f} (\S+)$",
         line=f"par_mem.{kb}k.parallelism", timeout=1800)
      for kb in (16, 512, 16384, 65536)],
    _c("lat_dram_page", "lat_dram_page", "ns", "lat_dram_page", r"^(\S+)$",
       differs="lmbench prints 0.0 when the two chains differ by less than 5 %"),
    *[_c(f"lat_rpc {p}", f"lat_rpc {p}", "us", f"lat_rpc -p {p} localhost", rf"RPC/{p} latency using \S+: (\S+) microseconds",
         server="lat_rpc -s", server_stop="-S localhost", server_ready=_RPC_READY, needs="rpcbind",
         differs="our server is forked per process on its own port, no rpcbind; lmbench's registers with rpcbind")
      for p in ("tcp", "udp")],
    # lmbench3's cache as released never ends here (FIXES): its side runs the fixed copy.
    *[_c(f"cache L{k} (bytes)", _CACHE, "bytes", _CACHE3, rf"^L{k} cache: (\S+) bytes", line=f"cache.l{k}_bytes",
         timeout=900, fixed=True, differs="lmbench3's cache, with its pagesort() fixed (it never ends as released); "
         "lmbench also replaces pages that collide in the cache") for k in (1, 2, 3)],
    *[_c(f"cache L{k} (ns)", _CACHE, "ns", _CACHE3, rf"^L{k} cache: \S+ bytes (\S+) nanoseconds", line=f"cache.l{k}_ns",
         timeout=900, fixed=True) for k in (1, 2, 3)],
    *[_c(f"cache L{k} parallelism", _CACHE, "x", _CACHE3, rf"^L{k} cache: .* (\S+) parallelism$",
         line=f"cache.l{k}_parallelism", timeout=900, fixed=True) for k in (1, 2, 3)],
    _c("cache memory (ns)", _CACHE, "ns", _CACHE3, r"^Memory latency: (\S+) nanoseconds", line="cache.memory_ns",
       timeout=900, fixed=True),
    _c("cache memory parallelism", _CACHE, "x", _CACHE3, r"^Memory latency: .* (\S+) parallelism$",
       line="cache.memory_parallelism", timeout=900, fixed=True),
    *[_c(f"par_ops {t}_{o}", f"par_ops {t}_{o}", "x", "par_ops", rf"^{lt} {o} parallelism: (\S+)$",
         line=f"par_ops.{t}_{o}.parallelism", timeout=1800)
      for t, lt in (("int", "integer"), ("int64", "int64"), ("float", "float"), ("double", "double"))
      for o in ("bit", "add", "mul", "div", "mod") if not (t in ("float", "double") and o in ("bit", "mod"))],
    _c("stream triad", "stream triad", "MB/s"),
    _c("lat_timer select 1000", "lat_timer select 1000", "us"),
    _c("mhz (cycle, ns)", "mhz", "ns", "mhz", r"MHz, (\S+) nanosec clock", line="mhz.min"),
    *[_c(f"lat_ops {t}_{o}", f"lat_ops {t}_{o}", "ns", "lat_ops", rf"^{'uint64' if (t, o) == ('int64', 'add') else lt} {lo}: (\S+) nanoseconds")
      for t, lt in (("int", "integer"), ("int64", "int64"), ("float", "float"), ("double", "double"))
      for o, lo in (("xor", "bit"), ("add", "add"), ("mul", "mul"), ("div", "div"), ("mod", "mod"))
      if not (t in ("float", "double") and o in ("xor", "mod"))],
]  # fmt: skip


def build_ours(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    procs = [subprocess.Popen(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out / p), *map(str, program_sources(p)),
                               *program_flags(p)])
             for p in PROGRAMS]  # fmt: skip
    if any(p.wait() for p in procs):
        sys.exit("bench/lmbench_figures.py: building perfsnake/csrc/lmbench failed")


def lmbench3_bin(path: Path) -> Path:
    """The bin directory of an lmbench3 tree, building it first if needed."""
    path = path.resolve()
    if (path / "lat_syscall").exists():
        return path
    if ROOT in (path, *path.parents):
        sys.exit(f"bench/lmbench_figures.py: --lmbench3 {path} lies inside this repository; build it outside")
    found = sorted(path.glob("bin/*/lat_syscall"))
    if not found:
        subprocess.run(["make", "-C", str(path / "src")], check=True, stdout=subprocess.DEVNULL)
        found = sorted(path.glob("bin/*/lat_syscall"))
    if not found:
        sys.exit(f"bench/lmbench_figures.py: no lmbench3 binaries under {path}/bin after building")
    return found[0].parent


def lmbench3_fixed(bindir: Path, work: Path) -> Path | None:
    """The bin directory of a copy of lmbench3's tree (bindir's, two levels up) with FIXES applied, built as
    lmbench3_bin builds; None (and why, on stderr) when the tree or a fix's text is not there."""
    tree = bindir.parents[1]
    copy = work / "lmbench3-fixed"
    if not (tree / "src").is_dir():
        print(f"no lmbench3 source tree above {bindir}: the comparisons that need FIXES are skipped", file=sys.stderr)
        return None
    shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("bin", "SCCS"))
    for name, text, replacement, why in FIXES:
        source = copy / name
        content = source.read_text(errors="surrogateescape")
        if content.count(text) != 1:
            print(
                f"{tree / name}: not the lmbench3 this script fixes ({why}): its comparisons are skipped",
                file=sys.stderr,
            )
            return None
        source.write_text(content.replace(text, replacement), errors="surrogateescape")
    return lmbench3_bin(copy)


def machine() -> dict[str, object]:
    model = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "unknown",
    )
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": platform.release(), "host": platform.node()}


def run_group(cmd: list[str], env: dict, cwd: Path | None = None, timeout: float = 300) -> tuple[int, str, str]:
    """Run in a session of its own; on timeout kill the whole group (an
    orphaned partner process must not keep spinning)."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        return -9, out, err + "\n(timed out)"
    finally:
        try:
            os.killpg(proc.pid, 9)  # partners left behind by a crash
        except ProcessLookupError:
            pass
    return proc.returncode, out, err


def run_ours(
    bindir: Path, comp: Comparison, env: dict, reps: int, placement: str, subst: dict, memo: dict
) -> float | None:
    argv = [a.format(**subst) for a in comp.ours]
    flags = ["-N", str(reps)] + (["-A", placement] if placement != "unpinned" and argv[0] in IPC else [])
    key = ("ours", *flags, *argv)
    if key not in memo:  # lat_fs prints creates and deletes at once: run it once per round
        memo[key] = run_group([str(bindir / argv[0]), *flags, *argv[1:]], env, timeout=comp.timeout)
    code, out, err = memo[key]
    lines = {m.group(1): float(m.group(2)) for m in _OURS_LINE.finditer(out)}
    if code or not lines:
        print(f"  ours {' '.join(argv)} failed: {err.strip()[-200:]}", file=sys.stderr)
        return None
    if comp.line and comp.line not in lines:  # cache: a level it did not find
        print(f"  ours {' '.join(argv)}: no {comp.line} line", file=sys.stderr)
        return None
    return lines[comp.line] if comp.line else next(iter(lines.values()))


def run_theirs(
    bindir: Path, comp: Comparison, env: dict, reps: int, placement: str, subst: dict, memo: dict
) -> float | None:
    assert comp.theirs is not None and comp.pattern is not None
    argv = tuple(a.format(**subst) for a in comp.theirs)
    if argv not in memo:  # lat_ops prints every operation at once: run it once per round
        pin = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] if placement == "same" else []
        reps_flag = [] if argv[0] == "mhz" else ["-N", str(reps)]  # lmbench3's mhz takes no -N
        cmd = [*pin, str(bindir / argv[0]), *reps_flag, *argv[1:]]
        if comp.server:
            cmd = with_server(bindir, comp, pin, cmd)
        _code, out, err = run_group(cmd, env, cwd=bindir, timeout=comp.timeout)
        if comp.server_socket:
            Path(comp.server_socket).unlink(missing_ok=True)
        memo[argv] = err + out
    match = re.search(comp.pattern, memo[argv], re.M)
    if not match:
        print(f"  lmbench3 {' '.join(argv)}: no match for {comp.pattern!r} in {memo[argv][-200:]!r}", file=sys.stderr)
        return None
    return float(match.group(1))


def with_server(bindir: Path, comp: Comparison, pin: list[str], cmd: list[str]) -> list[str]:
    """The client's command line wrapped in a shell that starts lmbench3's
    server first (`prog -s` forks it and returns) and stops it after (`prog
    -S`): one session, as lmbench's own scripts run them (a server in a
    session of its own is in another autogroup of the scheduler), killed as
    one group by run_group."""
    assert comp.server is not None
    server = shlex.join([*pin, str(bindir / comp.server[0]), *comp.server[1:]])
    stop = shlex.join([str(bindir / comp.server[0]), *comp.server_stop])
    wait = ""
    if comp.server_socket:
        Path(comp.server_socket).unlink(missing_ok=True)  # a stale one fails its bind()
        sock = shlex.quote(comp.server_socket)
        wait = f"n=0; while [ ! -S {sock} ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done; "
    elif comp.server_ready:
        wait = f"n=0; while ! {comp.server_ready} && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done; "
    return ["sh", "-c", f"{server}; {wait}{shlex.join(cmd)}; status=$?; {stop}; exit $status"]


def _sbin(name: str) -> str | None:
    """A system daemon's or tool's path (a user's PATH may lack /usr/sbin)."""
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if Path(p).exists()), None)


def rpcbind_running() -> bool:
    rpcinfo = _sbin("rpcinfo")
    if rpcinfo is None:
        return False
    return subprocess.run([rpcinfo, "-p", "127.0.0.1"], capture_output=True, check=False).returncode == 0


def start_daemons(comps: list[Comparison]) -> tuple[set[str], list[subprocess.Popen]]:
    """What lmbench3's side needs (rpcbind for its lat_rpc): left as it is
    when running, started (and returned, to stop at the end) when root,
    else those comparisons are skipped, said in one line. Returns the names
    of the comparisons whose lmbench3 side is skipped."""
    needing = [c.name for c in comps if c.needs == "rpcbind" and c.theirs]
    if not needing or rpcbind_running():
        return set(), []
    binary = _sbin("rpcbind")
    why = "not root" if os.geteuid() != 0 else "rpcbind is not installed (Debian: rpcbind)" if not binary else ""
    if binary and not why:
        proc = subprocess.Popen([binary, "-f", "-w"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None and not rpcbind_running():
            time.sleep(0.1)
        if rpcbind_running():
            print(f"started rpcbind (pid {proc.pid}) for lmbench3's lat_rpc; stopped at the end", file=sys.stderr)
            return set(), [proc]
        proc.kill()
        proc.wait()
        why = "rpcbind did not start"
    print(
        f"lmbench3's lat_rpc needs rpcbind running and {why}: its side of {', '.join(needing)} is skipped",
        file=sys.stderr,
    )
    return set(needing), []


def summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "cv": None}
    cv = statistics.stdev(values) / statistics.mean(values) if len(values) > 1 and statistics.mean(values) else None
    return {"median": statistics.median(values), "cv": cv}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lmbench3", type=Path, help="lmbench3 source tree or bin directory (outside this repository)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=11)
    parser.add_argument("--enough-us", type=int, default=100000)
    parser.add_argument("--placement", choices=("unpinned", "same"), default="unpinned")
    parser.add_argument("--only", help="comma-separated row names (prefix match)")
    parser.add_argument("--output", type=Path, default=OUT / "lmbench_figures.json")
    args = parser.parse_args()

    comps = [c for c in COMPARISONS if not args.only or any(c.name.startswith(o) for o in args.only.split(","))]
    work = Path(tempfile.mkdtemp(prefix="lmbench-figures-"))
    ours_bin = work / "build"  # one per invocation: two at once never run a binary the other is writing
    build_ours(ours_bin)
    theirs_bin = lmbench3_bin(args.lmbench3) if args.lmbench3 else None
    data_file = work / "data"
    # lmbench3's file benchmarks need a file of their own; written a page at a
    # time, so the page cache holds it in single-page folios as ours does (a
    # fault maps a whole folio: per-page fault costs follow the folio size).
    with data_file.open("wb") as f:
        for _ in range(1024):
            f.write(os.urandom(4096))
    subst = {"file": str(data_file), "dir": str(work)}
    skipped, daemons = start_daemons(comps) if theirs_bin else (set(), [])
    fixed_bin = lmbench3_fixed(theirs_bin, work) if theirs_bin and any(c.fixed for c in comps) else None
    env = {**os.environ, "LMBENCH_ENOUGH_US": str(args.enough_us), "ENOUGH": str(args.enough_us), "TMPDIR": str(work)}
    results: dict[str, dict[str, list]] = {c.name: {"ours": [], "theirs": [], "ratio": []} for c in comps}
    wr_over_bzero: list[float] = []
    load_before = os.getloadavg()
    load_rounds: list[tuple[float, float, float]] = []  # after each round: the load during the measurement
    start = time.time()

    def make_report() -> dict:
        rows = []
        for comp in comps:
            r = results[comp.name]
            rows.append({"name": comp.name, "unit": comp.unit, "ours_argv": " ".join(comp.ours), "lmbench3_argv": " ".join(comp.theirs or ()),
                         "differs": comp.differs, "ours": r["ours"], "lmbench3": r["theirs"], "ours_summary": summary(r["ours"]),
                         "lmbench3_summary": summary(r["theirs"]), "ratio_median": statistics.median(r["ratio"]) if r["ratio"] else None,
                         "ratios": r["ratio"], "ratio_range": [min(r["ratio"]), max(r["ratio"])] if r["ratio"] else None})  # fmt: skip
        report = {
            "machine": machine(), "placement": args.placement, "enough_us": args.enough_us, "repetitions": args.repetitions,
            "rounds": args.rounds, "lmbench3": str(theirs_bin) if theirs_bin else None,
            "lmbench3_fixes": [{"file": f, "why": why} for f, _t, _r, why in FIXES] if fixed_bin else [], "load_before": load_before,
            "load_after": os.getloadavg(), "load_rounds": load_rounds, "cpus_allowed": sorted(os.sched_getaffinity(0)), "wall_s": round(time.time() - start, 1),
            "derived": {"bw_mem wr/bzero 4 MB (ours, per-round median)": statistics.median(wr_over_bzero) if wr_over_bzero else None},
            "rows": rows,
        }  # fmt: skip
        return report

    for rnd in range(args.rounds):
        memo: dict = {}
        shift = rnd * max(1, len(comps) // args.rounds)
        order = comps[shift:] + comps[:shift]
        print(f"round {rnd + 1}/{args.rounds}", file=sys.stderr)
        for comp in order:
            pair: dict[str, float | None] = {}
            sides = ["ours", "theirs"] if rnd % 2 == 0 else ["theirs", "ours"]
            for side in sides:
                if side == "ours":
                    pair[side] = run_ours(ours_bin, comp, env, args.repetitions, args.placement, subst, memo)
                elif (bindir := fixed_bin if comp.fixed else theirs_bin) and comp.theirs and comp.name not in skipped:
                    pair[side] = run_theirs(bindir, comp, env, args.repetitions, args.placement, subst, memo)
            for side, val in pair.items():
                if val is not None:
                    results[comp.name][side].append(val)
            if pair.get("ours") and pair.get("theirs"):
                results[comp.name]["ratio"].append(pair["ours"] / pair["theirs"])  # type: ignore[operator]
        wr = next((results[n]["ours"][-1] for n in ("bw_mem wr 4 MB",) if n in results and results[n]["ours"]), None)
        bz = next((results[n]["ours"][-1] for n in ("bw_mem bzero 4 MB",) if n in results and results[n]["ours"]), None)
        if wr and bz:
            wr_over_bzero.append(wr / bz)
        load_rounds.append(os.getloadavg())
        # Written after every round too: a run stopped in a later round keeps what it measured.
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({**make_report(), "rounds_done": rnd + 1}, indent=2) + "\n")
    report = make_report()
    for daemon in daemons:  # the rpcbind this script started
        daemon.terminate()
        daemon.wait()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)  # the data file and whatever a killed program left
    print(
        "| measure | unit | ours (median, CV) | lmbench3 (median, CV) | ours / lmbench3 (rounds' range) |\n|---|---|---|---|---|"
    )
    for row in report["rows"]:
        o, t = row["ours_summary"], row["lmbench3_summary"]

        def fmt(s: dict) -> str:
            if s["median"] is None:
                return "-"
            return f"{s['median']:.4g} ({s['cv'] * 100:.1f} %)" if s["cv"] is not None else f"{s['median']:.4g}"

        ratio = (
            f"{row['ratio_median']:.3f} ({row['ratio_range'][0]:.2f}-{row['ratio_range'][1]:.2f})"
            if row["ratio_median"] is not None
            else "-"
        )
        print(f"| {row['name']} | {row['unit']} | {fmt(o)} | {fmt(t)} | {ratio} |")
    print(
        f"derived: {report['derived']}; machine {report['machine']}; CPUs {report['cpus_allowed']}; load {load_before} -> "
        f"{report['load_after']} (1-min load after each round: {', '.join(f'{x[0]:.2f}' for x in load_rounds)}); wrote {args.output}"
    )


if __name__ == "__main__":
    main()
