"""`perfsnake compare`: one parameter space's results from several dates, hosts or tools, side by side.

Each side is a result directory (`results/<campaign>/`) or an artifact zip
(`perfsnake artifact`); the sides are one campaign, or campaigns with the same
variables (a native campaign and another tool's results of the same
commands, `perfsnake import`), compared on the metrics they share. Per record and metric: each side's n, mean and the
interval of its mean (the campaign's statistics: subsession means, AR(1)
correction), and against the first side the ratio of means with its
interval (the interval of the difference, from Welch's test on subsession
means, divided by the first side's mean), the p-value and the p-value
adjusted over the whole table (Holm). Before the table: an A/A check of the
machine states (STATE_KEYS and the load at the runs' start; a significant
difference between different states is marked "machine state differs"),
then the metadata lines that differ between the sides (CPU, kernel,
governor, compiler, commit, ...), since a difference between two machines
is only as meaningful as what else differed.
"""

from __future__ import annotations

import io
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perfsnake import layout
from perfsnake.campaign_csv import read_results, read_results_metadata
from perfsnake.escape import value_text
from perfsnake.statistics.records import record_row, stat_column
from perfsnake.statistics.summaries import summarise
from perfsnake.statistics.tests import adjust, welch_on_subsessions

#: Metadata that differs between any two runs and says nothing about the machine.
VOLATILE = frozenset({"metadata_lines", "utc_time", "total_duration_s", "total_benchmark_time_s", "runs", "runs_ok",
                      "runs_failed", "runs_timeout", "runs_hook_failed", "campaign_file", "load_average"})  # fmt: skip
#: What makes two machine states the same for an A/A check: the CPU and its
#: microcode, the kernel, frequency policy, SMT, huge pages, mitigations, the compiler.
STATE_KEYS = ("cpu_model", "microcode", "uname", "cpufreq_governor", "turbo", "smt", "transparent_hugepages",
              "mitigations", "compiler")  # fmt: skip
#: What each row of an ssh run says of its host (platform.<key> columns): a change is another machine state.
REMOTE_STATE_KEYS = ("cpu_model", "uname", "compiler", "os_release", "online_cpus", "memory")
#: Median load average at the runs' start (machine.load1) further apart than this: another machine state.
LOAD_GAP = 1.0
#: The table's columns computed over the whole table (after each row is made).
COMPUTED = ("p_value", "p_adjusted", "significant", "note")
#: Columns of a campaign CSV that are neither variables nor metrics.
BOOKKEEPING = frozenset({"campaign", "benchmark", "run", "status", "exit_code", "wall_s", "start", "end"})


class CompareError(ValueError):
    """A side that cannot be read or does not match the others: one line."""


@dataclass
class Side:
    label: str
    campaign: str
    runs: pd.DataFrame
    metadata: dict[str, str]


def _csv_text(path: Path) -> tuple[str, str]:
    """(campaign name, text of its CSV) from a result directory or an artifact zip."""
    if path.is_dir():
        csv = path / f"{path.name}.csv"
        if not csv.exists():
            raise CompareError(f"{path}: no {csv.name} (expected a results/<campaign>/ directory)")
        return path.name, csv.read_text()
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                parts = name.split("/")
                if len(parts) >= 3 and parts[-3] == layout.RESULTS and parts[-1] == f"{parts[-2]}.csv":
                    return parts[-2], zf.read(name).decode()
        raise CompareError(f"{path}: no results/<campaign>/<campaign>.csv in this zip")
    raise CompareError(f"{path}: neither a result directory nor an artifact zip")


def load_side(path: Path) -> Side:
    campaign, text = _csv_text(path)
    metadata = read_results_metadata(io.StringIO(text))
    runs = read_results(io.StringIO(text))
    tool = f"{metadata['imported_tool']}, imported" if metadata.get("imported_tool") else metadata.get("hostname", "?")
    label = f"{tool} {metadata.get('utc_time', '')[:16]} ({path})".replace("  ", " ").strip()
    return Side(label, campaign, runs, metadata)


def _variables(runs: pd.DataFrame) -> list[str]:
    cols = list(runs.columns)
    start = cols.index("benchmark") + 1 if "benchmark" in cols else 0
    return cols[start : cols.index("run")] if "run" in cols else []


