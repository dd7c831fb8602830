"""What the store shows: per record, the latest invocation beside the recent
past; a metric over time (and over commits) per machine, with intervals and
the steps along the invocations (perfsnake.statistics.changepoints'
find_invocation_steps: each invocation one point, the variance between
invocations the noise)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: The statistics options the step finder needs (the campaign's defaults).
STEP_OPTIONS = {"confidence": 0.95, "alpha": 0.05, "autocorrelation_threshold": 0.2}


@dataclass
class Point:
    """One invocation of one record on one machine."""

    invocation: str
    when: str
    version: str
    runs: np.ndarray
    mean: float = field(init=False)
    low: float = field(init=False)
    high: float = field(init=False)

    def __post_init__(self) -> None:
        self.mean = float(self.runs.mean())
        if len(self.runs) >= 2 and self.runs.std(ddof=1) > 0:
            from scipy import stats  # here: invocations of one run never pay for importing scipy.stats (~1 s)

            half = stats.t.ppf(0.975, len(self.runs) - 1) * self.runs.std(ddof=1) / np.sqrt(len(self.runs))
        else:
            half = 0.0
        self.low, self.high = self.mean - half, self.mean + half


@dataclass
class Series:
    hostname: str
    record: str
    points: list[Point]
    steps: list[int] = field(default_factory=list)  # indices of the first point after each step


def metrics_of(frame: pd.DataFrame) -> list[str]:
    """The metrics stored for a campaign, its own first (wall_s last)."""
    names: dict[str, None] = {}
    for text in frame.get("metrics", []):
        for k, v in json.loads(text).items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                names.setdefault(k, None)
    return sorted(names, key=lambda m: (m == "wall_s", m.count("."), m))


def record_label(record: str) -> str:
    values = json.loads(record)
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "all"


def series(frame: pd.DataFrame, metric: str) -> list[Series]:
    """Per machine and record, the invocations in time order with their ok runs' values."""
    if frame.empty:
        return []
    ok = frame.loc[frame["status"] == "ok"].copy()
    ok["value"] = [json.loads(m).get(metric) for m in ok["metrics"]]
    numeric = ok["value"].map(lambda v: isinstance(v, int | float) and not isinstance(v, bool)).astype(bool)
    ok = ok.loc[numeric]
    if ok.empty:  # every run failed, or the metric was never measured
        return []
    out = []
    for (host, record), group in ok.groupby(["hostname", "record"], sort=True):
        points = []
        for inv, runs in group.groupby("invocation_id", sort=False):
            versions = {json.dumps(json.loads(v), sort_keys=True) for v in runs["versions"] if v}
            version = ", ".join(
                f"{k}={v}" for text in sorted(versions) for k, v in json.loads(text).items()
            )  # the sources' versions, if the campaign has any
            points.append(Point(str(inv), str(runs["first_start"].iloc[0] or runs["start"].min()), version,
                                runs["value"].to_numpy(dtype=float)))  # fmt: skip
        points.sort(key=lambda p: p.when)
        s = Series(str(host), str(record), points)
        s.steps = steps_along(points)
        out.append(s)
    return out


def steps_along(points: Sequence[Point]) -> list[int]:
    """Where the metric stepped along the invocations (each one point, what
    varies between them the noise: find_invocation_steps)."""
    from perfsnake.statistics.changepoints import find_invocation_steps

    labelled = [(str(i), p.runs) for i, p in enumerate(points)]
    return [int(str(s["version"])) for s in find_invocation_steps(labelled, STEP_OPTIONS) if _significant(s)]


def _significant(step: dict[str, Any]) -> bool:
    p = step.get("p_value")
    return isinstance(p, float) and p < STEP_OPTIONS["alpha"]


