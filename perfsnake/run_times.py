"""Measured run times from the results store, for `batch: auto`
(perfsnake.planning.Batches): the workflow hands planning `lookup(url)`.
Importing this module is cheap; the store (SQLAlchemy) is opened only when a
campaign asks and a store exists."""

from __future__ import annotations

import socket
from collections.abc import Callable

from perfsnake.store_location import default_url, sqlite_file

#: a campaign's name -> (median wall time in s of its latest ok runs on this machine, their number), or None
RunTimes = Callable[[str], "tuple[float, int] | None"]


def lookup(url: str | None) -> RunTimes:
    """The measured run times in the store at `url` (None: the default one)."""

    def run_time(campaign: str) -> tuple[float, int] | None:
        store_url = url or default_url()
        file = sqlite_file(store_url)
        if file is not None and not file.exists():
            return None  # nothing recorded yet
        from perfsnake.history.store import Store

        try:
            return Store.open(store_url, create=False).run_time(campaign, socket.gethostname())
        except Exception:  # noqa: BLE001 - a store that cannot be read (missing, a server down) is no measured time
            return None

    return run_time
