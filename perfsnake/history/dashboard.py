"""`perfsnake history publish DIR`: a static site of the store, like
`asv publish`. An index of campaigns and machines; per campaign, a chart per
metric: pick the record in a drop-down, click a machine in the legend, drag
or zoom the time axis; hover a point for its commit, date, value and
invocation; click it to open that invocation's results. No server: the Vega
libraries are bundled into the site (vl-convert ships them), so it opens
from disk and offline.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from perfsnake.history import views
from perfsnake.history.store import Store, describe

BUNDLE = "vega-bundle.js"
# The bundle keeps its libraries to itself; this names Vega-Embed for the pages.
EXPOSE = "window.vegaEmbed = vegaEmbed;"

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 980px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; } td, th { padding: .3em .8em; border-bottom: 1px solid #ddd; text-align: left; }
.muted { color: #666; } .chart { margin: 1em 0 2em; }
"""


def _page(title: str, body: str, charts: list[tuple[str, dict[str, Any]]]) -> str:
    specs = json.dumps([{"id": cid, "spec": spec} for cid, spec in charts])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{STYLE}</style></head>
<body>
{body}
<script src="{BUNDLE}"></script>
<script>
const charts = {specs};
for (const c of charts) {{
  window.vegaEmbed("#" + c.id, c.spec, {{renderer: "svg", actions: false}})
    .then(() => document.getElementById(c.id).dataset.rendered = "yes")
    .catch(e => {{ console.error("chart " + c.id + ": " + e); }});
}}
</script>
</body></html>
"""


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
    tooltip = [alt.Tooltip("version:N", title="commit"), alt.Tooltip("when:T", title="date", format="%Y-%m-%d %H:%M:%S"),
               alt.Tooltip("mean:Q", title=metric, format=".4g"), alt.Tooltip("low:Q", format=".4g"),
               alt.Tooltip("high:Q", format=".4g"), "runs:Q", "machine:N", "invocation:N"]  # fmt: skip
    base = (
        alt.Chart(data)
        .transform_filter(alt.datum.record == record)
        .encode(
            x=alt.X("when:T", title="invocation (UTC)", scale=alt.Scale(padding=24)),
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
    layers = [bars, points.add_params(machine, zoom)]
    if data["step"].any():  # a rule per step; an empty layer would only warn about its extent
        steps = (
            base.mark_rule(strokeDash=[4, 3], strokeWidth=1.5)
            .encode(color=alt.value("#d62728"), tooltip=[alt.Tooltip("when:T", title="step at"), "machine:N"])
            .transform_filter(alt.datum.step == True)  # noqa: E712 (a Vega expression)
            .properties(name="steps")
        )
        layers.append(steps)
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
            rows.append(
                f"<tr><td><a href='{name}'>{html.escape(str(campaign))}</a></td><td>{html.escape(str(host))}</td>"
                f"<td>{len(invs)}</td><td>{len(by_host)}</td><td>{html.escape(str(invs['first_start'].max()))}</td></tr>"
            )
    body = (
        "<h1>perfsnake history</h1>"
        f"<p class='muted'>Store {html.escape(describe(store.url))}: every invocation's runs. "
        "Pick a campaign; on its page, choose a record, click a machine in a legend, drag or zoom the time axis, "
        "hover a point for its commit, date and value, click it for that invocation's results.</p>"
        "<table><tr><th>campaign</th><th>machine</th><th>invocations</th><th>runs</th><th>latest</th></tr>"
        + "".join(rows)
        + "</table>"
    )
    (out / "index.html").write_text(_page("perfsnake history", body, []))
    return [out / "index.html", *pages]


def _campaign_page(campaign: str, frame: pd.DataFrame) -> str:
    charts = []
    sections = []
    for i, metric in enumerate(views.metrics_of(frame)):
        spec = metric_chart(frame, metric)
        if spec is None:
            continue
        cid = f"chart-{i}"
        charts.append((cid, spec))
        sections.append(
            f"<h2>{html.escape(metric)}</h2><div class='chart' id='{cid}' data-metric='{html.escape(metric)}'></div>"
        )
    invs = frame.drop_duplicates("invocation_id").sort_values("first_start")
    table = "".join(
        f"<tr><td>{html.escape(str(r['first_start']))}</td><td>{html.escape(str(r['hostname']))}</td>"
        f"<td>{html.escape(str(r['invocation_id'])[:12])}</td><td>{html.escape(str(r['perfsnake_commit'] or '')[:12])}</td></tr>"
        for _, r in invs.iterrows()
    )
    body = (
        f"<p><a href='index.html'>all campaigns</a></p><h1>{html.escape(campaign)}</h1>"
        + "".join(sections)
        + "<h2>Invocations</h2><table><tr><th>started</th><th>machine</th><th>invocation</th><th>perfsnake</th></tr>"
        + table
        + "</table>"
    )
    return _page(f"{campaign}: perfsnake history", body, charts)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