def show(frame: pd.DataFrame, campaign: str, metric: str | None = None, last: int = 10) -> str:
    """The text `perfsnake history show` prints."""
    if frame.empty:
        return f"history: no runs of {campaign} in the store"
    metric = metric or (metrics_of(frame) or ["wall_s"])[0]
    lines = []
    invs = frame.drop_duplicates("invocation_id").sort_values("first_start")
    hosts = sorted(frame["hostname"].unique())
    lines.append(f"{campaign}: {len(invs)} invocation(s) on {', '.join(hosts)}; metric {metric}; recent past = the {last} invocations before the latest")  # fmt: skip
    lines.append("")
    lines.append("invocations:")
    for i, (_, inv) in enumerate(invs.iterrows(), 1):
        n = int((frame["invocation_id"] == inv["invocation_id"]).sum())
        lines.append(
            f"  {i:>3}  {inv['first_start'] or '?'}  {inv['hostname']}  {str(inv['invocation_id'])[:12]}  {n} run(s)"
        )
    lines.append("")
    header = f"  {'record':<28} {'machine':<12} {'latest (95% CI)':<34} {'recent past: median [min, max]':<36} step"
    lines.append(header)
    order = {inv: i for i, inv in enumerate(invs["invocation_id"], 1)}
    for s in series(frame, metric):
        latest = s.points[-1]
        past = [p.mean for p in s.points[-1 - last : -1]]
        now_text = f"{latest.mean:.4g} [{latest.low:.4g}, {latest.high:.4g}]"
        past_text = f"{np.median(past):.4g} [{min(past):.4g}, {max(past):.4g}] (n={len(past)})" if past else "-"
        steps = ", ".join(f"at invocation {order[s.points[i].invocation]}" for i in s.steps) or "-"
        lines.append(f"  {record_label(s.record):<28} {s.hostname:<12} {now_text:<34} {past_text:<36} {steps}")
    return "\n".join(lines) + "\n"


def chart_rows(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One row per invocation of each record and machine, for the figures."""
    rows = []
    for s in series(frame, metric):
        for i, p in enumerate(s.points):
            inv = frame[frame["invocation_id"] == p.invocation].iloc[0]
            rows.append({"record": record_label(s.record), "machine": s.hostname, "when": p.when,
                         "version": p.version or "-", "mean": p.mean, "low": p.low, "high": p.high,
                         "runs": len(p.runs), "invocation": p.invocation[:12], "step": i in s.steps,
                         "results": str(inv.get("results_dir") or "")})  # fmt: skip
    return pd.DataFrame(rows)


def version_order(frame: pd.DataFrame, data: pd.DataFrame) -> list[str]:
    """The versions drawn, in their commit range's first-parent order (the
    latest invocation's range wins; versions no range lists follow in the
    order they were measured)."""
    ranked: dict[str, int] = {}
    for text in frame.sort_values("first_start")["version_order"].dropna() if "version_order" in frame else []:
        order = json.loads(text)
        if len(order) != 1:
            continue  # several version variables: measured order (their ranges need not align)
        labels = [
            ", ".join(f"{k}={v}" for k, v in zip(order, values, strict=True))
            for values in zip(*order.values(), strict=True)
        ]
        ranked.update({label: i for i, label in enumerate(labels)})
    measured = list(dict.fromkeys(data.sort_values("when")["version"]))
    return sorted(measured, key=lambda v: (ranked.get(v, len(ranked)), measured.index(v)))


def figure(frame: pd.DataFrame, metric: str, by: str = "when") -> Any:
    """A metric over time (`by="when"`) or over the sources' versions
    (`by="version"`, in the order they were measured), one colour per
    machine, a panel per record; intervals as bars, steps as red rules."""
    import altair as alt

    data = chart_rows(frame, metric)
    if data.empty:
        return None
    x = (
        alt.X("when:T", title="invocation (UTC)", scale=alt.Scale(padding=16))
        if by == "when"
        else alt.X("version:N", sort=version_order(frame, data), title="version (first-parent order)")
    )
    tooltip = ["record", "machine", "when", "version", alt.Tooltip("mean:Q", format=".4g"), "runs", "invocation"]
    base = alt.Chart(data).encode(x=x, color=alt.Color("machine:N"))
    line = base.mark_line(point=True).encode(
        y=alt.Y("mean:Q", title=metric, scale=alt.Scale(zero=False)), tooltip=tooltip
    )
    bars = base.mark_errorbar().encode(y=alt.Y("low:Q", title=metric), y2="high:Q")
    steps = (
        base.mark_rule(color="#d62728", strokeDash=[4, 3])
        .encode(color=alt.value("#d62728"))
        .transform_filter(
            alt.datum.step == True  # noqa: E712 (a Vega expression, not Python's comparison)
        )
    )
    return (
        alt.layer(bars, line, steps, data=data)
        .properties(width=520, height=180)
        .facet(row=alt.Row("record:N", title=None))
        .resolve_scale(y="independent")
        .properties(title=f"{metric} over {'time' if by == 'when' else 'versions'}")
    )
