"""Our lmbench-style micro-benchmarks (perfsnake/csrc/lmbench) as a catalog benchmark.

Variables: `micro` (one of PROGRAMS), `op` (the micro-benchmark's
operation), `size_kb` (lat_mem_rd, bw_mem, lat_ctx, lat_mmap, lat_pagefault,
bw_file_rd, bw_mmap_rd, par_mem; stream's per-array size; lat_fs's files, 0
allowed), `stride` (lat_mem_rd; tlb's, par_mem's and cache's line, -L), `max_kb`
(line's, tlb's, lat_dram_page's and cache's chains, -M), `nprocs` (lat_ctx's ring), `msg_bytes`
(lat_tcp, lat_udp, lat_unix message; bw_pipe, bw_unix, bw_tcp chunk; bw_udp
datagram), `interval_us` (lat_timer's requested sleep or timer period),
`nfds` (lat_select), `file` (lat_syscall's FILE), `protocol` (lat_rpc's
transport, tcp or udp; default tcp), `parallel` (children of
the harness: scalable load), `repetitions` (intervals whose median is
reported), `warmup_us` (-W), `placement` (-A: the two ends of an IPC
benchmark on the same CPU, different CPUs, or unpinned).
Every run shares one calibration cache file in the build directory, so only
the first run on a machine spends seconds choosing the timing interval.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

from perfsnake.benchmarks.base import Benchmark, BuildContext, RunContext
from perfsnake.escape import value_text
from perfsnake.layout import c_source

SRC = c_source("lmbench")
_INT_TYPES = ("int", "int64")
_LAT_OPS = tuple(f"{t}_{o}" for t in _INT_TYPES for o in ("xor", "add", "mul", "div", "mod")) + tuple(
    f"{t}_{o}" for t in ("float", "double") for o in ("add", "mul", "div")
)
#: micro-benchmark -> its operations (the first is the default)
OPS = {
    "lat_syscall": ("null", "read", "write", "stat", "fstat", "open"),
    "lat_mem_rd": ("sequential", "random"),
    "bw_mem": ("rd", "wr", "cp", "bzero", "rdwr", "cp_lmbench", "frd", "fwr", "fcp", "bcopy"),
    "lat_proc": ("fork", "exec", "shell", "fork_lmbench"),
    "lat_ctx": ("ring",),
    "lat_pipe": ("roundtrip",),
    "lat_sig": ("install", "catch", "prot", "catch_lmbench"),
    "lat_mmap": ("map", "map_lmbench"),
    "lat_pagefault": ("fault", "fault_lmbench"),
    "stream": ("copy", "scale", "add", "triad", "fill", "daxpy", "sum"),
    "bw_pipe": ("read",),
    "bw_unix": ("read",),
    "lat_tcp": ("roundtrip",),
    "lat_udp": ("roundtrip",),
    "lat_connect": ("connect",),
    "lat_timer": ("usleep", "nanosleep", "select", "pselect", "itimer"),
    "lat_ops": _LAT_OPS,
    "lat_unix": ("roundtrip",),
    "lat_fifo": ("roundtrip",),
    "lat_select": ("file", "tcp"),
    "lat_sem": ("roundtrip", "roundtrip_lmbench"),
    "bw_tcp": ("read",),
    "bw_file_rd": ("io_only", "open2close"),
    "bw_mmap_rd": ("mmap_only", "open2close"),
    "mhz": ("cycle",),
    "lat_fs": ("create_delete",),
    "lat_fcntl": ("roundtrip",),
    "lat_unix_connect": ("connect",),
    "bw_udp": ("read",),
    "lat_rand": ("drand48", "lrand48", "rand", "random"),
    "line": ("line_size",),
    "tlb": ("pages",),
    "par_mem": ("parallelism",),
    "par_ops": tuple(f"{t}_{o}" for t in _INT_TYPES for o in ("bit", "add", "mul", "div", "mod"))
    + tuple(f"{t}_{o}" for t in ("float", "double") for o in ("add", "mul", "div")),
    "lat_dram_page": ("page_change",),
    "lat_rpc": ("call",),
    "cache": ("levels",),
}
PROGRAMS = tuple(OPS)
#: size_kb when a campaign does not set it (stream's arrays must outgrow the
#: caches; lat_ctx's working set is lmbench's 0: a bare switch)
SIZE_KB_DEFAULT = {"stream": 32768, "lat_ctx": 0, "lat_fs": 0, "par_mem": 65536}
#: programs with a size operand: their runs record the size used (effective_size_kb)
SIZED = ("lat_mem_rd", "bw_mem", "lat_ctx", "lat_mmap", "lat_pagefault", "stream", "bw_file_rd", "bw_mmap_rd", "lat_fs",
         "par_mem")  # fmt: skip
#: not scalable in lmbench3 (lat_connect: TIME_WAIT exhaustion; lat_ops, mhz: CPU constants)
UNSCALABLE = ("lat_connect", "lat_ops", "mhz", "line", "tlb", "par_mem", "par_ops", "lat_dram_page", "cache")
#: programs with two communicating ends, which `placement` pins (-A)
IPC = (
    "lat_pipe",
    "lat_ctx",
    "lat_tcp",
    "lat_udp",
    "lat_connect",
    "bw_pipe",
    "bw_unix",
    "lat_unix",
    "lat_fifo",
    "lat_sem",
    "bw_tcp",
    "lat_fcntl",
    "lat_unix_connect",
    "bw_udp",
    "lat_rpc",
)
PLACEMENTS = ("unpinned", "same", "different")
#: lat_rpc's transports (the first is the default)
PROTOCOLS = ("tcp", "udp")
#: cache levels with metrics of their own (l1_bytes, l1_ns, l1_parallelism, ...)
CACHE_LEVELS = 4
#: programs linking a system library, by its pkg-config name (Sun RPC left glibc for libtirpc)
PKG_CONFIG = {"lat_rpc": "libtirpc"}
#: smallest size_kb and largest msg_bytes each program accepts
MIN_SIZE_KB = {"bw_mem": 4, "lat_pagefault": 64, "lat_ctx": 0, "lat_fs": 0, "par_mem": 4}
#: size_kb up to (lat_fs's files)
MAX_SIZE_KB = {"lat_fs": 65536}
#: programs whose size_kb may be 0 (lat_ctx: a bare switch; lat_fs: empty files)
ZERO_SIZE_OK = ("lat_ctx", "lat_fs")
MAX_MSG_BYTES = {
    "lat_udp": 65507,
    "bw_udp": 65507,
    "lat_tcp": 16 << 20,
    "lat_unix": 16 << 20,
    "bw_pipe": 64 << 20,
    "bw_unix": 64 << 20,
    "bw_tcp": 64 << 20,
}
#: secondary result lines "<primary>.<suffix>" -> metric
_SECONDARY = {"min": "latency_min_ns", "actual": "actual_ns", "per_fault": "per_fault_ns", "mhz": "mhz",
              "delete": "delete_ns", "delete.min": "delete_min_ns", "creates_per_s": "creates_per_s",
              "deletes_per_s": "deletes_per_s", "bytes": "line_bytes", "pages": "tlb_pages",
              "parallelism": "parallelism", "hit": "dram_hit_ns", "miss": "dram_miss_ns",
              "levels": "cache_levels", "memory_ns": "memory_ns", "memory_parallelism": "memory_parallelism",
              **{f"l{k}_{f}": f"l{k}_{f}" for k in range(1, CACHE_LEVELS + 1)
                 for f in ("bytes", "ns", "parallelism")}}  # fmt: skip
_LINE = re.compile(r"^(\S+) (-?[0-9.]+) (ns|us|MB/s|MHz|/s|bytes|pages|x|levels)$", re.M)
#: the harness's note after each result group: how its intervals went
_NOTE = re.compile(r"^# benchmp (.*)$", re.M)
#: note field -> metric (the run's metadata in result.json and the CSV)
NOTE_FIELDS = {"interval_us": "interval_us", "calibration": "calibration", "out_of_window": "intervals_out_of_window",
               "resized": "intervals_resized", "discarded": "intervals_discarded"}  # fmt: skip
CALIBRATION_FILE = "calibration.tsv"
#: what every program links: the harness and its calibration
HARNESS_SOURCES = ("harness.c", "calibrate.c")
#: programs that share their body with another (one body, two programs)
SHARED_SOURCES = {"bw_pipe": "bw_channel.c", "bw_unix": "bw_channel.c", "bw_file_rd": "bw_file.c",
                  "bw_mmap_rd": "bw_file.c", "line": "memchain.c", "tlb": "memchain.c", "par_mem": "memchain.c",
                  "lat_dram_page": "memchain.c", "cache": "memchain.c"}  # fmt: skip


def program_sources(prog: str) -> list[Path]:
    """The .c files compiled together into one program (a catalog program
    or a harness test: protocol_test, harness_test)."""
    shared = [SHARED_SOURCES[prog]] if prog in SHARED_SOURCES else []
    return [SRC / name for name in (f"{prog}.c", *shared, *HARNESS_SOURCES)]


def program_flags(prog: str) -> list[str]:
    """The compiler and linker flags a program needs beyond its sources, for
    a build on this machine (the catalog's build script asks pkg-config on
    the build's platform instead). Raises RuntimeError in one line when
    the library is missing."""
    if prog not in PKG_CONFIG:
        return []
    package = PKG_CONFIG[prog]
    proc = subprocess.run(["pkg-config", "--cflags", "--libs", package], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"{prog} needs {package} (Debian: {package}-dev, which scripts/setup/apt.sh installs)")
    return proc.stdout.split()


def _positive(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class LmbenchBenchmark(Benchmark):
    name = "lmbench"
    build_defaults = {"lmbench_cflags": "-O2"}
    run_defaults = {"micro": "lat_syscall", "stride": 64, "nprocs": 2, "interval_us": 1000, "nfds": 200, "parallel": 1, "repetitions": 11,
                    "warmup_us": 0, "placement": "unpinned", "max_kb": 65536}  # fmt: skip
    metrics = (
        "latency_ns",
        "latency_min_ns",
        "bandwidth_mb_s",
        "bandwidth_max_mb_s",
        "actual_ns",
        "per_fault_ns",
        "mhz",
        "delete_ns",
        "delete_min_ns",
        "creates_per_s",
        "deletes_per_s",
        "line_bytes",
        "tlb_pages",
        "parallelism",
        "dram_hit_ns",
        "dram_miss_ns",
        "cache_levels",
        *(f"l{k}_{f}" for k in range(1, CACHE_LEVELS + 1) for f in ("bytes", "ns", "parallelism")),
        "memory_ns",
        "memory_parallelism",
    )
    #: line_bytes reads as bytes from its name; these do not
    declared_units = {
        "tlb_pages": "pages",
        "parallelism": "x",
        "cache_levels": "levels",
        "memory_parallelism": "x",
        **{f"l{k}_parallelism": "x" for k in range(1, CACHE_LEVELS + 1)},
    }

    def source_files(self) -> list[Path]:
        return sorted(SRC.glob("*.[ch]"))

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        for record in records:
            p = {**self.run_defaults, **record}
            if p["micro"] not in PROGRAMS:
                raise self.fail(
                    "variables.micro",
                    f"unknown micro-benchmark {value_text(p['micro'])!r} (choose from {', '.join(PROGRAMS)})",
                )
            micro = str(p["micro"])
            ops = OPS[micro]
            op = p.get("op", ops[0])
            if len(ops) > 1 and op not in ops:
                raise self.fail(
                    "variables.op", f"{value_text(op)!r} is not an operation of {micro} (choose from {', '.join(ops)})"
                )
            for var in ("stride", "nprocs", "parallel", "repetitions", "interval_us", "msg_bytes", "nfds", "max_kb"):
                if var in p and not _positive(p[var]):
                    raise self.fail(f"variables.{var}", f"{value_text(p[var])!r} is not a positive integer")
            self._check_options(micro, p)
            if "size_kb" in p and not (
                _positive(p["size_kb"])
                or (micro in ZERO_SIZE_OK and p["size_kb"] == 0 and not isinstance(p["size_kb"], bool))
            ):
                raise self.fail(
                    "variables.size_kb",
                    f"{value_text(p['size_kb'])!r} is not a positive integer"
                    + (" (or 0)" if micro in ZERO_SIZE_OK else ""),
                )
            if micro in UNSCALABLE and p["parallel"] != 1:
                raise self.fail(
                    "variables.parallel",
                    f"{micro} is not a scalable benchmark (as in lmbench3): parallel must be 1, not {value_text(p['parallel'])}",
                )
            size = p.get("size_kb", SIZE_KB_DEFAULT.get(micro, 1024))
            if size < MIN_SIZE_KB.get(micro, 1):  # type: ignore[operator]
                raise self.fail(
                    "variables.size_kb", f"{micro} needs size_kb >= {MIN_SIZE_KB[micro]}, not {value_text(size)}"
                )
            if size > MAX_SIZE_KB.get(micro, size):  # type: ignore[operator]
                raise self.fail(
                    "variables.size_kb", f"{micro} takes size_kb up to {MAX_SIZE_KB[micro]}, not {value_text(size)}"
                )
            if "msg_bytes" in p and p["msg_bytes"] > MAX_MSG_BYTES.get(micro, p["msg_bytes"]):  # type: ignore[operator]
                raise self.fail(
                    "variables.msg_bytes",
                    f"{micro} takes msg_bytes up to {MAX_MSG_BYTES[micro]}, not {value_text(p['msg_bytes'])}",
                )
            if p["interval_us"] > 10_000_000:  # type: ignore[operator]
                raise self.fail(
                    "variables.interval_us", f"{value_text(p['interval_us'])} is above lat_timer's limit of 10000000 us"
                )

    def _check_options(self, micro: str, p: Mapping[str, object]) -> None:
        """warmup_us, placement, nfds and file: the harness options and the
        operands that only some programs take."""
        warmup = p["warmup_us"]
        if not (isinstance(warmup, int) and not isinstance(warmup, bool) and warmup >= 0):
            raise self.fail("variables.warmup_us", f"{value_text(warmup)!r} is not a non-negative integer")
        if p["placement"] not in PLACEMENTS:
            raise self.fail(
                "variables.placement",
                f"{value_text(p['placement'])!r} is not a placement (choose from {', '.join(PLACEMENTS)})",
            )
        if p["placement"] != "unpinned" and micro not in IPC:
            raise self.fail(
                "variables.placement", f"{micro} has no two ends to place (placement is for {', '.join(IPC)})"
            )
        if p["nfds"] > 1000:  # type: ignore[operator]
            raise self.fail("variables.nfds", f"lat_select takes nfds up to 1000, not {value_text(p['nfds'])}")
        if "file" in p and (not isinstance(p["file"], str) or not p["file"].startswith("/")):
            raise self.fail("variables.file", f"{value_text(p['file'])!r} is not an absolute path")
        protocol = p.get("protocol", PROTOCOLS[0])
        if protocol not in PROTOCOLS:
            raise self.fail(
                "variables.protocol",
                f"{value_text(protocol)!r} is not a protocol of lat_rpc (choose from {', '.join(PROTOCOLS)})",
            )
        if protocol != PROTOCOLS[0] and micro != "lat_rpc":
            raise self.fail("variables.protocol", f"{micro} has no protocol to choose (protocol is lat_rpc's)")

    def build_script(self, ctx: BuildContext) -> str:
        flags = shlex.split(value_text(ctx.params["lmbench_cflags"]))
        lines = []
        for prog in PROGRAMS:
            argv = [
                "cc",
                *flags,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-o",
                str(ctx.build_dir / prog),
                *map(str, program_sources(prog)),
            ]
            line = shlex.join(argv)
            if prog in PKG_CONFIG:
                # Asked on the build's platform; a missing library fails in one line.
                package = PKG_CONFIG[prog]
                lines.append(
                    f"flags=$(pkg-config --cflags --libs {package}) || "
                    f"{{ echo 'lmbench: {prog} needs {package} (Debian: {package}-dev)' >&2; exit 1; }}"
                )
                line += " $flags"
            lines.append(line)
        return "\n".join(lines)

    def run_command(self, ctx: RunContext) -> list[str]:
        assert ctx.build_dir is not None
        p = {**self.run_defaults, **ctx.params}
        micro = str(p["micro"])
        op = value_text(p.get("op", OPS[micro][0]))
        size = value_text(p.get("size_kb", SIZE_KB_DEFAULT.get(micro, 1024)))
        msg = [value_text(p["msg_bytes"])] if "msg_bytes" in p else []
        argv = [str(ctx.build_dir / micro), "-P", value_text(p["parallel"]), "-N", value_text(p["repetitions"]),
                "-C", str(ctx.build_dir / CALIBRATION_FILE)]  # fmt: skip
        if p["warmup_us"]:
            argv += ["-W", value_text(p["warmup_us"])]
        if micro in IPC and p["placement"] != "unpinned":
            argv += ["-A", value_text(p["placement"])]
        operands: dict[str, list[str]] = {
            "lat_syscall": [op, *([value_text(p["file"])] if "file" in p else [])],
            "lat_mem_rd": [size, value_text(p["stride"]), op],
            "bw_mem": [size, op],
            "lat_ctx": [size, value_text(p["nprocs"])],
            "lat_pipe": [],
            "lat_mmap": [size, op],
            "lat_pagefault": [size, op],
            "stream": [op, size],
            "bw_pipe": msg,
            "bw_unix": msg,
            "lat_tcp": msg,
            "lat_udp": msg,
            "lat_connect": [],
            "lat_timer": [op, value_text(p["interval_us"])],
            "lat_unix": msg,
            "lat_fifo": [],
            "lat_select": [op, value_text(p["nfds"])],
            "lat_sem": [op],
            "bw_tcp": msg,
            "bw_file_rd": [size, op],
            "bw_mmap_rd": [size, op],
            "mhz": [],
            "lat_fs": [size],
            "lat_fcntl": [],
            "lat_unix_connect": [],
            "bw_udp": msg,
            "line": ["-M", value_text(p["max_kb"])],
            "tlb": ["-L", value_text(p["stride"]), "-M", value_text(p["max_kb"])],
            "par_mem": ["-L", value_text(p["stride"]), size],
            "lat_dram_page": ["-M", value_text(p["max_kb"])],
            "lat_rpc": [value_text(p.get("protocol", PROTOCOLS[0]))],
            "cache": ["-L", value_text(p["stride"]), "-M", value_text(p["max_kb"])],
        }
        return [*argv, *operands.get(micro, [op])]

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        """The first result line is the median (latency or bandwidth); lines
        named after it with a suffix are the minimum (`.min`), best bandwidth
        (`.max`) and program-specific figures (`.actual`, `.per_fault`)."""
        out: dict[str, object] = dict.fromkeys(self.metrics)
        lines = [(m.group(1), Decimal(m.group(2)), m.group(3)) for m in _LINE.finditer(stdout)]
        if not lines:
            return out
        primary = lines[0][0]
        for name, value, unit in lines:
            if unit == "MB/s":
                key = (
                    "bandwidth_mb_s" if name == primary else "bandwidth_max_mb_s" if name == f"{primary}.max" else None
                )
            else:
                key = (
                    "latency_ns"
                    if name == primary
                    else _SECONDARY.get(name.removeprefix(f"{primary}."))
                    if name.startswith(f"{primary}.")
                    else None
                )
                value = value * 1000 if unit == "us" else value
            if key and out[key] is None:
                # Decimal arithmetic, then one rounding: the CSV holds the
                # printed value (2.5094 us -> 2509.4 ns, not 2509.3999999999996).
                out[key] = float(value)
        # A program reports only its own figures (lat_mem_rd no bandwidth,
        # bw_mem no per-fault time): the others are absent, not unparsed.
        out = {k: v for k, v in out.items() if v is not None}
        out.update(self._note(stdout))
        if params.get("micro") in SIZED:
            out["effective_size_kb"] = int(params.get("size_kb", SIZE_KB_DEFAULT.get(str(params["micro"]), 1024)))  # type: ignore[call-overload]
        return out

    @staticmethod
    def _note(stdout: str) -> dict[str, object]:
        """The first harness note's fields: the interval, where it came from
        (fixed, cache, calibrated, or fallback when calibration could not
        settle) and the intervals outside lmbench3's [0.99, 1.2] window."""
        match = _NOTE.search(stdout)
        if not match:
            return {}
        fields = dict(item.split("=", 1) for item in match.group(1).split() if "=" in item)
        return {
            metric: (fields[key] if key == "calibration" else int(fields[key]))
            for key, metric in NOTE_FIELDS.items()
            if key in fields
        }
