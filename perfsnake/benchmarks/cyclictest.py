"""cyclictest (Debian rt-tests 2.4): wake-up latency of timer threads.

Variables: `threads` (measuring threads), `interval_us` (their period),
`duration_s` (the run's length; the campaign's duration_s when unset),
`priority` (SCHED_FIFO priority, 1..99), `histogram_us` (the histogram's
range: latencies beyond it count as overflows). The run prints its histogram
(-h) and summary (-q). Metrics in microseconds: min, avg (over all samples),
max, p50, p99 and p99.9 from the histogram (none when a percentile falls
beyond its range: raise histogram_us), plus the samples, the overflows and
the priority the threads ran at.

Real-time priority needs root or RLIMIT_RTPRIO: without it cyclictest exits
with "Unable to change scheduling policy!", and the run is recorded as failed
with that reason (the parser names the missing priority).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from perfsnake.benchmarks.base import RunContext
from perfsnake.benchmarks.packaged import PackagedTool
from perfsnake.escape import value_text

_BUCKET = re.compile(r"^(\d+)((?:[ \t]+\d+)+)$", re.M)
_SUMMARY = {
    "total": re.compile(r"^# Total:((?: \d+)+)$", re.M),
    "min": re.compile(r"^# Min Latencies:((?: \d+)+)$", re.M),
    "avg": re.compile(r"^# Avg Latencies:((?: \d+)+)$", re.M),
    "max": re.compile(r"^# Max Latencies:((?: \d+)+)$", re.M),
    "overflows": re.compile(r"^# Histogram Overflows:((?: \d+)+)$", re.M),
}
_NO_RT = "Unable to change scheduling policy"
PERCENTILES = {"latency_p50_us": 0.50, "latency_p99_us": 0.99, "latency_p999_us": 0.999}


def percentile(buckets: list[tuple[int, int]], samples: int, q: float) -> int | None:
    """The smallest bucket holding the q-quantile of `samples` (None beyond the histogram)."""
    need, seen = q * samples, 0
    for value, count in buckets:
        seen += count
        if seen >= need:
            return value
    return None


class CyclictestBenchmark(PackagedTool):
    name = "cyclictest"
    executable = "cyclictest"
    package = "rt-tests"
    run_defaults = {"threads": 1, "interval_us": 1000, "priority": 80, "histogram_us": 5000}
    kinds = {"threads": "int", "interval_us": "int", "duration_s": "int", "priority": "int", "histogram_us": "int"}
    metrics = (
        "latency_min_us",
        "latency_avg_us",
        "latency_max_us",
        *PERCENTILES,
        "samples",
        "overflows",
        "rt_priority",
    )

    def check_record(self, p: Mapping[str, object]) -> None:
        if p["priority"] > 99:  # type: ignore[operator]
            raise self.fail(
                "variables.priority", f"{value_text(p['priority'])} is above SCHED_FIFO's highest priority, 99"
            )

    def run_command(self, ctx: RunContext) -> list[str]:
        p = self.params(ctx.params)
        duration = p.get("duration_s", max(1, round(ctx.duration_s)))
        return [
            "cyclictest", "--mlockall", "--quiet", f"--threads={value_text(p['threads'])}",
            f"--interval={value_text(p['interval_us'])}", f"--duration={value_text(duration)}",
            f"--priority={value_text(p['priority'])}", f"--histogram={value_text(p['histogram_us'])}",
        ]  # fmt: skip

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        if _NO_RT in stderr:
            prio = value_text(params.get("priority", self.run_defaults["priority"]))
            raise ValueError(
                f"cyclictest could not get real-time priority {prio}: run as root or raise RLIMIT_RTPRIO (ulimit -r)"
            )
        summary: dict[str, list[int]] = {}
        for key, pattern in _SUMMARY.items():
            match = pattern.search(stdout)
            if match is None:
                raise ValueError(f"no '# {key}' line in cyclictest's histogram output (was it run with -h?)")
            summary[key] = [int(v) for v in match.group(1).split()]
        threads = len(summary["total"])
        buckets = []
        for match in _BUCKET.finditer(stdout):
            counts = [int(v) for v in match.group(2).split()]
            if len(counts) != threads:
                raise ValueError(f"a histogram line has {len(counts)} counts for {threads} threads")
            buckets.append((int(match.group(1)), sum(counts)))
        if not buckets:
            raise ValueError("cyclictest printed no histogram")
        in_range, overflows = sum(summary["total"]), sum(summary["overflows"])
        samples = in_range + overflows
        if samples == 0:
            raise ValueError("cyclictest recorded no samples")
        # The per-thread averages cover every sample, overflows included.
        weights = [t + o for t, o in zip(summary["total"], summary["overflows"], strict=True)]
        out: dict[str, object] = {
            "latency_min_us": min(summary["min"]),
            "latency_avg_us": sum(a * w for a, w in zip(summary["avg"], weights, strict=True)) / samples,
            "latency_max_us": max(summary["max"]),
        }
        for name, q in PERCENTILES.items():
            out[name] = percentile(buckets, samples, q)
        out.update(
            samples=samples, overflows=overflows, rt_priority=params.get("priority", self.run_defaults["priority"])
        )
        return out
