"""The regression view (rules/analysis.smk, rule regression): a metric along
a campaign's commit range, the steps in it, and the comparisons of adjacent
versions.

Steps are change points of the runs taken in version order (binary
segmentation, least squares: perfsnake.statistics.changepoints, on the series
scaled by its pooled within-version noise, with a BIC-like penalty), moved to
the nearest version boundary, and kept only when the runs of the segment
before and after differ by Welch's test on subsessions, Holm-corrected over
the candidate steps: a step is where the metric changed, with the interval of
the change.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd

from perfsnake.contract import CampaignInfo
from perfsnake.escape import value_text
from perfsnake.stages.plots import INK, SI_AXIS
from perfsnake.statistics.changepoints import find_steps
from perfsnake.statistics.records import samples_by_record
from perfsnake.statistics.summaries import summarise
from perfsnake.statistics.tests import adjust

STEP_COLUMNS = ["metric", "series", "version", "previous", "mean_before", "mean_after", "relative_change",
                "diff_ci_low", "diff_ci_high", "p_value", "p_adjusted", "significant"]  # fmt: skip


def series_of(results: list[dict], info: CampaignInfo, metric: str) -> dict[str, list[tuple[str, np.ndarray]]]:
    """Per combination of the other variables ("series"), the versions in range
    order with their ok runs."""
    variables = list(info.variables)
    version = info.versions[0]
    order = [value_text(v) for v in info.values[version]]
    others = [v for v in variables if v != version]
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, x in samples_by_record(results, variables, metric).items():
        values = dict(zip(variables, key, strict=True))
        label = ", ".join(f"{v}={values[v]}" for v in others if len(info.values[v]) > 1) or "all"
        out.setdefault(label, {})[values[version]] = x
    return {label: [(v, runs[v]) for v in order if v in runs] for label, runs in out.items()}


def steps_table(results: list[dict], info: CampaignInfo) -> list[dict[str, object]]:
    stats = info.statistics
    rows: list[dict[str, object]] = []
    for metric in info.regression_metrics:
        for label, versions in series_of(results, info, metric).items():
            rows += [{"metric": metric, "series": label, **s} for s in find_steps(versions, stats.as_dict())]
    for row, p_adj in zip(rows, adjust([float(r["p_value"]) for r in rows], "holm"), strict=True):
        row["p_adjusted"] = p_adj
        row["significant"] = bool(p_adj < float(stats.alpha))
    return rows


def write_steps(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=STEP_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def draw(results: list[dict], info: CampaignInfo, metric: str, steps: list[dict[str, object]],
         outputs: Sequence[Path], unit: str | None = None) -> None:  # fmt: skip
    """The metric per version (range order) with its interval, one line per series; steps as dashed rules."""
    stats = info.statistics
    rows = []
    order: list[str] = []
    for label, versions in series_of(results, info, metric).items():
        for version, x in versions:
            if version not in order:
                order.append(version)
            if not len(x):
                continue
            s = summarise(x, float(stats.confidence), float(stats.autocorrelation_threshold))
            rows.append(
                {
                    "version": version,
                    "series": label,
                    "value": s.mean,
                    "lo": s.mean_ci_low,
                    "hi": s.mean_ci_high,
                    "n": s.n,
                }
            )
    table = pd.DataFrame(rows, columns=["version", "series", "value", "lo", "hi", "n"])
    xenc = alt.X("version:N", sort=order, title=info.versions[0], axis=alt.Axis(labelAngle=-40))
    title = f"{metric} ({unit})" if unit else metric
    colour = alt.Color("series:N", title=None) if table["series"].nunique() > 1 else alt.value("#4c78a8")
    y = alt.Y("value:Q", title=title, axis=SI_AXIS)
    line = alt.Chart(table).mark_line(point=True).encode(x=xenc, y=y, color=colour)
    spread = table[table["hi"] > table["lo"]]  # a version whose runs all agree has no bar to draw
    bars = alt.Chart(spread).mark_rule(color=INK).encode(x=xenc, y=alt.Y("lo:Q", title=title), y2="hi:Q")
    caps = [
        alt.Chart(spread).mark_tick(orient="horizontal", size=8, thickness=1.2, color=INK).encode(x=xenc, y=f"{end}:Q")
        for end in ("lo", "hi")
    ]
    layers: list[alt.Chart] = [line, bars, *caps]
    marked = pd.DataFrame([{"version": s["version"], "label": f"{float(s['relative_change']):+.1%}"}
                           for s in steps if s["metric"] == metric and s["significant"]], columns=["version", "label"])  # fmt: skip
    if len(marked):
        layers.append(alt.Chart(marked).mark_rule(strokeDash=[4, 3], color="#d62728").encode(x=xenc))
        layers.append(alt.Chart(marked).mark_text(align="left", dx=4, dy=-4, color="#d62728").encode(
            x=xenc, y=alt.value(8), text="label:N"))  # fmt: skip
    chart = alt.layer(*layers).properties(
        width=max(240, 28 * len(order)), height=180,
        title=alt.TitleParams(f"{metric} along {info.versions[0]}", subtitle=f"mean, {float(stats.confidence):.0%} CI; dashed: steps"),
    )  # fmt: skip
    for out in outputs:
        chart.save(str(out), scale_factor=2) if Path(out).suffix == ".png" else chart.save(str(out))
