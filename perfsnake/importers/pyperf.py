"""pyperf's JSON (`-o FILE`, `pyperf convert`), plain or gzipped.

Every value of every worker process is one run (pyperf's values are
already per loop). The first process, which only calibrates, has no values
and adds nothing. Records are the benchmarks' names (`name`). The metric is
`time_s` for pyperf's default unit (second), else `value` in the unit the
benchmark declares. The suite's metadata (hostname, CPU model, Python,
platform) is kept in the CSV's `#` lines.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from perfsnake.importers import Imported, ImportFormatError, Row, load_json, need, numbers

_CONTEXT = ("hostname", "cpu_model_name", "cpu_count", "cpu_freq", "python_version", "python_implementation",
            "platform", "perf_version", "aslr", "cpu_config")  # fmt: skip
_UNITS = {"second": ("time_s", "s"), "byte": ("value_bytes", "B"), "integer": ("value", "")}


def _load(path: Path) -> Any:
    if path.suffix == ".gz":
        try:
            return json.loads(gzip.decompress(path.read_bytes()))
        except (OSError, ValueError) as exc:
            raise ImportFormatError(str(path), "", f"not gzipped JSON ({exc})") from None
    return load_json(path)


def parse(path: Path) -> Imported:
    data = _load(path)
    need(data, "version", str, path)
    benchmarks = need(data, "benchmarks", list, path)
    common = data.get("metadata") or {}
    rows: list[Row] = []
    metrics: list[str] = []
    units: dict[str, str] = {}
    for i, bench in enumerate(benchmarks):
        where = f"benchmarks[{i}]"
        meta = {**common, **(bench.get("metadata") or {})}
        name = meta.get("name")
        if not isinstance(name, str):
            raise ImportFormatError(str(path), f"{where}.metadata.name", "missing")
        unit = meta.get("unit", "second")
        if unit not in _UNITS:
            raise ImportFormatError(str(path), f"{where}.metadata.unit", f"unknown unit {unit!r}")
        metric, symbol = _UNITS[unit]
        if metric not in metrics:
            metrics.append(metric)
            if symbol:
                units[metric] = symbol
        for j, run in enumerate(need(bench, "runs", list, path, where)):
            if "values" not in run:  # the calibration process
                continue
            values = numbers(run["values"], path, f"{where}.runs[{j}].values")
            rows += [Row({"name": name}, {metric: v}) for v in values]
    if not rows:
        raise ImportFormatError(str(path), "benchmarks", "no run has values")
    context = {f"pyperf_{k}": str(common[k]) for k in _CONTEXT if k in common}
    if "hostname" in common:
        context["hostname"] = str(common["hostname"])
    dates = [
        str(r["metadata"]["date"]) for b in benchmarks for r in b.get("runs", []) if "date" in (r.get("metadata") or {})
    ]
    if dates:  # when it started, in the measuring machine's local time (pyperf records no zone)
        context["pyperf_first_run"] = min(dates)
    return Imported("pyperf", ["name"], metrics, units, rows, metrics[0], context)
