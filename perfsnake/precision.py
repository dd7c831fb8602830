"""Run until precise: more runs only for the records whose interval is still too wide.

Runs happen in rounds. After each round, every record whose interval of
the mean (relative half-width, on subsession means with the AR(1)
correction of `perfsnake.statistics.subsessions`) is wider than the target gets another
batch, sized as Pilot does on subsession means: with subsessions of size k
and the long-run variance s^2 of one subsession mean (its residual
autocorrelation included), m = (t * s / (target * mean))^2 subsessions,
i.e. k * m runs in all, capped by max_runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

import numpy as np

from perfsnake.statistics.intervals import t_quantile
from perfsnake.statistics.subsessions import mean_variance
from perfsnake.values import number

#: A round adds at most this many times the runs planned so far.
GROWTH = 2
#: From this many runs on, their autocorrelation is corrected for (earlier
#: than in summaries, MIN_CORRECTED: stopping on a chance-narrow interval of
#: correlated runs costs more than a few extra runs of independent ones).
MIN_CORRECTED = 10


def rel_half_width(values: list[float], confidence: float) -> float:
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or x.mean() == 0:
        return float("inf")
    if len(x) < 3:
        half = float(t_quantile(confidence, 1)) * float(x.std(ddof=1)) / math.sqrt(2)
        return half / abs(float(x.mean()))
    mv = mean_variance(x[None, :], min_corrected=MIN_CORRECTED)
    return float(t_quantile(confidence, mv.df[0]) * math.sqrt(mv.variance[0]) / abs(mv.mean[0]))


def runs_needed(values: list[float], target: float, confidence: float) -> int | Literal["met"]:
    """Total runs expected to reach the target relative half-width, or "met"
    when the runs so far already reach it."""
    x = np.asarray(values, dtype=float)
    if len(x) < 3 or x.mean() == 0:
        return len(x) + 2
    if rel_half_width(values, confidence) <= target:
        return "met"
    mv = mean_variance(x[None, :], min_corrected=MIN_CORRECTED)
    size, m, phi = int(mv.size[0]), int(mv.n_subsessions[0]), float(mv.phi[0])
    # Variance of one subsession mean in the long run: the sample variance's
    # AR(1) bias undone, the correlation with its neighbours included.
    long_run = mv.variance[0] * m / float(_short_run_factor(phi, m)) * (1 + phi) / (1 - phi)
    wanted = (target * abs(float(mv.mean[0]))) ** 2
    need = float(m)
    for _ in range(4):  # the t quantile at the degrees of freedom of the estimate
        df = max(need * (1 - phi) / (1 + phi) - 1, 1.0)
        need = float(t_quantile(confidence, df)) ** 2 * long_run / wanted
    return max(len(x) + 1, math.ceil(need * size))


def _short_run_factor(phi: float, m: int) -> float:
    """m * Var(mean of m) / Var(sample) for AR(1) (ar1_mean_factor), scalar."""
    from perfsnake.statistics.subsessions import ar1_mean_factor

    return float(ar1_mean_factor(phi, m))


def decide(
    values: Mapping[str, list[float]],
    planned: Mapping[str, list[int]],
    spec: Mapping[str, object],
    round_number: int,
) -> dict[str, object]:
    """The next round's plan: per record, the runs so far and the runs to add.
    `spec` is the campaign's `precision:`, its defaults filled from the schema."""
    target = number(spec["target_rel_ci"])
    confidence = number(spec["confidence"])
    max_runs = int(spec["max_runs"])  # type: ignore[call-overload]
    records: dict[str, dict[str, object]] = {}
    for path, runs in planned.items():
        ok = values.get(path, [])
        rel = rel_half_width(ok, confidence)
        met = rel <= target
        add: list[int] = []
        if not met and len(runs) < max_runs:
            needed = runs_needed(ok, target, confidence)
            wanted = 1 if needed == "met" else needed - len(ok)
            # At most GROWTH times the runs so far per round: an estimate from
            # few runs is noisy, and overshooting costs more than a round.
            count = min(max(wanted, 1), max_runs - len(runs), GROWTH * len(runs))
            add = list(range(max(runs) + 1, max(runs) + 1 + count))
        records[path] = {
            "runs": list(runs), "ok": len(ok), "rel_ci": rel if math.isfinite(rel) else None,
            "met": met, "add": add,
        }  # fmt: skip
    done = not any(r["add"] for r in records.values())
    return {"round": round_number, "target_rel_ci": target, "confidence": confidence, "done": done, "records": records}


def next_plan(decision: Mapping[str, object]) -> dict[str, list[int]]:
    records: Mapping[str, Mapping[str, list[int]]] = decision["records"]  # type: ignore[assignment]
    return {path: [*r["runs"], *r["add"]] for path, r in records.items()}
