"""Benchmark (not a test): which timing interval gives the most repeatable answer here.

usage: .venv/bin/python bench/lmbench_interval.py [--invocations 10] [--budget-ms 1100] [--label quiet]

The calibration question (docs/lmbench.md, "Calibration"): on a VM whose speed wanders
by a few tenths of a percent, no candidate interval passes the delta test and
every calibration falls back to 100 ms. Is a shorter interval, repeated more
often for the same timed budget, as repeatable? This runs lat_syscall null,
lat_mem_rd 16 KB (a cache hit) and bw_mem rd 64 MB with the interval fixed
(LMBENCH_ENOUGH_US, so no calibration) at 1, 5, 10, 50 and 100 ms, each with
as many repetitions as fill --budget-ms (at least 11; 100 ms: 11), the
configurations interleaved, --invocations times each, one CPU (taskset -c
the last CPU). Per program and interval: the median of the invocations'
answers (each the harness's median interval), its relative spread over
invocations (CV and max/min), and the median answer relative to 100 ms's
(a short interval's bias: timer overhead, or caches warmed by the previous
interval), for the harness's median interval and for its best one (the
`.min` or `.max` line: a statistic that preemption cannot worsen). Appends to bench/results/lmbench_interval.json under --label
with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from perfsnake.benchmarks.lmbench import program_sources

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "lmbench_interval.json"
INTERVALS_US = (1000, 5000, 10000, 50000, 100000)
#: program -> (argv after the harness options, the result line's name)
PROGRAMS = {
    "lat_syscall null": (["lat_syscall"], ["null"], "lat_syscall.null"),
    "lat_mem_rd 16 KB": (["lat_mem_rd"], ["16", "64"], None),
    "bw_mem rd 64 MB": (["bw_mem"], ["65536", "rd"], None),
}
_RESULT = re.compile(r"^(\S+) ([0-9.]+) (ns|us|MB/s)$", re.M)


def build(work: Path, prog: str) -> Path:
    binary = work / prog
    argv = ["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(binary), *map(str, program_sources(prog))]
    subprocess.run(argv, check=True)
    return binary


def answers(out: str, line: str | None) -> tuple[float, float]:
    """The program's first result line (or the named one) and its best
    interval's (the `.min` line of a latency, `.max` of a bandwidth)."""
    found = {name: float(value) for name, value, _ in _RESULT.findall(out)}
    primary = line or next(iter(found), None)
    best = found.get(f"{primary}.min", found.get(f"{primary}.max"))
    if primary is None or primary not in found or best is None:
        raise ValueError(f"no result lines in {out[-300:]!r}")
    return found[primary], best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--invocations", type=int, default=10)
    parser.add_argument("--budget-ms", type=float, default=1100.0)
    parser.add_argument("--label", default="quiet")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lmbench-interval-"))
    binaries = {name: build(work, prog[0][0]) for name, prog in PROGRAMS.items()}
    cpu = str(max(os.sched_getaffinity(0)))
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("LMBENCH")}
    medians: dict[str, dict[int, list[float]]] = {n: {us: [] for us in INTERVALS_US} for n in PROGRAMS}
    bests: dict[str, dict[int, list[float]]] = {n: {us: [] for us in INTERVALS_US} for n in PROGRAMS}
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    for _ in range(args.invocations):
        for name, (_, operands, line) in PROGRAMS.items():
            for us in INTERVALS_US:  # interleaved: a drift of the machine hits every interval alike
                reps = max(11, round(args.budget_ms * 1000 / us))
                env = {**base_env, "LMBENCH_ENOUGH_US": str(us)}
                argv = ["taskset", "-c", cpu, str(binaries[name]), "-N", str(reps), *operands]
                proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=True, timeout=600)
                median, best = answers(proc.stdout, line)
                medians[name][us].append(median)
                bests[name][us].append(best)
    rows = []
    for statistic, table in (("median", medians), ("best", bests)):
        for name, by_interval in table.items():
            reference = statistics.median(by_interval[INTERVALS_US[-1]])
            for us, values in by_interval.items():
                med = statistics.median(values)
                rows.append({
                    "program": name, "statistic": statistic, "interval_us": us,
                    "repetitions": max(11, round(args.budget_ms * 1000 / us)), "answer": med,
                    "cv": statistics.stdev(values) / statistics.mean(values),
                    "max_over_min": max(values) / min(values), "vs_100ms": med / reference, "values": values,
                })  # fmt: skip
    record = {
        "label": args.label, "invocations": args.invocations, "budget_ms": args.budget_ms, "cpu": cpu,
        "load_before": load_before, "load_after": os.getloadavg()[0], "wall_s": time.monotonic() - start,
        "rows": rows,
    }  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(OUT.read_text()) if OUT.exists() else []
    OUT.write_text(json.dumps([*old, record], indent=1) + "\n")
    print(
        f"{'program':<18} {'of':<6} {'interval':>9} {'reps':>5} {'answer':>10} {'cv':>7} {'max/min':>8} {'vs 100ms':>8}"
    )
    for r in rows:
        print(f"{r['program']:<18} {r['statistic']:<6} {r['interval_us'] / 1000:>7g}ms {r['repetitions']:>5} {r['answer']:>10.4g} "
              f"{r['cv']:>7.2%} {r['max_over_min']:>8.4f} {r['vs_100ms']:>8.4f}")  # fmt: skip
    print(f"load {load_before:.1f} -> {record['load_after']:.1f}, {record['wall_s']:.0f} s; appended to {OUT}")


if __name__ == "__main__":
    main()
