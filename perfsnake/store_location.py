"""Where the results store is, without opening it: no SQLAlchemy, no
perfsnake.history package (whose import opens both), for the workflow's
start-up (perfsnake.run_times) as well as for the store itself."""

from __future__ import annotations

import os
from pathlib import Path

STORE_ENV = "PERFSNAKE_HISTORY"


def default_url() -> str:
    """$PERFSNAKE_HISTORY, else a SQLite file in the user's data directory
    (it outlives `make clean` and spans checkouts)."""
    if os.environ.get(STORE_ENV):
        return os.environ[STORE_ENV]
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{base / 'perfsnake' / 'history.sqlite'}"


def sqlite_file(url: str) -> Path | None:
    """The file of a `sqlite:///PATH` store (None for a server's URL)."""
    prefix = "sqlite:///"
    return Path(url[len(prefix) :].split("?", 1)[0]) if url.startswith(prefix) else None
