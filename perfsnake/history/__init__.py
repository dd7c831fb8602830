"""History: every invocation's runs kept in a results store, and what it shows.

- `store`: the database (SQLite by default, PostgreSQL for a team), its schema and migrations;
- `sources`: a results directory or artifact zip, read as the store's rows;
- `views`: the recent past beside the latest invocation, figures over time and commits;
- `dashboard`: the static site `perfsnake history publish` writes.
"""

from __future__ import annotations

from pathlib import Path

from perfsnake.history.sources import Recording, SourceError, campaign_dirs, opened, read_campaign
from perfsnake.history.store import Store, StoreError


def import_path(path: Path, url: str | None = None) -> list[str]:
    """Record every campaign under a results directory or in an artifact zip;
    one line per campaign saying what was added."""
    store = Store.open(url)
    lines = []
    with opened(path) as directory:
        dirs = campaign_dirs(directory)
        if not dirs:
            raise SourceError(f"{path}: no campaign results (a campaign.json) found")
        for d in dirs:
            rec = read_campaign(d, source="import")
            if not directory.samefile(path):  # a zip: name it, not the scratch directory
                rec.invocation["results_dir"] = f"{path.resolve()}!{d.relative_to(directory)}"
            lines.append(_line(rec, *store.record(rec.invocation, rec.rows), store))
    return lines


def record_recording(rec: Recording, url: str | None = None) -> str:
    store = Store.open(url)
    return _line(rec, *store.record(rec.invocation, rec.rows), store)


def _line(rec: Recording, invocation: str | None, added: int, store: Store) -> str:
    from perfsnake.history.store import describe

    where = describe(store.url)
    if not added:
        return f"history: {rec.campaign}: nothing new ({len(rec.rows)} run(s) already in {where})"
    return f"history: {rec.campaign}: {added} run(s) recorded as invocation {invocation[:12] if invocation else '?'} in {where}"


__all__ = ["Store", "StoreError", "SourceError", "import_path", "record_recording", "read_campaign", "campaign_dirs"]
