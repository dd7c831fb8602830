"""Speedup stacks (Eyerman, Du Bois and Eeckhout, ISPASS 2012): where an N-thread run's missing speedup went.

An N-thread run of parallel time T_p has N x T_p of thread time. Per
thread, what was not useful work is overhead O_i,c of a cause c, so the
speedup is S = N - sum_c (sum_i O_i,c) / T_p: a bar of height N whose base
is the speedup achieved and whose other parts are each cause's sum_i O_i,c / T_p.

Here S is measured (the benchmark's metric over the one-thread runs of the
same other variables), and the causes come from the N-thread runs' own
scheduler timelines (perfsnake.instruments.sched.parallel_region) and perf
samples: spinning in lock code, blocked in synchronisation, runnable but
waiting for a CPU (more threads than CPUs, preemption, sched_yield), load
imbalance, and parallelisation overhead (useful running time beyond what
the one-thread run needs for the same work). What they leave of N - S is
the unexplained remainder: it is never forced to zero, and it is negative
when the measured causes exceed the gap. Cache and memory interference
need a PMU's counters and are not a part here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfsnake.machine import capabilities
from perfsnake.statistics.summaries import summarise

#: The parts of the gap N - S, in stacking order (above the speedup).
CAUSES = ("spinning", "blocked", "runnable", "imbalance", "overhead")
UNEXPLAINED = "unexplained"
BETTER = ("higher", "lower")


def interference_note() -> str:
    """Why a speedup stack has no cache and memory interference part (one line)."""
    if capabilities.hardware_pmu():
        return "no cache/memory interference part: its PMU counters are not read yet"
    return "no cache/memory interference part: this machine has no PMU to count it"


@dataclass(frozen=True)
class RunTimes:
    """One run: its metric and where its parallel region's thread time went (ms)."""

    metric: float
    region_ms: float
    running_ms: float
    wait_ms: float
    blocked_ms: float
    imbalance_ms: float
    spin_share: float | None = None  # perf_record's share of samples in lock code; None: not measured

    @property
    def spinning_ms(self) -> float:
        return self.running_ms * (self.spin_share or 0.0)

    @property
    def useful_ms(self) -> float:
        return self.running_ms - self.spinning_ms


@dataclass(frozen=True)
class Stack:
    """One bar: N, the measured speedup with its interval, and the gap's parts (in threads)."""

    threads: float
    speedup: float
    low: float
    high: float
    parts: dict[str, float]  # CAUSES then UNEXPLAINED; speedup + sum(parts) == threads
    runs: int


def speedups(metrics: Sequence[float], one_thread: Sequence[float], better: str) -> list[float]:
    """Each run's speedup over the median of the one-thread runs: a throughput ratio when higher
    is better, a time ratio when lower is."""
    if better not in BETTER:
        raise ValueError(f"better must be one of {', '.join(BETTER)}, not {better!r}")
    base = float(np.median(one_thread))
    return [m / base if better == "higher" else base / m for m in metrics]


def stack(
    threads: float,
    runs: Sequence[RunTimes],
    one_thread: Sequence[RunTimes],
    better: str,
    confidence: float = 0.95,
) -> Stack:
    """The speedup stack of the N-thread `runs` against the `one_thread` runs of the same other variables.

    The base is the median speedup (with the median's interval); each cause is
    the mean over the runs of its thread time divided by the run's T_p; the
    parallelisation overhead is the runs' useful running time beyond the
    one-thread runs' useful share of the same work (that work takes S x T_p
    on one thread); the unexplained part is what is left of N - S."""
    s = summarise(np.asarray(speedups([r.metric for r in runs], [r.metric for r in one_thread], better)), confidence)
    speedup = float(s.median)
    low, high = float(s.median_ci_low), float(s.median_ci_high)
    if not (np.isfinite(low) and np.isfinite(high)):
        low = high = speedup
    useful_one = float(np.median([r.useful_ms / r.region_ms for r in one_thread]))
    per_run = [
        {
            "spinning": r.spinning_ms / r.region_ms,
            "blocked": r.blocked_ms / r.region_ms,
            "runnable": r.wait_ms / r.region_ms,
            "imbalance": r.imbalance_ms / r.region_ms,
            "overhead": r.useful_ms / r.region_ms - useful_one * speedup,
        }
        for r in runs
    ]
    parts = {c: float(np.mean([p[c] for p in per_run])) for c in CAUSES}
    parts[UNEXPLAINED] = threads - speedup - sum(parts.values())
    return Stack(threads, speedup, low, high, parts, len(runs))
