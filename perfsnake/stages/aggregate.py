"""The campaign's aggregated CSV (with # metadata lines), JSON rows and commands.sh."""

from __future__ import annotations

import json
from pathlib import Path

from perfsnake.campaign.selection import selection_line
from perfsnake.campaign_csv import write_csv
from perfsnake.contract import CampaignInfo
from perfsnake.machine.metadata import host_metadata
from perfsnake.machine.requirements import requirement_metadata
from perfsnake.machine.state import drift_text
from perfsnake.platforms import PLATFORM_FILE

BASE_COLUMNS = ("campaign", "benchmark")
TAIL_COLUMNS = ("status", "exit_code", "wall_s", "start", "end")
DRIFT_COLUMN = "machine.state_drift"


def load_results(results_file: str | Path) -> list[dict]:
    """The campaign's collected results (a JSON list, one entry per run)."""
    return json.loads(Path(results_file).read_text())


def rows_of(results: list[dict], variables: list[str], metrics: list[str]) -> tuple[list[dict], list[str]]:
    """Flat rows and the column order: header from the union of keys, never ragged."""
    metric_cols = list(metrics)
    for res in results:
        for key in res["metrics"]:
            if key not in metric_cols:
                metric_cols.append(key)
    machine_cols = sorted({f"machine.{k}" for res in results for k in (res.get("machine") or {})})
    # What each run used and waited for (perfsnake.machine.usage).
    machine_cols += sorted({f"usage.{k}" for res in results for k in (res.get("usage") or {})})
    # Over ssh, what each run's host said of itself: a fleet's rows differ by host.
    machine_cols += sorted({f"platform.{k}" for res in results for k in (res.get("platform") or {})})
    # What of the machine's state differs from the campaign's first run (perfsnake.machine.state), empty when nothing.
    drift_cols = [DRIFT_COLUMN] if any("machine_state" in res for res in results) else []
    columns = [*BASE_COLUMNS, *variables, "run", *metric_cols, *TAIL_COLUMNS, *machine_cols, *drift_cols]
    rows = []
    for res in sorted(results, key=lambda r: r["start_epoch"]):
        row = {"campaign": res["campaign"], "benchmark": res["benchmark"]}
        row.update({v: res["variables"].get(v) for v in variables})
        row["run"] = res["run"]
        row.update({m: res["metrics"].get(m) for m in metric_cols})
        row.update({k: res[k] for k in TAIL_COLUMNS})
        row.update({c: (res.get(c.split(".")[0]) or {}).get(c.split(".", 1)[1]) for c in machine_cols})
        if drift_cols:
            row[DRIFT_COLUMN] = drift_text(res.get("state_drift") or {})
        rows.append(row)
    return rows, columns


def footer(results: list[dict]) -> dict[str, object]:
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("ok", "failed", "timeout", "hook_failed")}
    if results:
        first = min(r["start_epoch"] for r in results)
        last = max(r["end_epoch"] for r in results)
        span = last - first
        busy = sum(r["wall_s"] or 0.0 for r in results)  # an imported run may have none
    else:
        span = busy = 0.0
    foot: dict[str, object] = {
        "total_duration_s": round(span, 3),
        "total_benchmark_time_s": round(busy, 3),
        "runs": len(results),
        "runs_ok": counts["ok"],
        "runs_failed": counts["failed"],
        "runs_timeout": counts["timeout"],
        "runs_hook_failed": counts["hook_failed"],
    }
    # Where the runs were measured (compute nodes on a cluster; the remote
    # host over ssh), from each run's status.
    hosts = sorted({str(r["host"]) for r in results if r.get("host")})
    if hosts:
        foot["run_hosts"] = ",".join(hosts)
    return foot


def write_commands(path: Path, results: list[dict]) -> None:
    """Every executed command, in start order, as one runnable script."""
    parts = ["#!/bin/sh\n# Every command perfsnake executed for this campaign, in the order it ran.\n"]
    for res in sorted(results, key=lambda r: r["start_epoch"]):
        script = Path(res["run_dir"]) / "command.sh"
        body = (
            [ln for ln in script.read_text().splitlines() if ln and not ln.startswith("#")] if script.exists() else []
        )
        parts.append(f"\n# {res['start']} {res['run_dir']} -> {res['status']} (exit {res['exit_code']})\n")
        parts.append("(\n" + "\n".join(f"  {ln}" for ln in body) + "\n)\n")
    path.write_text("".join(parts))


def platform_metadata(results: list[dict], kind: str) -> dict[str, object]:
    """Where the runs executed, when not here: the first run's platform.json
    (the remote host's facts for ssh; engine, image and image id for containers)."""
    if kind == "local":
        return {"platform": "local"}
    hosts = {
        (str(res["platform"].get("target")), str(res["platform"].get("port"))) for res in results if res.get("platform")
    }
    if len(hosts) > 1:  # a fleet: one host's facts would misdescribe the others' rows
        return {"platform": kind, "platform_hosts": len(hosts), "platform_facts": "per row (platform.* columns)"}
    for res in results:
        path = Path(res["run_dir"]) / PLATFORM_FILE
        if path.exists():
            facts = json.loads(path.read_text())
            return {
                "platform": kind,
                **{f"platform_{k}": v for k, v in facts.items() if k != "type" and not str(k).startswith("remote_")},
            }
    return {"platform": kind}


def aggregate(
    results_file: str | Path, info: CampaignInfo, csv_path: Path, json_path: Path, commands_path: Path
) -> None:
    results = load_results(results_file)
    rows, columns = rows_of(results, list(info.variables), list(info.metrics))
    head: dict[str, object] = {
        "campaign": info.name,
        "campaign_file": info.file,
        "campaign_sha256": info.sha256,
        "benchmark": info.benchmark,
        # Imported results say what their tool recorded of its machine, not this one's.
        **(dict(info.imported) if info.imported else host_metadata()),
    }
    if not info.imported:
        head |= platform_metadata(results, info.platform)
        # The campaign's required machine state and what of it was unmet (perfsnake.machine.requirements).
        head |= requirement_metadata(info.requires)
    if info.selection:  # which records this invocation chose (--config only=...)
        head["selection"] = selection_line(info.selection)
    units: dict[str, str] = {}
    for res in results:
        units.update(res.get("units") or {})
    if units:
        head["metric_units"] = ", ".join(f"{k}={v}" for k, v in sorted(units.items()))
    foot = footer(results)
    write_csv(Path(csv_path), rows, columns, head, foot)
    Path(json_path).write_text(
        json.dumps({"metadata": {**head, **foot}, "columns": columns, "rows": rows}, indent=1, default=str) + "\n"
    )
    write_commands(Path(commands_path), results)
