"""Per-record summaries and pairwise comparisons of a campaign's results.

summary.csv: one row per record and metric (n, mean, median, std, cv, min,
max, interval of the mean on subsession means, BCa interval of the median,
lag-1 autocorrelation, subsession size, samples dropped as warm-up or
cool-down).

comparisons.csv: Welch's test for every pair of records that differ in
exactly one variable (or, with a baseline, each record against the record
that differs from it only by carrying the baseline value).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from perfsnake.escape import value_text
from perfsnake.stats import summarise, welch_on_subsessions

DEFAULTS = {"confidence": 0.95, "alpha": 0.05, "statistic": "mean", "autocorrelation_threshold": 0.1, "baseline": None, "warmup": "changepoint"}


def options(info: Mapping[str, object]) -> dict[str, object]:
    return {**DEFAULTS, **dict(info.get("statistics") or {})}  # type: ignore[call-overload]


def _key(result: Mapping[str, object], variables: list[str]) -> tuple[str, ...]:
    values = result["variables"]
    return tuple(value_text(values[v]) for v in variables)  # type: ignore[index]


def numeric_metrics(results: list[dict]) -> list[str]:
    """Numeric metrics present in the results, and the run's wall time."""
    names: list[str] = ["wall_s"] if results else []
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
        key = _key(res, variables)
        out.setdefault(key, [])
        if res["status"] == "ok" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out[key].append(float(value))
    return {k: np.asarray(v) for k, v in out.items()}


def summary_rows(results: list[dict], info: Mapping[str, object]) -> list[dict[str, object]]:
    opts = options(info)
    variables = list(info["variables"])  # type: ignore[call-overload]
    dropped: dict[tuple[str, ...], int] = {}
    reached: dict[tuple[str, ...], dict[str, object]] = {}
    for res in results:
        if res.get("precision"):
            reached[_key(res, variables)] = res["precision"]
        steady = res.get("steady") or {}
        dropped[_key(res, variables)] = dropped.get(_key(res, variables), 0) + int(steady.get("removed", 0))
    rows = []
    for metric in numeric_metrics(results):
        for key, x in samples_by_record(results, variables, metric).items():
            s = summarise(x, float(opts["confidence"]), float(opts["autocorrelation_threshold"]))  # type: ignore[arg-type]
            row = {**dict(zip(variables, key)), "metric": metric, **s.as_dict(), "warmup_samples_dropped": dropped.get(key, 0)}
            if key in reached:
                row["precision_target_met"] = reached[key]["met"]
                row["precision_rel_ci"] = reached[key]["rel_ci"]
                row["precision_runs_ok"] = reached[key]["ok"]
            rows.append(row)
    return rows


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


def comparison_rows(results: list[dict], info: Mapping[str, object]) -> list[dict[str, object]]:
    opts = options(info)
    variables = list(info["variables"])  # type: ignore[call-overload]
    rows = []
    for metric in numeric_metrics(results):
        samples = samples_by_record(results, variables, metric)
        keys = [k for k, x in samples.items() if len(x) >= 2]
        for a, b, var in pairs(keys, variables, opts["baseline"], info.get("values")):  # type: ignore[arg-type]
            comp, size = welch_on_subsessions(samples[a], samples[b], float(opts["confidence"]), float(opts["alpha"]), float(opts["autocorrelation_threshold"]))  # type: ignore[arg-type]
            fixed = {v: a[j] for j, v in enumerate(variables) if v != var}
            rows.append({
                "metric": metric, "variable": var, "a": a[variables.index(var)], "b": b[variables.index(var)],
                "fixed": ", ".join(f"{k}={v}" for k, v in fixed.items()),
                "n_a": len(samples[a]), "n_b": len(samples[b]), "subsession_size": size,
                **comp.__dict__, "alpha": opts["alpha"], "confidence": opts["confidence"],
            })  # fmt: skip
    return rows


def write_csv(path: Path, rows: list[dict[str, object]], first: list[str]) -> None:
    columns = list(first)
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)


def write_significant(path: Path, rows: list[dict[str, object]], campaign: str) -> None:
    """A short Markdown list of the significant differences, largest first."""
    sig = sorted((r for r in rows if r["significant"]), key=lambda r: -abs(float(r["relative_difference"]) if r["relative_difference"] == r["relative_difference"] else 0))  # type: ignore[arg-type]
    lines = [f"# {campaign}: significant differences", ""]
    if not rows:
        lines.append("No pair of records could be compared (each needs at least two ok runs).")
    elif not sig:
        lines.append(f"None of the {len(rows)} comparisons is significant.")
    for r in sig:
        lines.append(
            f"- {r['metric']}: {r['variable']} {r['b']} vs {r['a']} ({r['fixed'] or 'no other variable'}): "
            f"{float(r['relative_difference']):+.2%}, p = {float(r['p_value']):.3g}, "  # type: ignore[arg-type]
            f"difference CI [{float(r['diff_ci_low']):.4g}, {float(r['diff_ci_high']):.4g}]"  # type: ignore[arg-type]
        )
    path.write_text("\n".join(lines) + "\n")


def analyse(results: list[dict], info: Mapping[str, object], summary: Path, comparisons: Path, significant: Path) -> None:
    variables = list(info["variables"])  # type: ignore[call-overload]
    write_csv(summary, summary_rows(results, info), [*variables, "metric"])
    comps = comparison_rows(results, info)
    write_csv(comparisons, comps, ["metric", "variable", "a", "b", "fixed"])
    write_significant(significant, comps, str(info["name"]))


def overhead_rows(main: list[dict], controls: Mapping[str, list[dict]], info: Mapping[str, object]) -> list[dict[str, object]]:
    """The observer effect (Pilot III-C): each instrumented variant against the
    uninstrumented control, per record and metric, with Welch's test.

    `controls` maps a variant (`control`, `only-<instrument>`) to its results;
    `all` compares the campaign itself with `control`.
    """
    opts = options(info)
    variables = list(info["variables"])  # type: ignore[call-overload]
    base = controls.get("control", [])
    variants = [("all", main)] + [(v.removeprefix("only-"), res) for v, res in controls.items() if v != "control"]
    rows = []
    for label, results in variants:
        common = [m for m in numeric_metrics(results) if m in numeric_metrics(base)]
        for metric in common:
            measured = samples_by_record(results, variables, metric)
            reference = samples_by_record(base, variables, metric)
            for key, x in measured.items():
                y = reference.get(key, np.asarray([]))
                if len(x) < 2 or len(y) < 2:
                    continue
                comp, size = welch_on_subsessions(y, x, float(opts["confidence"]), float(opts["alpha"]), float(opts["autocorrelation_threshold"]))  # type: ignore[arg-type]
                rows.append({
                    **dict(zip(variables, key)), "instruments": label, "metric": metric,
                    "instrumented_mean": comp.mean_b, "control_mean": comp.mean_a,
                    "overhead": comp.relative_difference, "difference": comp.difference,
                    "diff_ci_low": comp.diff_ci_low, "diff_ci_high": comp.diff_ci_high,
                    "welch_t": comp.welch_t, "df": comp.df, "p_value": comp.p_value,
                    "significant": comp.significant, "n_instrumented": len(x), "n_control": len(y),
                })  # fmt: skip
    return rows
