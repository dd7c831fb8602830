"""Turning one run's raw outputs into result.json."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perfsnake import expressions, layout, safefile
from perfsnake.benchmarks.base import Benchmark
from perfsnake.contract import Statistics
from perfsnake.escape import record_path
from perfsnake.instruments import Instruments
from perfsnake.machine import state as machine_state
from perfsnake.machine.usage import run_usage
from perfsnake.platforms import PLATFORM_FILE
from perfsnake.statistics.changepoints import SteadyState, steady_segment
from perfsnake.statistics.summaries import work_per_second

if TYPE_CHECKING:
    from perfsnake.campaign import Campaign
    from perfsnake.planning import CampaignIndex

RESULT_FILE = "result.json"
STDERR_TAIL = 2000


def read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def collect_run(
    run_dir: Path,
    benchmark: Benchmark,
    params: Mapping[str, object],
    variables: Mapping[str, object],
    campaign: str,
    run: int,
    instruments: Instruments | None = None,
    warmup: str = "changepoint",
) -> dict[str, object]:
    """Parse a finished run; the result keeps failures as data."""
    status = json.loads((run_dir / "status.json").read_text())
    stdout = read_text(run_dir / "stdout.txt")
    stderr = read_text(run_dir / "stderr.txt")
    parse_errors: list[str] = []
    try:
        metrics = benchmark.parse(stdout, stderr, params)
    except Exception as exc:  # noqa: BLE001 - an unparsable run is data, not a crash
        metrics = {name: None for name in benchmark.metrics}
        parse_errors.append(f"{benchmark.name}: {exc!r}")
    from_files, problems = benchmark.file_metrics(run_dir)
    metrics.update(from_files)
    parse_errors += problems
    own_metrics = dict(metrics)
    hooks: list[dict] = []
    units: dict[str, str] = benchmark.units()
    if instruments is not None:
        try:
            metrics.update(instruments.metrics(run_dir))
            units.update(instruments.units(run_dir))
        except Exception as exc:  # noqa: BLE001
            parse_errors.append(f"instruments: {exc!r}")
        hooks_file = run_dir / "hooks.json"
        if hooks_file.exists():
            hooks = json.loads(hooks_file.read_text())
            for entry in hooks:
                metrics.update(entry.get("metrics") or {})
    state = status["status"]
    if state == "ok" and own_metrics and all(v is None for v in own_metrics.values()):
        # Exit code 0 but nothing to measure: treat as a failure, keep the data.
        state = "failed"
        status["reason"] = "no metric found in the output"
    result: dict[str, object] = {
        "campaign": campaign,
        "benchmark": benchmark.name,
        "variables": dict(variables),
        "run": run,
        "metrics": metrics,
        "status": state,
        "exit_code": status["exit_code"],
        "signal": status.get("signal", 0),
        "wall_s": status["wall_s"],
        "start": status["start"],
        "end": status["end"],
        "start_epoch": status["start_epoch"],
        "end_epoch": status["end_epoch"],
        "utime_s": status.get("utime_s"),
        "stime_s": status.get("stime_s"),
        "maxrss_kb": status.get("maxrss_kb"),
        # The machine that measured (a compute node, on a cluster).
        "host": status.get("host"),
        "slurm_job_id": status.get("slurm_job_id") or None,
        "slurm_node": status.get("slurm_node") or None,
        "run_dir": str(run_dir),
    }
    series = benchmark.time_series(stdout) if state == "ok" and warmup != "wps" else None
    readings = benchmark.readings(stdout) if state == "ok" and warmup == "wps" else None
    if readings:
        # Pilot's work-per-second regression t = alpha + w / v: v without the
        # fixed per-reading overhead alpha.
        name, pairs = readings
        v, alpha, r2 = work_per_second(np.asarray([t for _w, t in pairs]), np.asarray([w for w, _t in pairs]))
        metrics[f"{name}_wps"] = v
        metrics["wps_alpha_s"] = alpha
        metrics["wps_r2"] = r2
    if series:
        name, values = series
        write_samples(run_dir, values)
        steady = (
            steady_segment(np.asarray(values))
            if warmup == "changepoint"
            else SteadyState(0, len(values), len(values), "none")
        )
        stable = values[steady.start : steady.end]
        metrics[f"{name}_steady"] = float(np.mean(stable)) if stable else None
        result["steady"] = {
            "start": steady.start,
            "end": steady.end,
            "samples": steady.n,
            "removed": steady.removed,
            "method": steady.method,
        }
    if hooks:
        result["hooks"] = hooks
        flagged = sorted({b for entry in hooks for b in entry.get("bottlenecks") or []})
        if any("bottlenecks" in entry for entry in hooks):
            result["bottlenecks"] = flagged
    if units:
        result["units"] = units
    if parse_errors:
        result["parse_errors"] = parse_errors
    if "reason" in status:
        result["reason"] = status["reason"]
    state_file = run_dir / machine_state.STATE_FILE
    facts = _remote_facts(run_dir)
    if facts:
        result["platform"] = facts
    recorded = json.loads(state_file.read_text()) if state_file.exists() else {}
    # The launcher's snapshots around the run, taken where it ran (a remote
    # host, a container). A run recorded before the launcher took them has
    # them in machine.json, which over ssh described this machine instead.
    around = status.get("machine")
    if not isinstance(around, dict):
        around = recorded if recorded and not facts else None
    if around is not None:
        cpu = (status.get("utime_s") or 0.0) + (status.get("stime_s") or 0.0)
        result["machine"] = machine_state.summarise(around.get("before") or {}, around.get("after") or {}, cpu)
    usage = run_usage(status)
    if usage:
        result["usage"] = usage
    if isinstance(recorded.get(machine_state.IDENTITY), dict) and not facts:
        result["machine_state"] = recorded[machine_state.IDENTITY]  # state_drift: collect_campaign
    unparsed = [name for name, value in own_metrics.items() if value is None]
    if state == "ok" and unparsed:
        result["unparsed"] = unparsed
    # How far "nothing outlives the run" went, and links the benchmark left.
    if status.get("containment"):
        result["containment"] = status["containment"]
    if status.get("links"):
        result["links"] = status["links"]
    if state != "ok":
        result["stderr_tail"] = stderr[-STDERR_TAIL:]
    return result


def _remote_facts(run_dir: Path) -> dict[str, object]:
    """What an ssh run's host said of itself (its platform.json; {} for a run made here)."""
    path = run_dir / PLATFORM_FILE
    if not path.exists():
        return {}
    facts = json.loads(path.read_text())
    if facts.get("type") != "ssh":
        return {}
    return {k: v for k, v in facts.items() if k != "type" and not str(k).startswith("remote_")}