def _metrics(runs: pd.DataFrame) -> list[str]:
    cols = list(runs.columns)
    if "run" not in cols or "status" not in cols:
        return []
    inside = cols[cols.index("run") + 1 : cols.index("status")]
    return [c for c in [*inside, "wall_s"] if pd.api.types.is_numeric_dtype(runs[c])]


def metadata_differences(sides: list[Side]) -> list[dict[str, str]]:
    """The metadata keys whose values are not the same on every side."""
    keys = dict.fromkeys(k for s in sides for k in s.metadata if k not in VOLATILE)
    out = []
    for key in keys:
        values = [s.metadata.get(key, "") for s in sides]
        if len(set(values)) > 1:
            out.append({"key": key, **{f"side_{i + 1}": v for i, v in enumerate(values)}})
    return out


def _groups(runs: pd.DataFrame, variables: list[str], metric: str) -> dict[tuple[str, ...], np.ndarray]:
    """A side's ok values of one metric per record, keyed by the values' text
    (a native CSV reads 2 as a number, an imported one may hold "2")."""
    ok = runs[runs["status"] == "ok"]
    if not variables:
        return {(): ok[metric].to_numpy(dtype=float)}
    return {
        tuple(value_text(v) for v in (key if isinstance(key, tuple) else (key,))): g[metric].to_numpy(dtype=float)
        for key, g in ok.groupby(variables, sort=False)
    }


def unrecorded_state(sides: list[Side]) -> list[int]:
    """The sides (1-based) that recorded no machine state at all (imported
    results, another tool's): whether the state was the same cannot be told."""
    return [i for i, s in enumerate(sides, start=1) if not any(k in s.metadata for k in STATE_KEYS)]


def state_sentence(sides: list[Side], state: list[str]) -> str:
    """What compare says of the machine state, in one line."""
    if state:
        return f'DIFFERS: {", ".join(state)}; significant differences below are marked "machine state differs".'
    unknown = unrecorded_state(sides)
    if unknown:
        which = ", ".join(f"side {i}" for i in unknown)
        return (f"UNKNOWN: {which} recorded no machine state ({', '.join(STATE_KEYS)}): whether the machines were "
                "in the same state cannot be checked.")  # fmt: skip
    return "The same on every side (" + ", ".join(STATE_KEYS) + ", load at start)."


def machine_state_differences(sides: list[Side]) -> list[str]:
    """What of the machine state differs between the sides (keys every side
    recorded; older result sets without a key are not counted as differing)."""
    out = [k for k in STATE_KEYS if all(k in s.metadata for s in sides) and len({s.metadata[k] for s in sides}) > 1]
    loads = [float(s.runs["machine.load1"].median()) for s in sides if "machine.load1" in s.runs]
    if len(loads) == len(sides) and max(loads) - min(loads) > LOAD_GAP:
        out.append("load at start (" + " vs ".join(f"{v:.2f}" for v in loads) + ")")
    return out + _remote_state_differences(sides)


def _remote_state_differences(sides: list[Side]) -> list[str]:
    """Over ssh the `#` lines describe the machine that aggregated; each row's
    platform.* columns say what its host was: compared host by host (a fleet's
    `host` variable), or over all rows."""
    out = []
    by_host = all("host" in s.runs for s in sides)
    for key in REMOTE_STATE_KEYS:
        column = f"platform.{key}"
        if not all(column in s.runs for s in sides):
            continue
        seen = []
        for side in sides:
            groups = side.runs.groupby("host")[column] if by_host else [("", side.runs[column])]
            seen.append({str(h): "|".join(sorted({str(v) for v in values})) for h, values in groups})
        hosts = sorted(set.intersection(*(set(x) for x in seen)))
        differing = [h for h in hosts if len({x[h] for x in seen}) > 1]
        if differing:
            out.append(column + (f" (host {', '.join(differing)})" if by_host else ""))
    return out


