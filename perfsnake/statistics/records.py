"""A campaign's results as the statistics see them: its `statistics:`
options, each record's samples of a metric in run order, the pairs of
records one variable apart that comparisons are made on, and the tables
written back (summary.csv, comparisons.csv, noise_floor.csv, ...).

Every stage that computes statistics over a campaign (analysis, floor,
precision, regression) starts from these, so a record's samples and a
campaign's pairs are the same wherever they are used.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Collection, Mapping
from pathlib import Path

import numpy as np

from perfsnake.escape import value_text
from perfsnake.schema import schema_defaults

#: Optional statistics keys without a default; every other default is the
#: schema's (config/schemas/campaign.schema.yaml), written there once.
UNSET = {"baseline": None, "test_variables": None, "metrics": None}


#: What a statistics column named like one of the campaign's variables (`n`,
#: `mean`, `label`, ...) is prefixed with in the tables the statistics write:
#: a variable's name is an identifier, never dotted, so neither hides the other.
STAT_PREFIX = "stat."


def stat_column(name: str, variables: Collection[str]) -> str:
    """The column of the statistics' field `name` in a table beside `variables`."""
    return STAT_PREFIX + name if name in variables else name


def record_row(record: Mapping[str, object], fields: Mapping[str, object]) -> dict[str, object]:
    """A row of a statistics table: the record's variables, then `fields`, each
    in its stat_column (a variable `n` keeps its values beside the statistics' `n`)."""
    return {**record, **{stat_column(k, record): v for k, v in fields.items()}}


def options(info: Mapping[str, object]) -> dict[str, object]:
    return {**UNSET, **schema_defaults("statistics"), **dict(info.get("statistics") or {})}  # type: ignore[call-overload]


def record_key(result: Mapping[str, object], variables: list[str]) -> tuple[str, ...]:
    """The record of a run's result: its variables' values as text, in `variables` order."""
    values = result["variables"]
    return tuple(value_text(values[v]) for v in variables)  # type: ignore[index]


def numeric_metrics(results: list[dict]) -> list[str]:
    """Numeric metrics present in the results, and the run's wall time (which
    imported results other than hyperfine's do not have)."""
    names: list[str] = ["wall_s"] if any(r.get("wall_s") is not None for r in results) else []
    for res in results:
        for name, value in res["metrics"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and name not in names:
                names.append(name)
    return names


def samples_by_record(results: list[dict], variables: list[str], metric: str) -> dict[tuple[str, ...], np.ndarray]:
    """Per record, the metric of its ok runs in execution order."""
    out: dict[tuple[str, ...], list[float]] = {}
    for res in sorted(results, key=lambda r: r["start_epoch"]):
        value = res["wall_s"] if metric == "wall_s" else res["metrics"].get(metric)
        key = record_key(res, variables)
        out.setdefault(key, [])
        if (
            res["status"] == "ok"
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            out[key].append(float(value))
    return {k: np.asarray(v) for k, v in out.items()}


def pairs(
    keys: list[tuple[str, ...]],
    variables: list[str],
    baseline: Mapping[str, object] | None,
    value_order: Mapping[str, list[str]] | None = None,
) -> list[tuple[tuple[str, ...], tuple[str, ...], str]]:
    """(a, b, variable) for records differing in exactly that one variable.

    With a baseline {var: value}, a is always the record carrying the
    baseline value and b one that differs from it only in that variable.
    """
    out = []
    for i, first in enumerate(keys):
        for second in keys[i + 1 :]:
            a, b = first, second
            diff = [j for j in range(len(variables)) if a[j] != b[j]]
            if len(diff) != 1:
                continue
            var = variables[diff[0]]
            order = (value_order or {}).get(var, [])
            if a[diff[0]] in order and b[diff[0]] in order and order.index(a[diff[0]]) > order.index(b[diff[0]]):
                a, b = b, a  # a is the value listed first in the campaign
            if baseline:
                if var not in baseline:
                    continue
                base = value_text(baseline[var])
                if b[diff[0]] == base:
                    a, b = b, a
                if a[diff[0]] != base:
                    continue
            out.append((a, b, var))
    return out


def write_csv(path: Path, rows: list[dict[str, object]], first: list[str]) -> None:
    """The rows as CSV: the `first` columns, then every other key in the order rows bring it."""
    columns = list(first)
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
