"""Google Benchmark's JSON (`--benchmark_format=json` or `--benchmark_out`).

Only the per-repetition rows (`run_type: iteration`) become runs; the
library's own aggregates (mean, median, stddev, cv) are recomputed by
perfsnake's statistics, so they are left out. A benchmark's name
`BM_sum/1000/threads:2` is split into `function` (`BM_sum`) and `args`
(`1000/threads:2`, `-` when it has none). Times are converted to nanoseconds per iteration
(`real_time_ns`, `cpu_time_ns`); user counters (`items_per_second`,
`bytes_per_second`, any other number) are kept under their own names. A
repetition that reported an error is a failed run with its message.
"""

from __future__ import annotations

from pathlib import Path

from perfsnake.importers import Imported, ImportFormatError, Row, load_json, need

_TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
#: keys of a row that are not counters
_FIELDS = frozenset({"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
                     "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
                     "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "label"})  # fmt: skip
_CONTEXT = ("date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "library_build_type",
            "library_version")  # fmt: skip


def parse(path: Path) -> Imported:
    data = load_json(path)
    context = need(data, "context", dict, path)
    benchmarks = need(data, "benchmarks", list, path)
    rows: list[Row] = []
    metrics = ["real_time_ns", "cpu_time_ns", "iterations"]
    units = {"real_time_ns": "ns", "cpu_time_ns": "ns", "iterations": "iterations"}
    for i, bench in enumerate(benchmarks):
        where = f"benchmarks[{i}]"
        name = need(bench, "name", str, path, where)
        if bench.get("run_type", "iteration") != "iteration":
            continue
        run_name = bench.get("run_name", name)
        function, _, args = str(run_name).partition("/")
        record: dict[str, object] = {"function": function, "args": args or "-"}
        if bench.get("error_occurred"):
            message = str(bench.get("error_message") or "error")
            rows.append(Row(record, {m: None for m in metrics}, "failed", 1, message))
            continue
        unit = bench.get("time_unit", "ns")
        if unit not in _TO_NS:
            raise ImportFormatError(str(path), f"{where}.time_unit", f"unknown unit {unit!r} (ns, us, ms or s)")
        values: dict[str, float | None] = {
            "real_time_ns": need(bench, "real_time", (int, float), path, where) * _TO_NS[unit],
            "cpu_time_ns": need(bench, "cpu_time", (int, float), path, where) * _TO_NS[unit],
            "iterations": float(need(bench, "iterations", int, path, where)),
        }
        for key, value in bench.items():
            if key not in _FIELDS and isinstance(value, int | float) and not isinstance(value, bool):
                values[key] = float(value)
                if key not in metrics:
                    metrics.append(key)
        rows.append(Row(record, values))
    if not rows:
        raise ImportFormatError(str(path), "benchmarks", "no run_type: iteration row (only aggregates, or none)")
    info = {f"google_benchmark_{k}": str(context[k]) for k in _CONTEXT if k in context}
    if "host_name" in context:
        info["hostname"] = str(context["host_name"])
    if "date" in context:  # when it ran (compare's labels show it)
        info["utc_time"] = str(context["date"])
    return Imported("google-benchmark", ["function", "args"], metrics, units, rows, "real_time_ns", info)
