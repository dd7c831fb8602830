"""Our lmbench-style micro-benchmarks (src/lmbench) as a catalog benchmark.

Variables: `micro` (lat_syscall, lat_mem_rd), `op` (lat_syscall's system
call), `size_kb` and `stride` (lat_mem_rd), `parallel` (children of the
harness: scalable load), `repetitions` (intervals whose median is reported).
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
PROGRAMS = ("lat_syscall", "lat_mem_rd")
SYSCALLS = ("null", "read", "write", "stat", "fstat", "open")
_LINE = re.compile(r"^(\S+) ([0-9.]+) (ns|us)$", re.M)


class LmbenchBenchmark(Benchmark):
    name = "lmbench"
    build_defaults = {"lmbench_cflags": "-O2"}
    run_defaults = {"micro": "lat_syscall", "op": "null", "size_kb": 1024, "stride": 64, "parallel": 1, "repetitions": 11}
    metrics = ("latency_ns",)

    def source_files(self) -> list[Path]:
        return sorted(SRC.glob("*.[ch]"))

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        for record in records:
            p = {**self.run_defaults, **record}
            if p["micro"] not in PROGRAMS:
                raise self.fail("variables.micro", f"unknown micro-benchmark {value_text(p['micro'])!r} (choose from {', '.join(PROGRAMS)})")
            if p["op"] not in SYSCALLS:
                raise self.fail("variables.op", f"unknown system call {value_text(p['op'])!r} (choose from {', '.join(SYSCALLS)})")
            for var in ("size_kb", "stride", "parallel", "repetitions"):
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
        argv = [str(ctx.build_dir / micro), "-P", value_text(p["parallel"]), "-N", value_text(p["repetitions"])]
        if micro == "lat_syscall":
            return [*argv, value_text(p["op"])]
        return [*argv, value_text(p["size_kb"]), value_text(p["stride"])]

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        match = _LINE.search(stdout)
        if not match:
            return {"latency_ns": None}
        value = float(match.group(2))
        return {"latency_ns": value * 1000 if match.group(3) == "us" else value}
