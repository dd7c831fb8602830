"""sysbench 1.0.20's built-in tests (Debian package): cpu, memory, threads, mutex.

Variables: `test`, `threads`, `time_s` (the run's length; the campaign's
duration_s when unset; mutex ignores it: it runs a fixed amount of work),
and each test's options: `cpu_max_prime` (cpu); `memory_block_size`,
`memory_total_size`, `memory_oper` (memory); `thread_yields`, `thread_locks`
(threads); `mutex_num`, `mutex_locks`, `mutex_loops` (mutex). Metrics:
events/s, total events, total time, latency min/avg/95th/max in ms (sysbench
prints them rounded to 0.01 ms), and MiB/s for memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from perfsnake.benchmarks.base import RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.escape import value_text

#: test -> its options (variable name -> sysbench option)
OPTIONS = {
    "cpu": {"cpu_max_prime": "--cpu-max-prime"},
    "memory": {"memory_block_size": "--memory-block-size", "memory_total_size": "--memory-total-size",
               "memory_oper": "--memory-oper"},
    "threads": {"thread_yields": "--thread-yields", "thread_locks": "--thread-locks"},
    "mutex": {"mutex_num": "--mutex-num", "mutex_locks": "--mutex-locks", "mutex_loops": "--mutex-loops"},
}  # fmt: skip
TESTS = tuple(OPTIONS)
_FIELDS = {
    "total_time_s": re.compile(r"^\s*total time:\s+([0-9.]+)s$", re.M),
    "total_events": re.compile(r"^\s*total number of events:\s+(\d+)$", re.M),
    "latency_min_ms": re.compile(r"^\s*min:\s+([0-9.]+)$", re.M),
    "latency_avg_ms": re.compile(r"^\s*avg:\s+([0-9.]+)$", re.M),
    "latency_max_ms": re.compile(r"^\s*max:\s+([0-9.]+)$", re.M),
    "latency_p95_ms": re.compile(r"^\s*95th percentile:\s+([0-9.]+)$", re.M),
}
_EVENTS_PER_S = re.compile(r"^\s*events per second:\s+([0-9.]+)$", re.M)
_MIB_PER_S = re.compile(r"^[0-9.]+ MiB transferred \(([0-9.]+) MiB/sec\)$", re.M)


class SysbenchBenchmark(PackagedTool):
    name = "sysbench"
    executable = "sysbench"
    package = "sysbench"
    run_defaults = {
        "test": "cpu", "threads": 1, "cpu_max_prime": 10000, "memory_block_size": "1K",
        "memory_total_size": "100G", "memory_oper": "write", "thread_yields": 1000, "thread_locks": 8,
        "mutex_num": 4096, "mutex_locks": 50000, "mutex_loops": 10000,
    }  # fmt: skip
    kinds = {
        "test": TESTS, "threads": "int", "time_s": "int", "cpu_max_prime": "int", "memory_block_size": "size",
        "memory_total_size": "size", "memory_oper": ("read", "write", "none"), "thread_yields": "int",
        "thread_locks": "int", "mutex_num": "int", "mutex_locks": "int", "mutex_loops": "int",
    }  # fmt: skip
    metrics = ("events_per_s", "total_events", "total_time_s", "latency_min_ms", "latency_avg_ms",
               "latency_p95_ms", "latency_max_ms", "mib_per_s")  # fmt: skip

    def run_command(self, ctx: RunContext) -> list[str]:
        p = self.params(ctx.params)
        test = str(p["test"])
        # sysbench's --time takes whole seconds; 0 would mean "no limit".
        seconds = p.get("time_s", max(1, round(ctx.duration_s)))
        argv = ["sysbench", test, f"--threads={value_text(p['threads'])}", f"--time={value_text(seconds)}",
                "--percentile=95"]  # fmt: skip
        argv += [f"{option}={value_text(p[var])}" for var, option in OPTIONS[test].items()]
        return [*argv, "run"]

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        if "General statistics:" not in stdout:
            raise ValueError("no 'General statistics:' section in sysbench's output")
        out: dict[str, object] = {}
        for name, pattern in _FIELDS.items():
            match = pattern.search(stdout)
            if match is None:
                raise ValueError(f"sysbench's output has no {name} line")
            out[name] = float(match.group(1)) if name != "total_events" else int(match.group(1))
        rate = _EVENTS_PER_S.search(stdout)
        # cpu prints its rate; the other tests give events and time.
        # A metric the test does not have is left out (not reported as unparsed).
        if rate:
            out["events_per_s"] = float(rate.group(1))
        else:
            time_s = out["total_time_s"]
            out["events_per_s"] = out["total_events"] / time_s if time_s else None  # type: ignore[operator]
        mib = _MIB_PER_S.search(stdout)
        if params.get("test", "cpu") == "memory" and mib is None:
            raise ValueError("sysbench memory printed no 'MiB transferred' line")
        if mib:
            out["mib_per_s"] = float(mib.group(1))
        return out
