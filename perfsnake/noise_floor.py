"""Layout noise floor: how far apart two builds of the same source can measure.

A change of a few per cent can come from where the linker put the code and
how large the environment was, not from the change under study (Mytkowicz
et al., "Producing wrong data without doing anything obviously wrong!",
ASPLOS 2009; Curtsinger and Berger, "STABILIZER", ASPLOS 2013). The
`noise_floor` campaign key builds the same source several times with a
randomised function order and runs each build under randomised environment
padding; perfsnake.statistics.noise_floor turns those runs into a floor, and
this module reads the floors back (noise_floor.csv) and marks the
comparisons and gates whose difference lies within them.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path

from perfsnake.escape import record_path, value_text
from perfsnake.statistics.records import stat_column
from perfsnake.values import number


def within(relative_difference: float, *floors: float) -> bool:
    """A difference that lies within the floor of every side (each floor known)."""
    known = [f for f in floors if f == f]
    return bool(known) and len(known) == len(floors) and all(abs(relative_difference) <= f for f in known)


def read(path: Path, variables: list[str]) -> dict[tuple[str, str], float]:
    """noise_floor.csv as (record path, metric) -> floor (relative)."""
    metric, floor = stat_column("metric", variables), stat_column("floor", variables)
    with path.open() as f:
        return {
            (record_path({v: row[v] for v in variables}, variables), row[metric]): float(row[floor])
            for row in csv.DictReader(f)
        }


WITHIN = "within layout noise"


def mark_comparisons(rows: list[dict[str, object]], floors: Mapping[tuple[str, str], float]) -> None:
    """Each comparison gets both sides' floors and, where both are known,
    whether its difference lies within them."""
    for row in rows:
        metric = str(row["metric"])
        a, b = floors.get((str(row["record_a"]), metric)), floors.get((str(row["record_b"]), metric))
        row["floor_a"], row["floor_b"] = ("" if a is None else a), ("" if b is None else b)
        if a is not None and b is not None:
            inside = within(number(row["relative_difference"]), a, b)
            row["layout_noise"] = WITHIN if inside else "beyond layout noise"


def mark_gates(
    verdicts: list[dict[str, object]], floors: Mapping[tuple[str, str], float], variables: list[str]
) -> None:
    """A baseline gate fails only when its difference also exceeds the
    record's floor; within it, the verdict is inconclusive and says why."""
    # A gate's fields named like a variable are prefixed (stat_column); the variables keep their names.
    verdict, difference, baseline_mean, metric, reason = (
        stat_column(c, variables) for c in ("verdict", "difference", "baseline_mean", "metric", "reason")
    )
    for g in verdicts:
        if g[verdict] != "fail" or difference not in g or not g.get(baseline_mean):
            continue
        found = floors.get((record_path({v: value_text(g[v]) for v in variables}, variables), str(g[metric])))
        relative = number(g[difference]) / number(g[baseline_mean])
        if found is not None and within(relative, found):
            g[verdict] = "inconclusive"
            g[reason] = f"{g[reason]}, but {relative:+.2%} is {WITHIN} (floor {found:.2%})"
