"""What a results directory (or an artifact zip) holds, as rows for the store.

A campaign's directory has `campaign.json` (its variables, metrics and
version variables) and `<campaign>.json` (the aggregated runs and the `#`
metadata): both written by the workflow, so the store reads what the CSV
says, with every value's type intact.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfsnake.history.store import now, run_key

#: Metadata that describes the run's bookkeeping, not the machine.
NOT_MACHINE = ("runs", "runs_ok", "runs_failed", "runs_timeout", "runs_hook_failed", "total_benchmark_time_s",
               "total_duration_s", "campaign", "campaign_file", "campaign_sha256", "utc_time", "load_average")  # fmt: skip


class SourceError(Exception):
    """Nothing recordable where the user pointed: one line."""


@dataclass
class Recording:
    """One campaign's results, ready for Store.record."""

    campaign: str
    invocation: dict[str, Any]
    rows: list[dict[str, Any]]


def campaign_dirs(path: Path) -> list[Path]:
    """Every campaign directory at or under `path` (a campaign's, results/, a checkout)."""
    if (path / "campaign.json").is_file():
        return [path]
    found = sorted(p.parent for p in path.glob("**/campaign.json") if "runs" not in p.relative_to(path).parts)
    # Derived campaigns (controls, profiles of differences, noise floors) belong to their campaign's study.
    return [p for p in found if "__" not in p.name]


def read_campaign(directory: Path, source: str = "workflow") -> Recording:
    """The runs of one campaign directory (its aggregated JSON must exist)."""
    info = json.loads((directory / "campaign.json").read_text())
    name = str(info["name"])
    rows_file = directory / f"{name}.json"
    if not rows_file.is_file():
        raise SourceError(f"{directory}: no {rows_file.name} (the campaign has not been aggregated)")
    data = json.loads(rows_file.read_text())
    meta: dict[str, Any] = data.get("metadata") or {}
    hostname = str(meta.get("hostname") or "unknown")
    variables = [str(v) for v in info.get("variables") or []]
    metrics = [str(m) for m in info.get("metrics") or []]
    versions = [str(v) for v in info.get("versions") or []]
    rows = []
    for row in data.get("rows") or []:
        record = json.dumps({v: row.get(v) for v in variables}, sort_keys=True)
        values = {m: row.get(m) for m in metrics if m in row}
        values["wall_s"] = row.get("wall_s")
        # A run over ssh (a fleet's) ran on the host it reported, not on the machine that aggregated.
        ran_on = str(row.get("platform.hostname") or hostname)
        rows.append(
            {
                "run_key": run_key(name, ran_on, record, int(row.get("run") or 0), row.get("start")),
                "campaign": name,
                "hostname": ran_on,
                "record": record,
                "run": int(row.get("run") or 0),
                "status": str(row.get("status") or "failed"),
                "start": row.get("start"),
                "end": row.get("end"),
                "wall_s": row.get("wall_s"),
                "metrics": json.dumps(values, sort_keys=True, default=str),
                "versions": json.dumps({v: row.get(v) for v in versions}, sort_keys=True, default=str),
            }
        )
    starts = sorted(r["start"] for r in rows if r["start"])
    ends = sorted(r["end"] for r in rows if r["end"])
    invocation = {
        "campaign": name,
        "campaign_sha256": meta.get("campaign_sha256") or info.get("sha256"),
        "hostname": hostname,
        "recorded_at": now(),
        "first_start": starts[0] if starts else None,
        "last_end": ends[-1] if ends else None,
        "perfsnake_commit": meta.get("perfsnake_commit"),
        "source": source,
        "results_dir": str(directory.resolve()),
        "machine": json.dumps({k: v for k, v in meta.items() if k not in NOT_MACHINE}, sort_keys=True, default=str),
        # A commit range's values are first-parent order, oldest first (perfsnake.versions).
        "version_order": json.dumps({v: (info.get("values") or {}).get(v, []) for v in versions}) if versions else None,
    }
    return Recording(name, invocation, rows)


@contextmanager
def opened(path: Path) -> Iterator[Path]:
    """A directory to read: `path` itself, or an artifact zip unpacked to a scratch one."""
    if path.is_dir():
        yield path
        return
    if not zipfile.is_zipfile(path):
        raise SourceError(f"{path}: neither a results directory nor a zip")
    with tempfile.TemporaryDirectory(prefix="perfsnake-history-") as tmp:
        with zipfile.ZipFile(path) as zf:
            for member in zf.infolist():
                target = (Path(tmp) / member.filename).resolve()
                if not target.is_relative_to(Path(tmp).resolve()):
                    raise SourceError(f"{path}: entry {member.filename!r} points outside the archive")
            zf.extractall(tmp)
        yield Path(tmp)
