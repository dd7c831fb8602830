"""The end of an invocation (Snakemake's onsuccess/onerror): per campaign, how
its runs went, where its files are, its top significant differences; and, in
strict mode, a non-zero exit when any run failed or did not parse."""

from __future__ import annotations

import csv
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout
from perfsnake.values import config_flag

if TYPE_CHECKING:
    from perfsnake.planning import CampaignIndex

STRICT_ENV = "PERFSNAKE_STRICT"


@dataclass
class Outcome:
    campaign: str
    counts: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    top: list[str] = field(default_factory=list)
    bottlenecks: str = ""  # "disk:vda in 3 of 12 runs, ..." (the monitor's)
    unstable: int = 0  # records with stability warnings in summary.csv
    drift: str = ""  # "1 of 12 runs (thp)": measured in another machine state than the first run

    @property
    def bad(self) -> int:
        return sum(n for state, n in self.counts.items() if state != "ok")


def strict_mode(config: dict) -> bool:
    return config_flag(config, "strict") or os.environ.get(STRICT_ENV, "") not in (
        "",
        "0",
        "false",
        "no",
    )


def _results(campaign: str) -> list[dict]:
    """The campaign's per-run results (results.json), read once for the summary."""
    path = Path(layout.results_json(campaign))
    return json.loads(path.read_text()) if path.exists() else []


def _counts(results: list[dict]) -> dict[str, int]:
    counts = {"ok": 0, "failed": 0, "timeout": 0, "unparsed": 0}
    for result in results:
        state = result.get("status", "failed")
        if state == "ok" and result.get("unparsed"):
            state = "unparsed"
        counts[state] = counts.get(state, 0) + 1
    return counts


def _bottlenecks(results: list[dict]) -> str:
    """Each component the bottleneck monitor flagged, in how many of the runs it watched."""
    watched = [r for r in results if "bottlenecks" in r]
    counts: dict[str, int] = {}
    for result in watched:
        for name in result["bottlenecks"] or []:
            counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{name} in {n} of {len(watched)} runs" for name, n in sorted(counts.items()))


def _state_drift(results: list[dict]) -> str:
    """How many runs were measured in another machine state than the
    campaign's first (collect's state_drift), and which keys changed."""
    checked = [r["state_drift"] for r in results if "state_drift" in r]
    drifted = [d for d in checked if d]
    keys = ", ".join(dict.fromkeys(k for d in drifted for k in d))
    return f"{len(drifted)} of {len(checked)} runs ({keys})" if drifted else ""


def _unstable_records(campaign: str, variables: list[str]) -> int:
    """Records that carry a stability or machine warning in summary.csv."""
    path = Path(layout.summary(campaign))
    if not path.exists():
        return 0
    from perfsnake.statistics.records import stat_column  # numpy: only when there is a summary to read

    flags = stat_column("flags", variables)
    with path.open(newline="") as f:
        return len({tuple(r.get(v) for v in variables) for r in csv.DictReader(f) if r.get(flags)})


def _top_differences(campaign: str, metrics: list[str], n: int = 3) -> list[str]:
    """The largest significant differences, among `metrics` when any is there
    (what the campaign plots: not an instrument's counters, which follow the
    thread count by construction)."""
    path = Path(layout.comparisons(campaign))
    if not path.exists():
        return []
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("significant") in ("True", "true", "1")]
    rows = [r for r in rows if r.get("metric") in metrics] if metrics else rows

    def size(row: dict[str, str]) -> float:
        try:
            return abs(float(row.get("relative_difference") or 0))
        except ValueError:
            return 0.0

    out = []
    for row in sorted(rows, key=size, reverse=True)[:n]:
        rel = float(row.get("relative_difference") or 0)
        where = f" ({row['fixed']})" if row.get("fixed") else ""
        p = row.get("p_adjusted") or row.get("p_value") or "nan"
        label = "adjusted p" if row.get("p_adjusted") else "p"
        out.append(
            f"{row.get('metric')}: {row.get('variable')} {row.get('a')} -> {row.get('b')}{where}: {rel:+.1%}, {label} = {float(p):.2g}"
        )
    return out


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else [value]


def outcomes(index: CampaignIndex) -> list[Outcome]:
    out = []
    for name, c in index.campaigns.items():
        if c.control_of or c.why_of:
            continue
        files = [p for p in (layout.csv(name), layout.summary(name), layout.significant(name), layout.noise_floor(name))
                 if Path(p).exists()]  # fmt: skip
        files += [p for plot in c.plots for p in [layout.plot(name, plot["name"], "png")] if Path(p).exists()]
        plotted = [str(m) for plot in c.plots for m in [*_as_list(plot["y"]), *plot.get("metrics", [])]]
        top = _top_differences(name, plotted or list(c.benchmark.metrics))
        results = _results(name)
        out.append(Outcome(name, _counts(results), files, top, _bottlenecks(results),
                           _unstable_records(name, list(c.variables)), _state_drift(results)))  # fmt: skip
    return out


