"""The history rule (rules/history.smk): a finished campaign's runs recorded in the results store.

Never costs the campaign its files: a store that is missing, locked, from a
newer schema or unreachable leaves the results as they are, says so in one
line with the command that records them later, and only in strict mode fails
the invocation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from perfsnake.history import StoreError, read_campaign, record_recording
from perfsnake.history.sources import SourceError
from perfsnake.history.store import default_url, describe


def record(campaign_dir: Path, url: str | None, strict: bool, out: Path, page: Path | None = None) -> dict[str, object]:
    """Record the campaign's runs; `out` says what happened (the rule's
    output), `page` shows the campaign's history (the report's page)."""
    url = url or default_url()
    if url == "off":
        outcome: dict[str, object] = {"recorded": False, "reason": "history is off"}
    else:
        try:
            rec = read_campaign(campaign_dir)
            line = record_recording(rec, url)
            outcome = {"recorded": True, "line": line, "runs": len(rec.rows)}
            print(f"[perfsnake] {line}", file=sys.__stderr__, flush=True)
        except (StoreError, SourceError) as exc:
            how = f"perfsnake history import {campaign_dir}"
            outcome = {"recorded": False, "reason": str(exc), "record_later": how}
            print(f"[perfsnake] history: {campaign_dir.name} NOT recorded: {exc} (later: {how})", file=sys.__stderr__, flush=True)  # fmt: skip
            if strict:
                raise
    out.write_text(json.dumps({"store": describe(url), **outcome}, indent=1) + "\n")
    if page is not None:
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(history_page(campaign_dir.name, url, outcome))
    return outcome


def history_page(campaign: str, url: str, outcome: dict[str, object]) -> str:
    """The report's history page: the recent past on this machine, or why there is none."""
    from perfsnake.pages import html as html_render
    from perfsnake.pages.model import Document, Figure, Paragraph, Preformatted

    doc = Document(f"{campaign}: history")
    if not outcome.get("recorded"):
        doc.add(Paragraph(f"Not recorded in the results store: {outcome.get('reason')}."))
    else:
        try:
            from perfsnake.history import views
            from perfsnake.history.store import Store

            frame = Store.open(url, create=False).frame(campaign)
            metric = (views.metrics_of(frame) or ["wall_s"])[0]
            doc.add(Paragraph(f"Store {describe(url)}; metric {metric}."))
            doc.add(Preformatted(views.show(frame, campaign, metric)))
            chart = views.figure(frame, metric)
            if chart is not None:
                import vl_convert

                svg = vl_convert.vegalite_to_svg(chart.to_json())
                doc.add(Figure(f"{metric} over the recorded invocations", data=svg.encode()))
        except (StoreError, OSError, ValueError) as exc:
            doc.add(Paragraph(f"The store could not be read: {exc}."))
    return html_render.render(doc)
