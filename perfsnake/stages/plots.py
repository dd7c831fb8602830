"""Campaign figures with Altair, saved offline as SVG, PNG and PDF (vl-convert).

A plot entry of the campaign (see config/README.md, "plots") becomes one
Vega-Lite specification: axis titles from display names and units, the
campaign's category order, the statistic with its interval (error bars
dodged by series), seeded jitter for strip plots, row/column facets and one
panel per metric when `y` lists several.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from perfsnake.contract import CampaignInfo, Statistics
from perfsnake.escape import value_text
from perfsnake.statistics import speedup as speedup_stacks
from perfsnake.statistics.modes import two_modes
from perfsnake.statistics.summaries import summarise as summarise_samples

WIDTH, HEIGHT = 240, 160  # one panel; about a column of a two-column paper
JITTER_SEED = 20240601  # strip plots: the same data always gives the same file
INK = "#222222"  # error bars and medians: visible on any fill
PRINT_GREYS = ["#000000", "#707070", "#b0b0b0", "#404040", "#909090", "#202020"]
SI_AXIS = alt.Axis(labelExpr="datum.value == 0 ? '0' : format(datum.value, '~s')")
METRIC = "metric__"  # field holding the metric of a panel when y lists several
VALUE = "value__"


def summarise(frame: pd.DataFrame, keys: list[str], y: str, confidence: float, statistic: str) -> pd.DataFrame:
    """The statistic of `y` over repetitions and its interval, per combination of keys.

    Same method as summary.csv (perfsnake.statistics.summaries.summarise): the mean's
    interval on independent subsessions, the median's the exact
    order-statistic one. With one run, no bar.
    """
    rows = []
    ordered = frame.sort_values("start") if "start" in frame else frame
    for key, group in ordered.groupby(keys, dropna=False, sort=False):
        s = summarise_samples(group[y].to_numpy(dtype=float), confidence)
        centre = s.mean if statistic == "mean" else s.median
        lo, hi = (s.mean_ci_low, s.mean_ci_high) if statistic == "mean" else (s.median_ci_low, s.median_ci_high)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            lo = hi = centre
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                y: centre,
                "lo": lo,
                "hi": hi,
                "count": s.n,
            }
        )
    return pd.DataFrame(rows, columns=[*keys, y, "lo", "hi", "count"])


def apply_pretty(frame: pd.DataFrame, pretty: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
    frame = frame.copy()
    for var, labels in pretty.items():
        if var in frame:
            frame[var] = frame[var].map(lambda v, lab=labels: lab.get(value_text(v), v))
    return frame


def parse_units(metadata: Mapping[str, object] | None) -> dict[str, str]:
    """`metric_units` of the rows' metadata ("a=ms, b=ops/s") as a mapping."""
    text = str((metadata or {}).get("metric_units") or "")
    units = {}
    for part in text.split(", "):
        name, sep, unit = part.partition("=")
        if sep and name.strip() and unit.strip():
            units[name.strip()] = unit.strip()
    return units


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _safe(name: str) -> str:
    """A field name Vega-Lite takes literally (dots would mean nesting)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _quoted(text: str) -> str:
    """A Vega expression string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def metrics_of(spec: Mapping[str, object]) -> list[str]:
    """The plot's metrics: `y` (a name or a list) then `metrics`."""
    y = spec.get("y")
    names = [str(m) for m in (y if isinstance(y, list) else [y] if y else [])]
    names += [str(m) for m in spec.get("metrics") or [] if str(m) not in names]  # type: ignore[attr-defined]
    return names


def log_base(option: object) -> int | None:
    """`log_x: true` is base 10, `log_x: 2` base 2, false/absent no log."""
    if option is True:
        return 10
    if isinstance(option, (int, float)) and not isinstance(option, bool) and option > 1:
        return int(option)
    return None


class Labels:
    """Display names: the plot's `labels:`, then the name; units appended."""

    def __init__(self, labels: Mapping[str, str] | None, units: Mapping[str, str] | None):
        self.labels = dict(labels or {})
        self.units = dict(units or {})

    def name(self, name: str) -> str:
        return str(self.labels.get(name, name))

    def axis(self, name: str) -> str:
        unit = self.units.get(name)
        return f"{self.name(name)} ({unit})" if unit else self.name(name)


