"""Our lmbench-style micro-benchmarks (src/lmbench) as a catalog benchmark.

Variables: `micro` (lat_syscall, lat_mem_rd, bw_mem, lat_proc), `op` (the
micro-benchmark's operation), `size_kb` (lat_mem_rd, bw_mem, lat_ctx),
`stride` (lat_mem_rd), `nprocs` (lat_ctx's ring),
`parallel` (children of the harness: scalable load), `repetitions`
(intervals whose median is reported).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from perfsnake import ROOT
from perfsnake.benchmarks.base import Benchmark, BuildContext, RunContext
from perfsnake.escape import value_text

SRC = ROOT / "src" / "lmbench"
#: micro-benchmark -> its operations (the first is the default)
OPS = {
    "lat_syscall": ("null", "read", "write", "stat", "fstat", "open"),
    "lat_mem_rd": ("chase",),
    "bw_mem": ("rd", "wr", "cp", "bzero"),
    "lat_proc": ("fork", "exec", "shell"),
    "lat_ctx": ("ring",),
}
PROGRAMS = tuple(OPS)
_LINE = re.compile(r"^(\S+) ([0-9.]+) (ns|us|MB/s)$", re.M)


class LmbenchBenchmark(Benchmark):
    name = "lmbench"
    build_defaults = {"lmbench_cflags": "-O2"}
    run_defaults = {"micro": "lat_syscall", "size_kb": 1024, "stride": 64, "nprocs": 2, "parallel": 1, "repetitions": 11}
    metrics = ("latency_ns", "bandwidth_mb_s")

    def source_files(self) -> list[Path]:
        return sorted(SRC.glob("*.[ch]"))

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        for record in records:
            p = {**self.run_defaults, **record}
            if p["micro"] not in PROGRAMS:
                raise self.fail("variables.micro", f"unknown micro-benchmark {value_text(p['micro'])!r} (choose from {', '.join(PROGRAMS)})")
            ops = OPS[str(p["micro"])]
            op = p.get("op", ops[0])
            if len(ops) > 1 and op not in ops:
                raise self.fail("variables.op", f"{value_text(op)!r} is not an operation of {p['micro']} (choose from {', '.join(ops)})")
            for var in ("size_kb", "stride", "nprocs", "parallel", "repetitions"):
                if isinstance(p[var], bool) or not isinstance(p[var], int) or p[var] < 1:
                    raise self.fail(f"variables.{var}", f"{value_text(p[var])!r} is not a positive integer")

    def build_script(self, ctx: BuildContext) -> str:
        flags = shlex.split(value_text(ctx.params["lmbench_cflags"]))
        lines = []
        for prog in PROGRAMS:
            argv = ["cc", *flags, "-Wall", "-Wextra", "-Werror", "-o", str(ctx.build_dir / prog), str(SRC / f"{prog}.c"), str(SRC / "harness.c")]
            lines.append(shlex.join(argv))
        return "\n".join(lines)

    def run_command(self, ctx: RunContext) -> list[str]:
        assert ctx.build_dir is not None
        p = {**self.run_defaults, **ctx.params}
        micro = str(p["micro"])
        op = value_text(p.get("op", OPS[micro][0]))
        argv = [str(ctx.build_dir / micro), "-P", value_text(p["parallel"]), "-N", value_text(p["repetitions"])]
        if micro == "lat_mem_rd":
            return [*argv, value_text(p["size_kb"]), value_text(p["stride"])]
        if micro == "bw_mem":
            return [*argv, value_text(p["size_kb"]), op]
        if micro == "lat_ctx":
            return [*argv, value_text(p["size_kb"]), value_text(p["nprocs"])]
        return [*argv, op]

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        out: dict[str, object] = {"latency_ns": None, "bandwidth_mb_s": None}
        match = _LINE.search(stdout)
        if match:
            value, unit = float(match.group(2)), match.group(3)
            if unit == "MB/s":
                out["bandwidth_mb_s"] = value
            else:
                out["latency_ns"] = value * 1000 if unit == "us" else value
        return out