def report(index: CampaignIndex, config: dict, succeeded: bool) -> int:
    """Print the summary; the exit status strict mode asks for (0 otherwise)."""
    lines = [
        "",
        "[perfsnake] summary" + ("" if succeeded else " (the workflow stopped on an error; resume with `make resume`)"),
    ]
    found = outcomes(index)
    for o in found:
        counts = ", ".join(f"{n} {state}" for state, n in o.counts.items() if n or state == "ok")
        lines.append(f"  {o.campaign}: {counts}")
        if o.files:
            lines.append(f"    files: {' '.join(o.files)}; report: snakemake --report report.html")
        for diff in o.top:
            lines.append(f"    significant: {diff}")
        if o.bottlenecks:
            lines.append(f"    bottlenecks (the monitor, not under test): {o.bottlenecks}")
        if o.unstable:
            lines.append(f"    warnings: {o.unstable} record(s) flagged in summary.csv (significant.md says why)")
        if o.drift:
            lines.append(f"    machine state drift: {o.drift} measured in another state than the campaign's first run"
                         " (machine.state_drift in the CSV)")  # fmt: skip
        gates = _gate_counts(o.campaign)
        if gates:
            lines.append(f"    gates: {gates} (`perfsnake check` lists the others and fails on a failed gate)")
    # Imported runs were measured by another tool: nothing here can re-run them.
    bad = sum(o.bad for o in found if not index.campaigns[o.campaign].imported)
    bad_imported = sum(o.bad for o in found if index.campaigns[o.campaign].imported)
    strict = strict_mode(config)
    note = " (strict mode: exit status 1)" if strict else ""
    if bad:
        lines.append(
            f"  {bad} run(s) failed, timed out or did not parse: `perfsnake failed` lists them, `make rerun-failed` re-runs them{note}"
        )
    if bad_imported:
        lines.append(
            f"  {bad_imported} imported run(s) failed in their own tool (status and reason in the campaign CSV; re-measure with that tool){note}"
        )
    bad += bad_imported
    print("\n".join(lines), flush=True)
    return 1 if strict and bad else 0


def _gate_counts(campaign: str) -> str:
    path = Path(layout.gates(campaign))
    if not path.exists():
        return ""
    from perfsnake.gates import own  # numpy: only when there are gates to count

    with path.open(newline="") as f:
        fields = [own(r)[1] for r in csv.DictReader(f)]
    verdicts = [g["verdict"] for g in fields]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("pass", "fail", "inconclusive") if verdicts.count(v))
    other = sorted({str(g["state_differs"]) for g in fields if g.get("state_differs")})
    if other:
        n = sum(1 for g in fields if g.get("state_differs"))
        counts += f"; {n} against a baseline measured in another machine state ({'; '.join(other)})"
    return counts


def finish(index: CampaignIndex, config: dict, succeeded: bool) -> None:
    """Snakemake's onsuccess/onerror handler: the summary, then strict mode's exit."""
    if report(index, config, succeeded):
        raise SystemExit(1)


def check_gates(
    index: CampaignIndex, inconclusive: str = "pass", found: dict[str, list[dict[str, str]] | None] | None = None
) -> int:
    """`perfsnake check`: every gate that did not pass, one line each; 1 when
    one failed (or was inconclusive, with inconclusive="fail"), 2 when a
    campaign with gates has not been analysed yet. `found`, when given,
    receives each campaign's gates.csv rows (None: none yet), for ci_outputs."""
    from perfsnake.gates import gate_line, own

    status, total = 0, 0
    for name, c in index.campaigns.items():
        if c.control_of or not c.references:
            continue
        path = Path(layout.gates(name))
        if not path.exists():
            print(f"perfsnake: check: {name}: no {path} (run the campaign first)", file=sys.stderr)
            status = max(status, 2)
            if found is not None:
                found[name] = None
            continue
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        if found is not None:
            found[name] = rows
        total += len(rows)
        for row in rows:
            fields = own(row)[1]
            verdict = str(fields["verdict"])
            if verdict == "pass":
                if fields.get("state_differs"):  # a pass that may be the machine's: said, not failed
                    print(f"{name}: PASS, machine state differs: {gate_line(row)}")
                continue
            print(f"{name}: {verdict.upper()}: {gate_line(row)}")
            if verdict == "fail" or inconclusive == "fail":
                status = max(status, 1)
    if status == 0:
        print(f"perfsnake: check: {total} gate(s) passed" + (" or inconclusive" if inconclusive == "pass" else ""))
    return status