def category_order(
    var: str, observed: pd.Series, values: Mapping[str, Sequence[str]] | None, pretty: Mapping[str, Mapping[str, str]]
) -> list[object]:
    """The labels of `var` in the campaign's order (then any others, as seen)."""
    labels = pretty.get(var, {})
    order: list[object] = [labels.get(v, v) for v in (values or {}).get(var, [])]
    seen = list(dict.fromkeys(observed.dropna().tolist()))
    with contextlib.suppress(TypeError, ValueError):
        seen = sorted(seen, key=lambda v: float(v))
    known = {value_text(o) for o in order}
    return [*order, *(v for v in seen if value_text(v) not in known)] if order else seen


def _tick_angle(order: Sequence[object], width: float) -> int:
    """Horizontal tick labels when they fit in their band, else slanted."""
    longest = max((len(str(v)) for v in order), default=1)
    return 0 if longest * 6.5 <= width / max(len(order), 1) else -40


class Plot:
    """One campaign plot, resolved: fields, orders, labels, sizes."""

    def __init__(
        self,
        frame: pd.DataFrame,
        spec: Mapping[str, object],
        pretty: Mapping[str, Mapping[str, str]],
        confidence: float,
        statistic: str,
        values: Mapping[str, Sequence[str]] | None,
        units: Mapping[str, str] | None,
    ):
        self.spec, self.kind = spec, str(spec["kind"])
        self.bimodal = 0
        self.confidence, self.statistic = confidence, statistic
        self.label = Labels(spec.get("labels"), units)
        self.metrics = metrics_of(spec)
        roles = {
            "x": spec.get("x"),
            "color": spec.get("color"),
            "row": spec.get("row"),
            "column": spec.get("column") or spec.get("facet"),
        }
        self.names = {str(v): _safe(str(v)) for v in roles.values() if v}
        self.field = {role: self.names[str(v)] for role, v in roles.items() if v}
        self.title_of = {safe: name for name, safe in self.names.items()}
        self.width = int(spec.get("width") or WIDTH)  # type: ignore[call-overload]
        self.height = int(spec.get("height") or HEIGHT)  # type: ignore[call-overload]
        self.print_style = spec.get("style") == "print"
        self.wide = frame[frame["status"] == "ok"] if "status" in frame else frame
        self.frame = self._long(frame, pretty)
        safe_pretty = {self.names.get(k, k): v for k, v in pretty.items()}
        safe_values = {self.names.get(k, k): v for k, v in (values or {}).items()}
        raw = self.frame
        self.numeric_x = (
            self.kind == "line"
            and len(raw) > 0
            and _is_numeric(raw[self.field["x"]])
            and self.title_of[self.field["x"]] not in pretty
        )
        self.frame = raw.copy()
        for f in dict.fromkeys(self.field.values()):
            if f in raw and not (f == self.field["x"] and self.numeric_x):
                labels = safe_pretty.get(f, {})
                self.frame[f] = raw[f].map(lambda v, lab=labels: lab.get(value_text(v), value_text(v)) if v == v else v)
        self.order = {
            f: category_order(f, self.frame[f], safe_values, safe_pretty)
            for f in self.field.values()
            if f in self.frame
        }
        self.order[METRIC] = [self.label.axis(m) for m in self.metrics]
        self.positive = bool(len(self.frame)) and float(self.frame[VALUE].min()) >= 0

    def _long(self, frame: pd.DataFrame, pretty: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
        """Ok runs, one row per (run, metric): the metric's axis title and value."""
        ok = frame[frame["status"] == "ok"] if "status" in frame else frame
        parts = []
        for m in self.metrics:
            if m not in ok:
                continue
            part = ok.rename(columns=self.names).copy()
            part[METRIC], part[VALUE] = self.label.axis(m), pd.to_numeric(ok[m], errors="coerce")
            parts.append(part.dropna(subset=[VALUE]))
        columns = [*self.names.values(), METRIC, VALUE]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)

    # ---- pieces ---------------------------------------------------------------
    @property
    def keys(self) -> list[str]:
        return [f for f in dict.fromkeys(self.field.values())] + [METRIC]

    @property
    def many_metrics(self) -> bool:
        """Several metrics, one panel each (a breakdown stacks its metrics in one panel instead)."""
        return len(self.metrics) > 1 and self.kind not in ("breakdown", "speedup_stack")

    def y_title(self) -> str | None:
        return None if self.many_metrics else self.label.axis(self.metrics[0])

    def y_scale(self, lows: pd.Series, highs: pd.Series) -> alt.Scale:
        base = log_base(self.spec.get("log_y"))
        if base:
            positive = pd.concat([lows, highs])
            positive = positive[positive > 0]
            if len(positive) and not self.many_metrics:
                lo, hi = float(positive.min()), float(positive.max())
                return alt.Scale(type="log", base=base, domain=[lo / 1.15, hi * 1.15], nice=False)
            return alt.Scale(type="log", base=base)
        return alt.Scale(zero=self.kind == "bar", nice=True)

    def x_encoding(self) -> alt.X:
        x = self.field["x"]
        title = self.label.name(self.title_of[x])
        if self.numeric_x:
            ticks = sorted(float(v) for v in self.frame[x].dropna().unique())
            base = log_base(self.spec.get("log_x"))
            scale = alt.Scale(
                type="log" if base else "linear", base=base or 10, domain=[ticks[0], ticks[-1]] if ticks else alt.Undefined,
                nice=False, zero=False, padding=12,
            )  # fmt: skip
            ticks_ = [int(t) if float(t).is_integer() else t for t in ticks]
            # 100000 -> 100k, but 1024 stays 1,024 (not 1.024k)
            label = "datum.value >= 10000 && datum.value % 1000 == 0 ? format(datum.value, '~s') : format(datum.value, ',~r')"
            return alt.X("xpos:Q", title=title, scale=scale, axis=alt.Axis(values=ticks_, labelExpr=label, grid=False))
        order = self.order.get(x, [])
        return alt.X(
            f"{x}:N",
            title=title,
            sort=order,
            axis=alt.Axis(labelAngle=_tick_angle(order, self.width)),
            scale=alt.Scale(paddingInner=0.2),
        )

    def color_encoding(self) -> dict[str, object]:
        c = self.field.get("color")
        if not c:
            return {}
        title = self.label.name(self.title_of[c])
        order = self.order.get(c, [])
        scale = (
            alt.Scale(domain=order, range=PRINT_GREYS[: max(len(order), 1)])
            if self.print_style
            else alt.Scale(domain=order)
        )
        enc: dict[str, object] = {"color": alt.Color(f"{c}:N", title=title, sort=order, scale=scale)}
        if self.print_style and self.kind in ("line", "strip"):
            enc["shape"] = alt.Shape(f"{c}:N", title=title, sort=order, scale=alt.Scale(domain=order))
        if self.print_style and self.kind == "line":
            enc["strokeDash"] = alt.StrokeDash(f"{c}:N", title=title, sort=order, scale=alt.Scale(domain=order))
        return enc

    def groups(self) -> int:
        c = self.field.get("color")
        return max(len(self.order.get(c, [])), 1) if c else 1

    def band_px(self) -> float:
        """Width of one x band in pixels (categorical x)."""
        n = max(len(self.order.get(self.field["x"], [])), 1)
        return self.width / n * 0.8

    def dodge(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`xpos`: numeric x moved apart per series so intervals do not overlap."""
        frame = frame.copy()
        x, c = self.field["x"], self.field.get("color")
        if not self.numeric_x or not len(frame):
            return frame
        xs = frame[x].astype(float)
        k = self.groups()
        index = frame[c].map({v: i for i, v in enumerate(self.order.get(c, []))}).fillna(0) if c else 0
        shift = (index - (k - 1) / 2) * (0.025 if k > 1 else 0)
        base = log_base(self.spec.get("log_x"))
        if base and (xs > 0).all():
            span = math.log(xs.max() / xs.min(), base) if xs.max() > xs.min() else 1.0
            frame["xpos"] = xs * np.power(float(base), shift * span)
        else:
            span = float(xs.max() - xs.min()) or 1.0
            frame["xpos"] = xs + shift * span
        return frame

    def stats(self) -> pd.DataFrame:
        table = summarise(self.frame, self.keys, VALUE, self.confidence, self.statistic)
        if self.positive:
            table["lo"] = table["lo"].clip(lower=0)
        if log_base(self.spec.get("log_y")):
            floor = table[VALUE][table[VALUE] > 0].min() if len(table) else 1.0
            table.loc[table["lo"] <= 0, "lo"] = floor / 2
        return self.dodge(table)

    def has_interval(self, table: pd.DataFrame) -> bool:
        return bool(len(table)) and bool((table["hi"] > table["lo"]).any())

    # ---- kinds ----------------------------------------------------------------
    def summary_chart(self) -> tuple[alt.LayerChart, pd.DataFrame]:
        table = self.stats()
        scale = self.y_scale(table["lo"], table["hi"])
        y = alt.Y(f"{VALUE}:Q", title=self.y_title(), scale=scale, axis=SI_AXIS)
        enc = {"x": self.x_encoding(), **self.color_encoding()}
        caps: dict[str, object] = {"x": enc["x"]}
        tooltip = [
            alt.Tooltip(f"{VALUE}:Q", title=self.statistic, format=".4~s"),
            "lo:Q",
            "hi:Q",
            alt.Tooltip("count:Q", title="n"),
        ]
        if self.kind == "bar":
            c = self.field.get("color")
            if c:
                enc["xOffset"] = caps["xOffset"] = alt.XOffset(f"{c}:N", sort=self.order.get(c, []))
            stroke = {"stroke": "black", "strokeWidth": 0.6} if self.print_style else {}
            bars = alt.Chart().mark_bar(**stroke).encode(y=y, tooltip=tooltip, **enc)
            if log_base(self.spec.get("log_y")):
                bars = bars.encode(
                    y2=alt.datum(scale.domain[0]) if scale.domain is not alt.Undefined else alt.Undefined
                )
            cap = max(3.0, min(10.0, self.band_px() / self.groups() * 0.45))
            colour = {"color": INK}
        else:
            bars = (
                alt.Chart()
                .mark_line(point=alt.OverlayMarkDef(size=36, filled=True), strokeWidth=1.5)
                .encode(y=y, tooltip=tooltip, **enc)
            )
            cap = 6.0
            colour = {}
            if "color" in enc:
                caps["color"] = enc["color"]
        rule = alt.Chart().mark_rule(strokeWidth=1.2, **colour).encode(y=alt.Y("lo:Q", scale=scale), y2="hi:Q", **caps)
        ends = [
            alt.Chart()
            .mark_tick(orient="horizontal", size=cap, thickness=1.2, **colour)
            .encode(y=alt.Y(f"{end}:Q", scale=scale), **caps)
            for end in ("lo", "hi")
        ]
        interval = [rule, *ends] if self.has_interval(table) else []
        return alt.layer(bars, *interval, data=table), table  # type: ignore[return-value]

    def strip_chart(self) -> tuple[alt.LayerChart, pd.DataFrame]:
        """Every run, jittered (seeded) within its band, with the median marked."""
        points = self.frame.copy()
        k, c = self.groups(), self.field.get("color")
        slot = (
            points[c].map({v: i for i, v in enumerate(self.order.get(c, []))}).fillna(0).astype(float)
            if c
            else pd.Series(0.0, index=points.index)
        )
        centre = (slot - (k - 1) / 2) / k
        jitter = np.random.default_rng(JITTER_SEED).uniform(-0.28, 0.28, len(points)) / k
        points["offset"], points["layer"] = centre + jitter, "run"
        medians = points.groupby(self.keys, dropna=False, sort=False)[VALUE].median().reset_index()
        if c:
            medians["offset"] = (
                (medians[c].map({v: i for i, v in enumerate(self.order.get(c, []))}).fillna(0) - (k - 1) / 2) / k
            ).astype(float)
        else:
            medians["offset"] = 0.0
        medians["layer"] = "median"
        data = pd.concat([points, medians], ignore_index=True)
        scale = self.y_scale(points[VALUE], points[VALUE])
        y = alt.Y(f"{VALUE}:Q", title=self.y_title(), scale=scale, axis=SI_AXIS)
        off = alt.XOffset("offset:Q", scale=alt.Scale(domain=[-0.5, 0.5]))
        enc = {"x": self.x_encoding(), "xOffset": off}
        dots = (
            alt.Chart()
            .mark_point(filled=True, size=30, opacity=0.75)
            .encode(y=y, **enc, **self.color_encoding())
            .transform_filter("datum.layer == 'run'")
        )
        marker = (
            alt.Chart()
            .mark_tick(orient="horizontal", color=INK, thickness=2, size=max(6.0, self.band_px() / k * 0.7))
            .encode(y=y, **enc)
        )
        marker = marker.transform_filter("datum.layer == 'median'")
        return alt.layer(dots, marker, data=data), data  # type: ignore[return-value]

    def breakdown_chart(self) -> tuple[alt.Chart, pd.DataFrame]:
        """Speedup stack: per value of x (a thread count), the mean of each
        time component over its runs, as its share of their sum scaled to x
        (the ideal speedup), stacked. The bars' tops follow linear scaling;
        the first component (running) is the parallelism achieved, the others
        say where the rest of the threads' time went."""
        x = self.field["x"]
        facets = [self.field[r] for r in ("row", "column") if r in self.field]
        means = self.frame.groupby([x, *facets, METRIC], dropna=False, sort=False)[VALUE].mean().reset_index()
        totals = means.groupby([x, *facets], dropna=False)[VALUE].transform("sum")
        threads = pd.to_numeric(means[x], errors="coerce")
        means["share"] = means[VALUE] / totals.where(totals > 0)
        means["scaled"] = means["share"] * threads
        means["order"] = means[METRIC].map({m: i for i, m in enumerate(self.order[METRIC])})
        table = means.rename(columns={VALUE: "mean"})
        bars = alt.Chart(table).mark_bar(size=max(6.0, self.band_px() * 0.6)).encode(
            x=alt.X(f"{x}:O", title=self.label.name(self.title_of[x]), sort=self.order.get(x, [])),
            y=alt.Y("scaled:Q", stack="zero", title="threads (bar: ideal speedup)", axis=SI_AXIS),
            color=alt.Color(f"{METRIC}:N", sort=self.order[METRIC], title=None,
                            scale=alt.Scale(scheme="tableau10")),
            order=alt.Order("order:Q"),
            tooltip=[x, METRIC, alt.Tooltip("share:Q", format=".1%"), alt.Tooltip("mean:Q", format=".4g")],
        )  # fmt: skip
        return bars, table

    def speedup_stack_chart(self) -> tuple[alt.LayerChart, pd.DataFrame]:
        """Speedup stacks (perfsnake.statistics.speedup): per thread count N, a bar
        of height N whose base is the measured speedup (with its interval) and
        whose parts are the measured causes of the gap and the remainder."""
        target = dict(self.spec["speedup_of"])  # type: ignore[call-overload]
        metric, better = str(target["metric"]), str(target["better"])
        x = str(self.spec["x"])
        facets = [str(self.spec[r]) for r in ("row", "column", "facet") if self.spec.get(r)]
        wide = self.wide.copy()
        spin = SPIN in wide and pd.to_numeric(wide[SPIN], errors="coerce").notna().any()
        needed = [metric, x, *PAR_PARTS]
        for col in needed:
            wide[col] = pd.to_numeric(wide[col], errors="coerce") if col in wide else np.nan
        wide = wide.dropna(subset=needed)
        wide = wide[wide["sched.par.region_ms"] > 0]
        names = {"speedup": f"speedup ({self.label.name(metric)})", **STACK_NAMES}
        if not spin:
            names.pop("spinning")
        rows: list[dict[str, object]] = []
        self.unmatched = 0
        for key, group in wide.groupby(facets, dropna=False, sort=False) if facets else [((), wide)]:
            keys = dict(zip(facets, key if isinstance(key, tuple) else (key,), strict=True))
            one = [_run_times(r, metric, spin) for _, r in group[group[x] == 1].iterrows()]
            for n, runs in group.groupby(x, sort=True):
                if not one:
                    self.unmatched += 1
                    continue
                bar = speedup_stacks.stack(float(n), [_run_times(r, metric, spin) for _, r in runs.iterrows()],
                                           one, better, self.confidence)  # fmt: skip
                top = 0.0
                for part, value in [("speedup", bar.speedup), *bar.parts.items()]:
                    if part not in names:
                        continue
                    rows.append({**keys, x: n, "part": names[part], "from": top, "to": top + value, "value": value,
                                 "lo": bar.low, "hi": bar.high, "ideal": n, "count": bar.runs})  # fmt: skip
                    top += value
        table = pd.DataFrame(rows, columns=[*facets, x, "part", "from", "to", "value", "lo", "hi", "ideal", "count"])
        table = table.rename(columns={c: self.names.get(c, c) for c in [x, *facets]})
        xf = self.field["x"]
        # The x labels as the other kinds show them (1, not 1.0).
        table[xf] = table[xf].map(lambda v: value_text(int(v)) if float(v).is_integer() else value_text(v))
        order = list(names.values())
        ordinal = alt.X(f"{xf}:O", title=self.label.name(x), sort=self.order.get(xf, []), axis=alt.Axis(labelAngle=0))
        band = max(6.0, self.band_px() * 0.6)
        bars = alt.Chart().mark_bar(size=band, stroke=INK, strokeWidth=0.3).encode(
            x=ordinal,
            y=alt.Y("from:Q", title="threads (bar: N; base: speedup)", scale=alt.Scale(zero=True, nice=True)),
            y2="to:Q",
            color=alt.Color("part:N", sort=order, title=None, scale=alt.Scale(domain=order, range=STACK_COLOURS[: len(order)])),
            order=alt.Order("from:Q"),
            tooltip=[alt.Tooltip(f"{xf}:O", title=self.label.name(x)), "part:N", alt.Tooltip("value:Q", format=".3f")],
        )  # fmt: skip
        base = f"datum.part == {_quoted(names['speedup'])}"  # the interval and N: once per bar
        interval = alt.Chart().mark_rule(color=INK, strokeWidth=1.2).encode(x=ordinal, y="lo:Q", y2="hi:Q")
        interval = interval.transform_filter(base)
        ideal = alt.Chart().mark_tick(color=INK, thickness=2, size=band * 1.3).encode(x=ordinal, y="ideal:Q")
        ideal = ideal.transform_filter(base)
        # The remainder outlined on top: negative, it overlaps the causes' top by its size.
        rest = alt.Chart().mark_bar(size=band, fillOpacity=0, stroke=INK, strokeWidth=0.8, strokeDash=[3, 2])
        rest = rest.encode(x=ordinal, y="from:Q", y2="to:Q").transform_filter(
            f"datum.part == {_quoted(names['unexplained'])}"
        )
        return alt.layer(bars, rest, interval, ideal, data=table), table  # type: ignore[return-value]

    def box_chart(self) -> tuple[alt.Chart, pd.DataFrame]:
        scale = self.y_scale(self.frame[VALUE], self.frame[VALUE])
        y = alt.Y(f"{VALUE}:Q", title=self.y_title(), scale=scale, axis=SI_AXIS)
        enc = {"x": self.x_encoding(), **self.color_encoding()}
        c = self.field.get("color")
        if c:
            enc["xOffset"] = alt.XOffset(f"{c}:N", sort=self.order.get(c, []))
        size = max(4.0, self.band_px() / self.groups() * 0.7)
        box = alt.Chart(self.frame).mark_boxplot(
            extent="min-max",
            size=size,
            median={"color": INK},
            rule={"color": INK},
            ticks={"size": size * 0.5, "color": INK},
        )
        return box.encode(y=y, **enc), self.frame

    # ---- whole figure ---------------------------------------------------------
    def title(self, table: pd.DataFrame, interval: bool) -> alt.TitleParams:
        x = self.title_of.get(self.field["x"], "")
        text = str(
            self.spec.get("title") or f"{', '.join(self.label.name(m) for m in self.metrics)} by {self.label.name(x)}"
        )
        counts = table["count"] if "count" in table else self.frame.groupby(self.keys, dropna=False).size()
        lines = []
        if interval:
            lines.append(f"{self.statistic}, {self.confidence * 100:g} % CI")
        elif self.kind == "strip":
            lines.append("every run; tick: median")
        elif self.kind == "breakdown":
            lines.append(
                "each bar: the threads' time, split by mean share, scaled to the thread count (linear scaling)"
            )
        elif self.kind == "speedup_stack":
            lines += speedup_stack_notes(self.spec, self.confidence, self.statistic, getattr(self, "unmatched", 0))
        if self.bimodal:
            lines.append(f"drawn as strips: the runs of {self.bimodal} group(s) fall into two modes")
        if len(counts):
            lo, hi = int(counts.min()), int(counts.max())
            per = {"box": "per box", "strip": "per group"}.get(self.kind, "per point")
            lines.append(f"n = {lo} {per}" if lo == hi else f"n = {lo}-{hi} {per}")
        # A speedup stack says what its parts are, one line each.
        subtitle = lines if self.kind == "speedup_stack" else "; ".join(lines)
        return alt.TitleParams(text=text, subtitle=subtitle, anchor="start")

    def header(self, field: str) -> alt.Header:
        name = self.label.name(self.title_of.get(field, field))
        expr = "datum.value" if field == METRIC else f"{_quoted(name + ' = ')} + datum.value"
        return alt.Header(title=None, labelExpr=expr, labelFontSize=11, labelFontWeight="bold")

    def bimodal_groups(self) -> int:
        """How many plotted records' runs fall into two groups (perfsnake.statistics.modes)."""
        groups = self.frame.groupby(self.keys, dropna=False, sort=False)[VALUE]
        return sum(two_modes(values.to_numpy()) is not None for _, values in groups)

    def build(self) -> alt.TopLevelMixin:
        self.bimodal = self.bimodal_groups() if self.kind in ("line", "bar") else 0
        if self.bimodal:
            # A mean and its interval describe neither group: show every run.
            self.kind = "strip"
        if self.kind in ("line", "bar"):
            inner, table = self.summary_chart()
        elif self.kind == "strip":
            inner, table = self.strip_chart()
        elif self.kind == "breakdown":
            inner, table = self.breakdown_chart()  # type: ignore[assignment]
        elif self.kind == "speedup_stack":
            inner, table = self.speedup_stack_chart()
        else:
            inner, table = self.box_chart()  # type: ignore[assignment]
        interval = self.kind in ("line", "bar") and self.has_interval(table)
        inner = inner.properties(width=self.width, height=self.height)
        row, column = self.field.get("row"), self.field.get("column")
        facets: dict[str, object] = {}
        if row:
            facets["row"] = alt.Row(f"{row}:N", sort=self.order.get(row, []), header=self.header(row))
        if column:
            facets["column"] = alt.Column(f"{column}:N", sort=self.order.get(column, []), header=self.header(column))
        wrap = None
        if self.many_metrics:
            if not row:
                facets["row"] = alt.Row(f"{METRIC}:N", sort=self.order[METRIC], header=self.header(METRIC))
            elif not column:
                facets["column"] = alt.Column(f"{METRIC}:N", sort=self.order[METRIC], header=self.header(METRIC))
            else:
                wrap = True  # refused at campaign load; only reachable from Python
        if facets and not wrap:
            figure = inner.facet(**facets)
            resolve = {"y": "independent"} if self.many_metrics or self.spec.get("resolve_y") == "independent" else {}
            if self.spec.get("resolve_x") == "independent":
                resolve["x"] = "independent"
            if resolve:  # one call: a second resolve_scale replaces the first
                figure = figure.resolve_scale(**resolve)
        else:
            figure = inner  # type: ignore[assignment]
        figure = figure.properties(title=self.title(table, interval))
        return (
            figure.configure_axis(labelFontSize=10, titleFontSize=11, labelLimit=160)
            .configure_legend(labelFontSize=10, titleFontSize=11)
            .configure_title(fontSize=12, subtitleFontSize=10)
            .configure_view(strokeWidth=0.5)
        )


SPIN = "perf_record.spin_share"
#: The timeline's columns a speedup stack reads (perfsnake.instruments.sched.PARALLEL).
PAR_PARTS = ("sched.par.region_ms", "sched.par.running_ms", "sched.par.wait_ms", "sched.par.blocked_ms",
             "sched.par.imbalance_ms")  # fmt: skip
STACK_NAMES = {
    "spinning": "spinning in lock code",
    "blocked": "blocked in synchronisation",
    "runnable": "runnable, waiting for a CPU",
    "imbalance": "load imbalance",
    "overhead": "parallelisation overhead",
    "unexplained": "unexplained (remainder)",
}
STACK_COLOURS = ["#4c78a8", "#e45756", "#f58518", "#b279a2", "#72b7b2", "#eeca3b", "#ffffff"]


def _run_times(row: pd.Series, metric: str, spin: bool) -> speedup_stacks.RunTimes:
    share = float(row[SPIN]) if spin and pd.notna(row.get(SPIN)) else None
    return speedup_stacks.RunTimes(
        metric=float(row[metric]),
        region_ms=float(row["sched.par.region_ms"]),
        running_ms=float(row["sched.par.running_ms"]),
        wait_ms=float(row["sched.par.wait_ms"]),
        blocked_ms=float(row["sched.par.blocked_ms"]),
        imbalance_ms=float(row["sched.par.imbalance_ms"]),
        spin_share=share,
    )


def speedup_stack_notes(spec: Mapping[str, object], confidence: float, statistic: str, unmatched: int) -> list[str]:
    """The subtitle of a speedup stack: what its base, parts and remainder are, and what is missing."""
    target = spec["speedup_of"]
    assert isinstance(target, Mapping)
    lines = [
        f"base: speedup in {target['metric']} ({target['better']} is better) over 1 thread, median, "
        f"{confidence * 100:g} % CI; parts: mean over runs of sum_i O_i / T_p; tick: N",
        "unexplained: the remainder of N - speedup, never forced to 0 (negative: the causes exceed the gap)",
        speedup_stacks.interference_note(),
    ]
    if unmatched:
        lines.append(f"{unmatched} bar(s) left out: no one-thread runs of the same variables")
    return lines


def chart(
    frame: pd.DataFrame,
    spec: Mapping[str, object],
    pretty: Mapping[str, Mapping[str, str]],
    confidence: float,
    statistic: str,
    values: Mapping[str, Sequence[str]] | None = None,
    units: Mapping[str, str] | None = None,
) -> alt.TopLevelMixin:
    """The Vega-Lite chart of one plot entry over the campaign's rows."""
    return Plot(frame, spec, pretty, confidence, statistic, values, units).build()


def draw(
    rows: list[dict],
    spec: Mapping[str, object],
    info: CampaignInfo,
    outputs: Sequence[Path],
    metadata: Mapping[str, object] | None = None,
) -> None:
    """Save the campaign's plot to every output (.svg, .png at twice the size, .pdf).

    `info` gives the labels, value orders and statistics; `metadata` is the
    rows' metadata (metric units).
    """
    save(rows, spec, info.pretty, info.values, info.statistics, outputs, metadata)


def save(
    rows: list[dict],
    spec: Mapping[str, object],
    pretty: Mapping[str, Mapping[str, str]],
    values: Mapping[str, Sequence[str]],
    statistics: Statistics,
    outputs: Sequence[Path],
    metadata: Mapping[str, object] | None,
) -> None:
    """Save a plot of these rows to every output (.svg, .png at twice the size, .pdf)."""
    frame = pd.DataFrame(rows)
    columns = [
        c
        for c in (
            spec.get("x"),
            spec.get("color"),
            spec.get("row"),
            spec.get("column"),
            spec.get("facet"),
            *metrics_of(spec),
        )
        if c
    ]
    for col in [*columns, "status"]:
        if col not in frame:
            frame[col] = pd.Series(dtype=object)
    figure = chart(
        frame, spec, pretty, float(statistics.confidence), statistics.statistic, values, parse_units(metadata)
    )
    for out in outputs:
        out = Path(out)
        figure.save(str(out), scale_factor=2) if out.suffix == ".png" else figure.save(str(out))


def draw_figure(
    campaigns: Sequence[str],
    rows_files: Sequence[Path],
    spec: Mapping[str, object],
    info: Mapping[str, Any],
    outputs: Sequence[Path],
) -> None:
    """A figure over several campaigns: their rows, each with its campaign's
    name; `info` is perfsnake.figures.figure_info (labels, value orders and
    the first campaign's statistics)."""
    rows: list[dict] = []
    units: dict[str, str] = {}
    for name, path in zip(campaigns, rows_files):
        data = json.loads(Path(path).read_text())
        rows += [{**row, "campaign": name} for row in data["rows"]]
        units.update(parse_units(data.get("metadata")))
    metadata = {"metric_units": ", ".join(f"{k}={v}" for k, v in units.items())}
    save(rows, spec, info["pretty"], info["values"], Statistics.from_dict(info["statistics"]), outputs, metadata)