def unparsed_line(campaign: str, label: str, result: Mapping[str, object]) -> str | None:
    """One loud line for a run whose output a metric regex did not match."""
    if result.get("unparsed"):
        names = ", ".join(result["unparsed"])  # type: ignore[arg-type]
        return f"[perfsnake] {campaign}: run {label} UNPARSED: no match for {names} (the cell stays empty; fix the regex and re-run: only collect re-runs)"
    if result.get("reason") == "no metric found in the output":
        return f"[perfsnake] {campaign}: run {label} FAILED: exit code 0 but no metric found in the output"
    return None


def write_samples(run_dir: Path, values: list[float]) -> None:
    lines = ["index,value"] + [f"{i},{v!r}" for i, v in enumerate(values)]
    safefile.write_text(run_dir / "samples.csv", "\n".join(lines) + "\n")


def write_result(run_dir: Path, result: Mapping[str, object]) -> None:
    """result.json, created fresh and renamed: a link the benchmark planted
    in its run directory is replaced, never written through."""
    safefile.write_text(run_dir / RESULT_FILE, json.dumps(result, indent=2, sort_keys=True, default=str) + "\n")


# ---- the collect rule's job body --------------------------------------------------
def collect_record_run(c: Campaign, record_path: str, run: int, workdir: Path) -> dict[str, object]:
    """A run of a campaign parsed with the campaign's own settings (one place for
    collect and the precision checkpoint, so both see the same values)."""
    record = c.by_path[record_path]
    rdir = layout.here(layout.run_dir(c.name, record_path, run), workdir)
    result = collect_run(rdir, c.benchmark, c.run_params(record), record.values, c.name, run, c.instruments,
                         warmup=Statistics.from_dict(c.data["statistics"]).warmup)  # fmt: skip
    if c.derived:
        metrics: dict[str, object] = result["metrics"]  # type: ignore[assignment]
        values = {**record.values, "wall_s": result["wall_s"], **metrics}
        for name, tree in c.derived.items():
            values[name] = metrics[name] = expressions.evaluate(tree, values)
    return result


