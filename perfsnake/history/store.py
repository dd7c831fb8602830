"""The results store: every invocation's runs, kept across invocations.

SQLAlchemy Core over SQLite (embedded, the default: a file, no server) or
PostgreSQL (a team's shared store: a connection URL). Two tables and a
version row:

- `invocations`: one row per recording that added runs: its id, campaign,
  the campaign file's hash, the machine (host name and the state the
  metadata records), perfsnake's and Snakemake's versions, when it ran;
- `runs`: one row per run, keyed by what makes it that run (campaign, host,
  record, run index and start time), so recording the same run again (a
  resumed campaign, an import of results already recorded) stores nothing;
- `schema_info`: the schema's version. A store from a newer perfsnake is
  refused; an older one is migrated in one transaction (MIGRATIONS).

Writers never lose a row: runs are inserted with ON CONFLICT DO NOTHING on
their key, so two invocations (two machines on one PostgreSQL) may record at
the same time.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from perfsnake.store_location import default_url

SCHEMA_VERSION = 2

metadata = sa.MetaData()

schema_info = sa.Table("schema_info", metadata, sa.Column("version", sa.Integer, nullable=False))

invocations = sa.Table(
    "invocations",
    metadata,
    sa.Column("invocation_id", sa.String(64), primary_key=True),
    sa.Column("campaign", sa.String(200), nullable=False, index=True),
    sa.Column("campaign_sha256", sa.String(64)),
    sa.Column("hostname", sa.String(255), nullable=False, index=True),
    sa.Column("recorded_at", sa.String(32), nullable=False),
    sa.Column("first_start", sa.String(32)),
    sa.Column("last_end", sa.String(32)),
    sa.Column("perfsnake_commit", sa.String(64)),
    sa.Column("source", sa.String(16), nullable=False),  # workflow | import
    sa.Column("results_dir", sa.Text),
    sa.Column("machine", sa.Text),  # JSON: the metadata's machine and state keys
    # JSON: each version variable's values in the campaign's range order (first-parent, oldest first); v2
    sa.Column("version_order", sa.Text),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_key", sa.String(64), primary_key=True),
    sa.Column("invocation_id", sa.String(64), sa.ForeignKey("invocations.invocation_id"), nullable=False, index=True),
    sa.Column("campaign", sa.String(200), nullable=False, index=True),
    sa.Column("hostname", sa.String(255), nullable=False),
    sa.Column("record", sa.Text, nullable=False),  # JSON object of the record's variables, keys sorted
    sa.Column("run", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("start", sa.String(32)),
    sa.Column("end", sa.String(32)),
    sa.Column("wall_s", sa.Float),
    sa.Column("metrics", sa.Text, nullable=False),  # JSON: metric -> value
    sa.Column("versions", sa.Text),  # JSON: version variables -> value (the sources' commits)
)


class StoreError(Exception):
    """The store cannot be used (missing, locked, newer, unreachable): one line."""


def _create_v1(conn: Connection) -> None:
    metadata.create_all(conn)  # today's tables: step 2 then finds its column there


def _add_version_order(conn: Connection) -> None:
    """v2: the commit range's order, so figures over versions follow first-parent history."""
    if "version_order" not in {c["name"] for c in sa.inspect(conn).get_columns("invocations")}:
        conn.execute(sa.text("ALTER TABLE invocations ADD COLUMN version_order TEXT"))


#: version -> the step that brings a store from version-1 to it.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _create_v1, 2: _add_version_order}


