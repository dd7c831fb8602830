"""`perfsnake history publish DIR`: a static site of the store, like
`asv publish`. An index of campaigns and machines; per campaign, a chart per
metric: pick the record in a drop-down, click a machine in the legend, drag
or zoom the time axis; hover a point for its commit, date, value and
invocation; click it to open that invocation's results. No server: the Vega
libraries are bundled into the site (vl-convert ships them), so it opens
from disk and offline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from perfsnake.history import views
from perfsnake.history.store import Store, describe

BUNDLE = "vega-bundle.js"
# The bundle keeps its libraries to itself; this names Vega-Embed for the pages.
EXPOSE = "window.vegaEmbed = vegaEmbed;"
# The time axis and the tooltips' dates in UTC, whatever the browser's time zone.
UTC_WHEN = "utcyearmonthdatehoursminutesseconds(when):T"
WHEN_FORMAT = "%Y-%m-%d %H:%M:%S"


def _page(template: str, **values: object) -> str:
    """A page of the site from its template (perfsnake/pages/templates/dashboard*.html)."""
    from perfsnake.pages.html import environment

    return environment().get_template(template).render(bundle=BUNDLE, **values)


def _link(results_dir: str) -> str:
    """Where a point's click goes: the invocation's report landing page if it has one, else its directory."""
    if not results_dir or "!" in results_dir:
        return ""
    landing = Path(results_dir) / "report" / "landing.html"
    return (landing if landing.exists() else Path(results_dir)).as_uri()


def metric_chart(frame: pd.DataFrame, metric: str) -> dict[str, Any] | None:
    """One metric's interactive chart as a Vega-Lite specification."""
    import altair as alt

    data = views.chart_rows(frame, metric)
    if data.empty:
        return None
    data["link"] = [_link(r) for r in data["results"]]
    records = sorted(data["record"].unique())
    record = alt.param(name="record", value=records[0], bind=alt.binding_select(options=records, name="record "))
    machine = alt.selection_point(fields=["machine"], bind="legend", name="machine")
    zoom = alt.selection_interval(encodings=["x"], bind="scales", name="time")
    tooltip = [alt.Tooltip("version:N", title="commit"),
               alt.Tooltip(UTC_WHEN, title="date", format=WHEN_FORMAT),
               alt.Tooltip("mean:Q", title=metric, format=".4g"), alt.Tooltip("low:Q", format=".4g"),
               alt.Tooltip("high:Q", format=".4g"), "runs:Q", "machine:N", "invocation:N"]  # fmt: skip
    base = (
        alt.Chart(data)
        .transform_filter(alt.datum.record == record)
        .encode(
            x=alt.X("when:T", title="invocation (UTC)", scale=alt.Scale(type="utc", padding=24)),
            color=alt.Color("machine:N", title="machine"),
            opacity=alt.condition(machine, alt.value(1.0), alt.value(0.15)),
        )
    )
    points = (
        base.mark_line(point={"size": 60, "filled": True})
        .encode(y=alt.Y("mean:Q", title=metric, scale=alt.Scale(zero=False)), tooltip=tooltip, href="link:N")
        .properties(name="points")
    )
    bars = base.mark_errorbar().encode(y=alt.Y("low:Q", title=metric), y2="high:Q").properties(name="intervals")
    # The legend's click needs the machine selection in the first layer (the
    # layer's legend is that layer's); the points go last, drawn over a step's
    # rule, so that hovering and clicking a point at a step reach the point.
    layers = [bars.add_params(machine)]
    if data["step"].any():  # a rule per step; an empty layer would only warn about its extent
        steps = (
            base.mark_rule(strokeDash=[4, 3], strokeWidth=1.5)
            .encode(
                color=alt.value("#d62728"),
                tooltip=[alt.Tooltip(UTC_WHEN, title="step at", format=WHEN_FORMAT), "machine:N"],
            )
            .transform_filter(alt.datum.step == True)  # noqa: E712 (a Vega expression)
            .properties(name="steps")
        )
        layers.append(steps)
    layers.append(points.add_params(zoom))
    chart = (
        alt.layer(*layers)
        .add_params(record)
        .properties(width=760, height=260, title=f"{metric}: mean of each invocation's ok runs, 95% interval")
    )
    spec: dict[str, Any] = chart.to_dict()
    return spec


def publish(store: Store, out: Path) -> list[Path]:
    """Write the site; the pages written."""
    import vl_convert

    out.mkdir(parents=True, exist_ok=True)
    (out / BUNDLE).write_text(vl_convert.javascript_bundle(EXPOSE))
    everything = store.frame()
    pages = []
    rows = []
    for campaign, group in everything.groupby("campaign", sort=True) if not everything.empty else []:
        name = f"campaign-{_slug(str(campaign))}.html"
        pages.append(out / name)
        (out / name).write_text(_campaign_page(str(campaign), group))
        for host, by_host in group.groupby("hostname", sort=True):
            invs = by_host.drop_duplicates("invocation_id")
            rows.append({"page": name, "campaign": str(campaign), "host": str(host), "invocations": len(invs),
                         "runs": len(by_host), "latest": str(invs["first_start"].max())})  # fmt: skip
    index = _page("dashboard_index.html", title="perfsnake history", store=describe(store.url), rows=rows, charts=[])
    (out / "index.html").write_text(index)
    return [out / "index.html", *pages]


def _campaign_page(campaign: str, frame: pd.DataFrame) -> str:
    charts = []
    for i, metric in enumerate(views.metrics_of(frame)):
        spec = metric_chart(frame, metric)
        if spec is not None:
            charts.append({"id": f"chart-{i}", "metric": metric, "spec": spec})
    invs = frame.drop_duplicates("invocation_id").sort_values("first_start")
    invocations = [
        {"started": str(r["first_start"]), "host": str(r["hostname"]), "invocation": str(r["invocation_id"])[:12],
         "commit": str(r["perfsnake_commit"] or "")[:12]}
        for _, r in invs.iterrows()
    ]  # fmt: skip
    return _page("dashboard_campaign.html", title=f"{campaign}: perfsnake history", campaign=campaign,
                 charts=charts, invocations=invocations)  # fmt: skip


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
