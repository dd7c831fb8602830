"""LevelDB 1.23's db_bench, built from the Debian source package.

The database is filled once per build (fillseq) and every run reads it with
--use_existing_db=1, so runs measure reads, not the fill.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from perfsnake.benchmarks.base import Benchmark, BuildContext, RunContext, number
from perfsnake.escape import value_text

# "readrandom   :       2.380 micros/op; (200000 of 100000 found)"
_LINE = re.compile(r"^(\w+)\s*:\s*([0-9.]+) micros/op;(.*)$", re.M)
_MBPS = re.compile(r"([0-9.]+) MB/s")

BENCHMARKS = (
    "fillseq", "fillsync", "fillrandom", "overwrite", "readrandom", "readmissing",
    "readhot", "readseq", "readreverse", "seekrandom", "seekordered",
    "deleteseq", "deleterandom", "readwhilewriting", "compact", "crc32c",
    "snappycomp", "snappyuncomp",
)  # fmt: skip


class LevelDBBenchmark(Benchmark):
    name = "leveldb"
    default_source = {"debian": "leveldb", "version": "1.23-4"}
    build_defaults = {"build_type": "Release", "cxxflags": "", "num": 100000}
    run_defaults = {"bench_name": "readrandom", "nb_threads": 1, "reads": 100000}
    metrics = ("micros_per_op", "ops_per_s", "mb_per_s")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        for record in records:
            name = record.get("bench_name", "readrandom")
            if name not in BENCHMARKS:
                raise self.fail(
                    "variables.bench_name",
                    f"unknown db_bench benchmark {value_text(name)!r} (choose from {', '.join(BENCHMARKS)})",
                )
            for var in ("nb_threads", "reads", "num"):
                value = record.get(var, 1)
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise self.fail(f"variables.{var}", f"{value_text(value)!r} is not a positive integer")
            if record.get("build_type", "Release") not in ("Release", "Debug", "RelWithDebInfo", "MinSizeRel"):
                raise self.fail(
                    "variables.build_type",
                    f"{value_text(record['build_type'])!r} is not a CMake build type (Release, Debug, RelWithDebInfo, MinSizeRel)",
                )

    def build_script(self, ctx: BuildContext) -> str:
        assert ctx.src_dir is not None
        cmake_dir = ctx.build_dir / "cmake"
        configure = [
            "cmake", "-S", str(ctx.src_dir), "-B", str(cmake_dir),
            f"-DCMAKE_BUILD_TYPE={value_text(ctx.params['build_type'])}",
            f"-DCMAKE_CXX_FLAGS={value_text(ctx.params['cxxflags'])}",
            # Otherwise tcmalloc gets linked silently when it is installed.
            "-DHAVE_TCMALLOC=OFF", "-DLEVELDB_BUILD_TESTS=OFF", "-DLEVELDB_BUILD_BENCHMARKS=ON",
        ]  # fmt: skip
        build = ["cmake", "--build", str(cmake_dir), "--target", "db_bench", "-j", str(ctx.threads)]
        fill = [
            str(cmake_dir / "db_bench"), "--benchmarks=fillseq",
            f"--num={value_text(ctx.params['num'])}", f"--db={ctx.build_dir / 'db'}",
        ]  # fmt: skip
        return "\n".join(shlex.join(cmd) for cmd in (configure, build, fill))

    def run_command(self, ctx: RunContext) -> list[str]:
        assert ctx.build_dir is not None
        p = {**self.run_defaults, **ctx.params}
        argv = [
            str(ctx.build_dir / "cmake" / "db_bench"),
            f"--benchmarks={value_text(p['bench_name'])}",
            f"--threads={value_text(p['nb_threads'])}",
            "--use_existing_db=1",
            f"--db={ctx.build_dir / 'db'}",
            f"--num={value_text(p['num'])}",
            f"--reads={value_text(p['reads'])}",
        ]
        return argv

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        wanted = str(params.get("bench_name", "readrandom"))
        # mb_per_s only when printed: db_bench prints no MB/s for the
        # read-only benchmarks (readrandom, seekrandom), which is not a parse failure.
        metrics: dict[str, object] = {"micros_per_op": None, "ops_per_s": None}
        for name, micros, rest in _LINE.findall(stdout):
            if name != wanted:
                continue
            micros_value = number(micros)
            metrics["micros_per_op"] = micros_value
            threads = int(str(params.get("nb_threads", 1)))
            # db_bench sums per-thread time, so micros/op is a per-thread
            # latency; the aggregate rate is threads / latency.
            if isinstance(micros_value, (int, float)) and micros_value > 0:
                metrics["ops_per_s"] = threads * 1e6 / micros_value
            mbps = _MBPS.search(rest)
            if mbps:
                metrics["mb_per_s"] = number(mbps.group(1))
        return metrics