def describe(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return url


@dataclass
class Store:
    url: str
    engine: Engine = field(repr=False)

    @classmethod
    def open(cls, url: str | None = None, create: bool = True) -> Store:
        url = url or default_url()
        try:
            parsed = sa.engine.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise StoreError(f"history store {url!r} is not a database URL: {exc}") from None
        if parsed.get_backend_name() == "sqlite" and parsed.database:
            path = Path(parsed.database)
            if not path.exists() and not create:
                raise StoreError(f"history store {path} does not exist")
            path.parent.mkdir(parents=True, exist_ok=True)
            # Concurrent writers wait for each other instead of failing at once.
            engine = sa.create_engine(url, connect_args={"timeout": 60})
        elif parsed.get_backend_name() == "postgresql":
            engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1), pool_pre_ping=True)
        else:
            raise StoreError(f"history store {describe(url)}: only sqlite:/// and postgresql:// URLs are supported")
        store = cls(url, engine)
        store._migrate()
        return store

    def _migrate(self) -> None:
        try:
            with self.engine.begin() as conn:
                if self.engine.dialect.name == "postgresql":
                    # One migrator at a time across machines; released at commit.
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(4242424242)"))
                inspector = sa.inspect(conn)
                version = 0
                if inspector.has_table("schema_info"):
                    version = conn.execute(sa.select(sa.func.max(schema_info.c.version))).scalar() or 0
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"history store {describe(self.url)} has schema version {version}, newer than this "
                        f"perfsnake's {SCHEMA_VERSION}: upgrade perfsnake to record into it"
                    )
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    MIGRATIONS[step](conn)
                if version < SCHEMA_VERSION:
                    conn.execute(sa.delete(schema_info))
                    conn.execute(sa.insert(schema_info).values(version=SCHEMA_VERSION))
        except sa.exc.OperationalError as exc:
            raise StoreError(f"history store {describe(self.url)} cannot be used: {_first_line(exc)}") from None

    def _insert_ignoring_duplicates(self, table: sa.Table) -> Any:
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        return dialect.insert(table).on_conflict_do_nothing()

    def record(self, invocation: dict[str, Any], rows: Sequence[dict[str, Any]]) -> tuple[str | None, int]:
        """Store the runs not yet stored, under a new invocation; (its id, runs
        added). Nothing new: nothing stored, (None, 0)."""
        invocation_id = invocation.get("invocation_id") or uuid.uuid4().hex
        try:
            with self.engine.begin() as conn:
                keys = [r["run_key"] for r in rows]
                known = set()
                for chunk in _chunks(keys, 500):
                    known |= set(conn.execute(sa.select(runs.c.run_key).where(runs.c.run_key.in_(chunk))).scalars())
                new = [r for r in rows if r["run_key"] not in known]
                if not new:
                    return None, 0
                conn.execute(self._insert_ignoring_duplicates(invocations).values(**{**invocation, "invocation_id": invocation_id}))  # fmt: skip
                added = 0
                for chunk in _chunks(new, 500):
                    # RETURNING counts what was inserted: a driver's rowcount of a
                    # batch is -1 or 0 on PostgreSQL.
                    inserted = conn.execute(
                        self._insert_ignoring_duplicates(runs).returning(runs.c.run_key),
                        [{**r, "invocation_id": invocation_id} for r in chunk],
                    )
                    added += len(inserted.all())
                return invocation_id, added
        except sa.exc.OperationalError as exc:
            raise StoreError(f"history store {describe(self.url)} cannot be written: {_first_line(exc)}") from None

    def frame(self, campaign: str | None = None, hostname: str | None = None, since: str | None = None) -> Any:
        """Every stored run (joined with its invocation) as a pandas DataFrame."""
        import pandas as pd

        query = (
            sa.select(
                runs,
                invocations.c.recorded_at,
                invocations.c.first_start,
                invocations.c.perfsnake_commit,
                invocations.c.results_dir,
                invocations.c.machine,
                invocations.c.version_order,
            )
            .join(invocations, runs.c.invocation_id == invocations.c.invocation_id)
            .order_by(invocations.c.first_start, runs.c.start)
        )
        if campaign:
            query = query.where(runs.c.campaign == campaign)
        if hostname:
            query = query.where(runs.c.hostname == hostname)
        if since:
            query = query.where(runs.c.start >= since)
        with self.engine.connect() as conn:
            return pd.DataFrame(conn.execute(query).mappings().all())

    def run_time(self, campaign: str, hostname: str, latest: int = 1000) -> tuple[float, int] | None:
        """The median wall time of the campaign's `latest` ok runs on a host,
        and how many there were (None without any): what `batch: auto` sizes
        a new results directory's batches from."""
        import statistics

        query = (
            sa.select(runs.c.wall_s)
            .where(
                runs.c.campaign == campaign,
                runs.c.hostname == hostname,
                runs.c.status == "ok",
                runs.c.wall_s.is_not(None),
            )  # fmt: skip
            .order_by(runs.c.start.desc())
            .limit(latest)
        )
        with self.engine.connect() as conn:
            times = [float(t) for (t,) in conn.execute(query)]
        return (statistics.median(times), len(times)) if times else None

    def campaigns(self) -> list[tuple[str, str, int]]:
        """(campaign, host, invocations) for every campaign and machine stored."""
        query = (
            sa.select(invocations.c.campaign, invocations.c.hostname, sa.func.count())
            .group_by(invocations.c.campaign, invocations.c.hostname)
            .order_by(invocations.c.campaign, invocations.c.hostname)
        )
        with self.engine.connect() as conn:
            return [(c, h, int(n)) for c, h, n in conn.execute(query)]

    def counts(self) -> tuple[int, int]:
        with self.engine.connect() as conn:
            return (
                int(conn.execute(sa.select(sa.func.count()).select_from(invocations)).scalar() or 0),
                int(conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar() or 0),
            )


def run_key(campaign: str, hostname: str, record: str, run: int, start: str | None) -> str:
    """What makes a run that run: the same measurement recorded twice has one key."""
    text = json.dumps([campaign, hostname, record, run, start or ""])
    return hashlib.sha256(text.encode()).hexdigest()


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__
