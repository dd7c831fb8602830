"""Run until precise: more runs only for the records whose interval is still too wide.

Runs happen in rounds. After each round, every record whose interval of
the mean (relative half-width, on independent subsessions) is wider than the
target gets another batch, sized as Pilot does from the t-distribution:
n_needed = (t * s / (target * mean))^2, capped by max_runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from scipy import stats as sps

from perfsnake.stats import mean_interval


def rel_half_width(values: list[float], confidence: float) -> float:
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or x.mean() == 0:
        return float("inf")
    (lo, hi), *_ = mean_interval(x, confidence)
    return float((hi - lo) / 2 / abs(x.mean()))


def runs_needed(values: list[float], target: float, confidence: float) -> int:
    """Pilot's estimate of the total sample count reaching the target."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or x.mean() == 0:
        return len(x) + 2
    t = sps.t.ppf((1 + confidence) / 2, len(x) - 1)
    s = x.std(ddof=1)
    return max(len(x) + 1, math.ceil((t * s / (target * abs(x.mean()))) ** 2))


def decide(
    values: Mapping[str, list[float]],
    planned: Mapping[str, list[int]],
    spec: Mapping[str, object],
    round_number: int,
) -> dict[str, object]:
    """The next round's plan: per record, the runs so far and the runs to add."""
    target = float(spec["target_rel_ci"])  # type: ignore[arg-type]
    confidence = float(spec.get("confidence", 0.95))  # type: ignore[arg-type]
    max_runs = int(spec["max_runs"])  # type: ignore[call-overload]
    records: dict[str, dict[str, object]] = {}
    for path, runs in planned.items():
        ok = values.get(path, [])
        rel = rel_half_width(ok, confidence)
        met = rel <= target
        add: list[int] = []
        if not met and len(runs) < max_runs:
            wanted = runs_needed(ok, target, confidence) - len(ok)
            count = min(max(wanted, 1), max_runs - len(runs))
            add = list(range(max(runs) + 1, max(runs) + 1 + count))
        records[path] = {
            "runs": list(runs), "ok": len(ok), "rel_ci": rel if math.isfinite(rel) else None,
            "met": met, "add": add,
        }  # fmt: skip
    done = not any(r["add"] for r in records.values())
    return {"round": round_number, "target_rel_ci": target, "confidence": confidence, "done": done, "records": records}


def next_plan(decision: Mapping[str, object]) -> dict[str, list[int]]:
    records = decision["records"]
    return {path: [*r["runs"], *r["add"]] for path, r in records.items()}  # type: ignore[union-attr, index]