def compare(
    sides: list[Side], confidence: float = 0.95, alpha: float = 0.05, state: list[str] | None = None
) -> pd.DataFrame:
    """Per record, metric and side: the side's statistic, and its ratio to the
    first side's (`state`: machine_state_differences, when already known)."""
    variables = _variables(sides[0].runs)
    for i, side in enumerate(sides[1:], start=2):
        theirs = _variables(side.runs)
        if set(theirs) != set(variables):
            raise CompareError(
                f"side {i} ({side.campaign}) has the variables {', '.join(theirs) or 'none'}, side 1 "
                f"({sides[0].campaign}) {', '.join(variables) or 'none'}: compare results of one parameter space"
            )
    metrics = [m for m in _metrics(sides[0].runs) if all(m in s.runs for s in sides[1:])]
    if not metrics:
        raise CompareError("the sides have no metric in common")
    rows = []
    for metric in metrics:
        groups = [_groups(s.runs, variables, metric) for s in sides]
        for key, first in groups[0].items():
            record = dict(zip(variables, key, strict=True))
            for i, group in enumerate(groups):
                x = group.get(key)
                if x is None:
                    continue
                x = x[np.isfinite(x)]
                s = summarise(x, confidence)
                fields = {"metric": metric, "side": i + 1, "label": sides[i].label, "n": s.n, "mean": s.mean,
                          "mean_ci_low": s.mean_ci_low, "mean_ci_high": s.mean_ci_high}  # fmt: skip
                base = first[np.isfinite(first)]
                if i and len(x) >= 2 and len(base) >= 2 and np.mean(base):
                    comp, _ = welch_on_subsessions(base, x, confidence, alpha)
                    ref = float(np.mean(base))
                    fields |= {"ratio": comp.mean_b / ref, "ratio_ci_low": 1 + comp.diff_ci_low / ref,
                               "ratio_ci_high": 1 + comp.diff_ci_high / ref, "p_value": comp.p_value}  # fmt: skip
                rows.append(record_row(record, fields))
    table = pd.DataFrame(rows)
    # The columns added below, renamed where a variable has their name (stat_column).
    p_value, p_adjusted, significant, note = (stat_column(c, variables) for c in COMPUTED)
    if len(table) and p_value in table:
        tested = table[p_value].notna()
        # One family: the whole table; a record without a comparison is no test.
        table[p_adjusted] = adjust(table[p_value].tolist(), "holm")
        table[significant] = (table[p_adjusted] < alpha).where(tested, None)
        # An A/A check first: a difference between machine states is not the change's.
        if machine_state_differences(sides) if state is None else state:
            table[note] = np.where(table[significant] == True, "machine state differs", "")  # noqa: E712
    return table


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def markdown(sides: list[Side], table: pd.DataFrame, differences: list[dict[str, str]], state: list[str]) -> str:
    names = " vs ".join(dict.fromkeys(s.campaign for s in sides))
    lines = [f"# {names}: {len(sides)} result sets compared", ""]
    lines += [f"- side {i + 1}: {s.label}" for i, s in enumerate(sides)]
    lines += ["", "## Machine state", ""]
    lines.append(state_sentence(sides, state))
    lines += ["", "## What differs between the sides", ""]
    if differences:
        lines += ["| key | " + " | ".join(f"side {i + 1}" for i in range(len(sides))) + " |",
                  "|---|" + "---|" * len(sides)]  # fmt: skip
        lines += [
            f"| {d['key']} | " + " | ".join(d[f"side_{i + 1}"] for i in range(len(sides))) + " |" for d in differences
        ]
    else:
        lines.append("Nothing in the metadata (same host, kernel, CPU, compiler, commit).")
    lines += ["", "## Per record and metric (ratio to side 1, Holm-adjusted p)", ""]
    if len(table):
        label = stat_column("label", _variables(sides[0].runs))
        cols = [c for c in table.columns if c != label]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(_fmt(r[c]) for c in cols) + " |" for _, r in table.iterrows()]
    return "\n".join(lines) + "\n"


def load_sides(paths: list[str]) -> list[Side]:
    if len(paths) < 2:
        raise CompareError("give two or more result directories or artifact zips")
    return [load_side(Path(p)) for p in paths]


def write(sides: list[Side], out: Path | None) -> tuple[pd.DataFrame, list[dict[str, str]], list[str], str]:
    """The table, what differs in the metadata, what differs in the machine
    state, and the Markdown; written into `out` (compare.csv, compare.md,
    metadata_differences.csv) when given."""
    state = machine_state_differences(sides)
    table = compare(sides, state=state)
    differences = metadata_differences(sides)
    text = markdown(sides, table, differences, state)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "compare.csv", index=False)
        pd.DataFrame(differences).to_csv(out / "metadata_differences.csv", index=False)
        (out / "compare.md").write_text(text)
    return table, differences, state, text


def main(paths: list[str], output: str | None) -> int:
    text = write(load_sides(paths), Path(output) if output else None)[3]
    print(text, end="")
    return 0
