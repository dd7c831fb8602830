"""RocksDB 7.8.3's db_bench from Debian's rocksdb-tools package.

Variables as LevelDB's: `bench_name`, `nb_threads`, `reads` (per thread),
and the build variables `num` (keys) and `value_size` (bytes), which fill the
database once per build directory (fillseq), so runs measure their benchmark,
not the fill. Read-only benchmarks open the database with --readonly (no
lock, nothing written); the others (overwrite, updaterandom, ...) change the
shared database as LevelDB's do. Metrics: micros/op (per thread), ops/s (all
threads, as db_bench reports it) and MB/s.

Debian's build prints "WARNING: Assertions are enabled": its figures carry
that cost (a source build is the way to a release build; not done here).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from perfsnake.benchmarks.base import BuildContext, RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.escape import value_text

READS = ("readrandom", "readseq", "readreverse", "readmissing", "seekrandom", "multireadrandom")
WRITES = ("overwrite", "updaterandom", "readwhilewriting", "readrandomwriterandom", "deleterandom")
BENCHMARKS = READS + WRITES
# "readrandom   :      23.372 micros/op 84234 ops/sec 0.475 seconds 40000 operations;    9.3 MB/s (20000 of 20000 found)"
_LINE = re.compile(r"^(\w+)\s*:\s*([0-9.]+) micros/op ([0-9.]+) ops/sec(.*)$", re.M)
_MBPS = re.compile(r"([0-9.]+) MB/s")


class RocksDBBenchmark(PackagedTool):
    name = "rocksdb"
    executable = "db_bench"
    package = "rocksdb-tools"
    build_defaults = {"num": 100000, "value_size": 100}
    run_defaults = {"bench_name": "readrandom", "nb_threads": 1, "reads": 100000}
    kinds = {"bench_name": BENCHMARKS, "nb_threads": "int", "reads": "int", "num": "int", "value_size": "int"}
    metrics = ("micros_per_op", "ops_per_s", "mb_per_s")

    def needs_build(self) -> bool:
        return True

    def build_script(self, ctx: BuildContext) -> str:
        fill = [
            "db_bench", "--benchmarks=fillseq", f"--num={value_text(ctx.params['num'])}",
            f"--value_size={value_text(ctx.params['value_size'])}", f"--db={ctx.build_dir / 'db'}",
        ]  # fmt: skip
        return shlex.join(fill)

    def run_command(self, ctx: RunContext) -> list[str]:
        assert ctx.build_dir is not None
        p = self.params(ctx.params)
        argv = [
            "db_bench", f"--benchmarks={value_text(p['bench_name'])}", f"--threads={value_text(p['nb_threads'])}",
            "--use_existing_db=1", f"--db={ctx.build_dir / 'db'}", f"--num={value_text(p['num'])}",
            f"--reads={value_text(p['reads'])}", f"--value_size={value_text(p['value_size'])}",
        ]  # fmt: skip
        if p["bench_name"] in READS:
            argv.append("--readonly=1")
        return argv

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        wanted = str(params.get("bench_name", "readrandom"))
        for name, micros, ops, rest in _LINE.findall(stdout):
            if name == wanted:
                out: dict[str, object] = {"micros_per_op": float(micros), "ops_per_s": float(ops)}
                mbps = _MBPS.search(rest)
                if mbps:  # seekrandom prints none: left out, not unparsed
                    out["mb_per_s"] = float(mbps.group(1))
                return out
        raise ValueError(f"no '{wanted} : ... micros/op ... ops/sec' line in db_bench's output")