def collect_campaign(
    index: CampaignIndex,
    name: str,
    status_files: list[str],
    results_file: str,
    log_file: str,
    decision_file: str | None = None,
) -> None:
    """Parse every run of the campaign into its result.json and results_file."""
    c = index.campaigns[name]
    if c.imported:
        _write_results(results_file, log_file, *imported_results(c))
        return
    workdir = Path.cwd()
    lines = []
    results = []
    final = json.loads(Path(decision_file).read_text()) if decision_file else {}
    # A decide campaign has no precision target: its answer is decisions.csv.
    decision = final["records"] if final and final.get("mode") != "decide" else {}
    labels = []
    for status in status_files:
        path, i = layout.split_status(name, status)
        result = collect_record_run(c, path, i, workdir)
        if path in decision:
            result["precision"] = {k: decision[path][k] for k in ("met", "rel_ci", "ok")}
        results.append(result)
        labels.append((path, i))
    # Each run's machine state against the campaign's first run's (all runs are needed first).
    machine_state.annotate_drift(results, c.instruments.state_set())
    for (path, i), result in zip(labels, results, strict=True):
        write_result(layout.here(layout.run_dir(name, path, i), workdir), result)
        lines.append(f"{path}/run-{i}: {result['status']} {json.dumps(result['metrics'], default=str)}\n")
        loud = unparsed_line(name, f"{path}/run-{i}", result)
        if loud:
            print(loud, file=sys.stderr, flush=True)
    _write_results(results_file, log_file, results, lines)


def _write_results(results_file: str, log_file: str, results: list[dict], lines: list[str]) -> None:
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(log_file).write_text("".join(lines))
    tmp = Path(results_file + ".tmp")
    tmp.write_text(json.dumps(results, default=str) + "\n")
    tmp.replace(results_file)


def imported_results(c: Campaign) -> tuple[list[dict], list[str]]:
    """An imported campaign's runs as results: one per measurement another
    tool made, numbered per record in the files' order. They have no start
    time of their own: every `start_epoch` is 0, so the CSV keeps that order."""
    from perfsnake.benchmarks.imported import ImportedBenchmark

    bench = c.benchmark
    assert isinstance(bench, ImportedBenchmark)
    data = bench.imported
    counts: dict[str, int] = {}
    results: list[dict] = []
    lines = []
    for row in data.rows:
        path = record_path(row.record, c.variables)
        counts[path] = run = counts.get(path, 0) + 1
        result: dict[str, object] = {
            "campaign": c.name, "benchmark": data.tool, "variables": dict(row.record), "run": run,
            "metrics": dict(row.metrics), "status": row.status, "exit_code": row.exit_code, "signal": 0,
            "wall_s": row.wall_s, "start": "", "end": "", "start_epoch": 0.0, "end_epoch": 0.0,
            "units": dict(data.units), "imported": True, "run_dir": "",
        }  # fmt: skip
        if row.reason:
            result["reason"] = row.reason
        results.append(result)
        lines.append(f"{path}/run-{run}: {row.status} {json.dumps(row.metrics, default=str)}\n")
    failed = sum(1 for r in data.rows if r.status != "ok")
    if failed:
        print(f"[perfsnake] {c.name}: {failed} of {len(data.rows)} imported runs FAILED in {data.tool}'s own results",
              file=sys.stderr, flush=True)  # fmt: skip
    return results, lines
