"""Why it changed: which significant differences to profile, and what a pair
of profiles says.

The statistics pick the pairs: the `top` significant comparisons (after the
campaign's correction) with the largest relative difference, one per pair of
records. A profile is perf's folded stacks of a record's profiled runs; the
table ranks the functions by how much their own samples (where they are the
leaf) per run changed from side A to side B, the quantity a differential
flame graph colours (red: grew in B, blue: shrank), and gives their share of
each side's samples too (a function whose time did not change still loses
share when another one grows).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from perfsnake.values import number

#: what a differential flame graph's colours mean
GREW, SHRANK = "red (grew)", "blue (shrank)"


def pick(rows: Iterable[Mapping[str, object]], top: int) -> list[dict[str, object]]:
    """The significant comparisons to profile, largest relative difference
    first, each pair of records once (its largest metric)."""

    def size(row: Mapping[str, object]) -> float:
        value = number(row.get("relative_difference") or 0.0)
        return abs(value) if math.isfinite(value) else 0.0

    significant = [r for r in rows if str(r.get("significant")) in ("True", "true", "1")]
    out: list[dict[str, object]] = []
    seen: set[frozenset[str]] = set()
    for row in sorted(significant, key=size, reverse=True):
        pair = frozenset((str(row["record_a"]), str(row["record_b"])))
        if pair in seen:
            continue
        seen.add(pair)
        out.append(dict(row))
        if len(out) == top:
            break
    return out


def self_counts(folded: str) -> Counter[str]:
    """Samples per leaf function of folded stacks (`a;b;c 12` counts 12 for c)."""
    counts: Counter[str] = Counter()
    for line in folded.splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack:
            continue
        try:
            n = int(float(number))
        except ValueError:
            continue
        counts[stack.rsplit(";", 1)[-1]] += n
    return counts


def symbol_table(
    folded_a: str, folded_b: str, limit: int = 15, runs_a: int = 1, runs_b: int = 1
) -> list[dict[str, object]]:
    """The functions whose own samples per run changed most from A to B."""
    a, b = self_counts(folded_a), self_counts(folded_b)
    total_a, total_b = sum(a.values()), sum(b.values())
    if not total_a or not total_b:
        return []
    rows = []
    for symbol in set(a) | set(b):
        per_a, per_b = a[symbol] / runs_a, b[symbol] / runs_b
        rows.append({"symbol": symbol, "share_a": a[symbol] / total_a, "share_b": b[symbol] / total_b,
                     "per_run_a": per_a, "per_run_b": per_b, "change_per_run": per_b - per_a})  # fmt: skip
    rows.sort(key=lambda r: (-abs(number(r["change_per_run"])), str(r["symbol"])))
    for row in rows:
        change = number(row["change_per_run"])
        row["delta"] = number(row["share_b"]) - number(row["share_a"])
        row["colour"] = GREW if change > 0 else SHRANK if change < 0 else ""
    return rows[:limit]
