"""Timing helpers the benchmarks share (standard library only: also run
by other tools' Pythons, as bench/otava_runner.py is)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_medians(works: dict[str, Callable[[], object]], repetitions: int) -> dict[str, float]:
    """Median seconds of each piece of work, the pieces taking turns (after
    one warm-up call each), so a load that drifts on a shared machine weighs
    on all of them alike rather than on whichever ran first."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for work in works.values():
        work()
    for _ in range(repetitions):
        for name, work in works.items():
            start = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}
