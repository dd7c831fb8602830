"""Campaign plots with Altair, saved offline as SVG and PNG (vl-convert)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import re

import altair as alt
import pandas as pd
import numpy as np

from perfsnake.escape import value_text
from perfsnake.stats import summarise as summarise_samples

CONFIDENCE = 0.95


def summarise(frame: pd.DataFrame, keys: list[str], y: str, confidence: float = CONFIDENCE, statistic: str = "mean") -> pd.DataFrame:
    """The statistic of `y` over repetitions and its interval, per combination of keys.

    Same method as summary.csv: the mean's interval on independent
    subsessions, the median's by BCa bootstrap. With one run, no bar.
    """
    rows = []
    ordered = frame.sort_values("start") if "start" in frame else frame
    for key, group in ordered.groupby(keys, dropna=False, sort=False):
        s = summarise_samples(group[y].to_numpy(dtype=float), confidence)
        centre = s.mean if statistic == "mean" else s.median
        lo, hi = (s.mean_ci_low, s.mean_ci_high) if statistic == "mean" else (s.median_ci_low, s.median_ci_high)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            lo = hi = centre
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,))), y: centre, "lo": lo, "hi": hi, "count": s.n})
    return pd.DataFrame(rows)


def apply_pretty(frame: pd.DataFrame, pretty: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
    frame = frame.copy()
    for var, labels in pretty.items():
        if var in frame:
            frame[var] = frame[var].map(lambda v, lab=labels: lab.get(value_text(v), v))
    return frame


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _safe(name: str) -> str:
    """A field name Vega-Lite takes literally (dots would mean nesting)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def chart(frame: pd.DataFrame, spec: Mapping[str, object], pretty: Mapping[str, Mapping[str, str]], confidence: float = CONFIDENCE, statistic: str = "mean") -> alt.Chart:
    kind = spec["kind"]
    names = {str(spec[k]): _safe(str(spec[k])) for k in ("x", "y", "color", "facet") if spec.get(k)}
    titles = {safe: name for name, safe in names.items()}
    frame = frame.rename(columns=names)
    pretty = {names.get(k, k): v for k, v in pretty.items()}
    x, y = names[str(spec["x"])], names[str(spec["y"])]
    color = names.get(str(spec.get("color"))) if spec.get("color") else None
    facet = names.get(str(spec.get("facet"))) if spec.get("facet") else None
    ok = frame[frame["status"] == "ok"].dropna(subset=[y])
    numeric_x = _is_numeric(ok[x]) if len(ok) else False
    ok = apply_pretty(ok, pretty)
    keys = [k for k in (x, color, facet) if k]
    if kind == "line" and numeric_x:
        x_enc = alt.X(f"{x}:Q", title=titles[x], scale=alt.Scale(type="log" if spec.get("log_x") else "linear"))
    else:
        x_enc = alt.X(f"{x}:O", title=titles[x], sort="ascending")
    y_scale = alt.Scale(type="log" if spec.get("log_y") else "linear", zero=kind == "bar")
    y_title = f"{titles[y]} ({statistic}, {confidence:.0%} CI)" if kind in ("line", "bar") else titles[y]
    enc: dict[str, object] = {"x": x_enc}
    if color:
        enc["color"] = alt.Color(f"{color}:N", title=titles[color])
    if kind in ("line", "bar"):
        summary = summarise(ok, keys, y, confidence, statistic)
        base = alt.Chart(summary)
        marks = base.mark_line(point=True) if kind == "line" else base.mark_bar()
        if kind == "bar" and color:
            enc["xOffset"] = alt.XOffset(f"{color}:N")
        layer = marks.encode(y=alt.Y(f"{y}:Q", title=y_title, scale=y_scale), **enc)
        bars = base.mark_errorbar(ticks=True).encode(
            y=alt.Y("lo:Q", title=y_title, scale=y_scale), y2="hi:Q", **{k: v for k, v in enc.items() if k != "color"},
            **({"color": enc["color"]} if color and kind == "line" else {}),
        )
        result = alt.layer(layer, bars, data=summary)
    elif kind == "strip":
        result = alt.Chart(ok).mark_circle(size=40, opacity=0.7).encode(
            y=alt.Y(f"{y}:Q", title=y_title, scale=y_scale), xOffset=alt.XOffset("jitter:Q"), **enc
        ).transform_calculate(jitter="random()")
    else:
        result = alt.Chart(ok).mark_boxplot(extent="min-max").encode(y=alt.Y(f"{y}:Q", title=y_title, scale=y_scale), **enc)
    result = result.properties(width=360, height=260)
    if facet:
        result = result.facet(column=alt.Column(f"{facet}:N", title=titles[facet]))
    title = str(spec.get("title") or f"{titles[y]} by {titles[x]}")
    return result.properties(title=title)


def draw(
    rows: list[dict],
    spec: Mapping[str, object],
    pretty: Mapping[str, Mapping[str, str]],
    svg: Path,
    png: Path,
    confidence: float = CONFIDENCE,
    statistic: str = "mean",
) -> None:
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=[spec["x"], spec["y"], "status"])
    figure = chart(frame, spec, pretty, confidence, statistic)
    figure.save(str(svg))
    figure.save(str(png), scale_factor=2)
