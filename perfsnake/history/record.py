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


def record(campaign_dir: Path, url: str | None, strict: bool, out: Path) -> dict[str, object]:
    """Record the campaign's runs; `out` says what happened (the rule's output)."""
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
    return outcome
