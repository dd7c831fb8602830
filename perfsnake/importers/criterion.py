"""Criterion.rs measurements: `target/criterion/<id>/new/{sample,benchmark}.json`.

Each sample of Criterion's is one run: `times[i] / iters[i]`, the mean time
of an iteration in that sample, in nanoseconds (`time_ns`). Criterion's own
estimates (bootstrap, regression slope) are not read: perfsnake's
statistics are computed from the samples. Records are Criterion's ids:
`group`, `function` and, when a benchmark is parameterised, `value`. A path may be
the whole `target/criterion` directory, a benchmark's directory, or a
`sample.json` (its `benchmark.json` beside it names it).
"""

from __future__ import annotations

from pathlib import Path

from perfsnake.importers import Imported, ImportFormatError, Row, load_json, need, numbers


def sample_files(path: Path) -> list[Path]:
    if path.is_dir():
        found = sorted(p for p in path.rglob("new/sample.json"))
        if not found:
            raise ImportFormatError(str(path), "", "no */new/sample.json below (not a target/criterion directory?)")
        return found
    return [path]


def parse(path: Path) -> Imported:
    rows: list[Row] = []
    for sample in sample_files(path):
        data = load_json(sample)
        iters = numbers(need(data, "iters", list, sample), sample, "iters")
        times = numbers(need(data, "times", list, sample), sample, "times")
        if len(iters) != len(times):
            raise ImportFormatError(str(sample), "times", f"{len(times)} times for {len(iters)} iteration counts")
        if any(n <= 0 for n in iters):
            raise ImportFormatError(str(sample), "iters", "an iteration count is not positive")
        info = sample.with_name("benchmark.json")
        if not info.exists():
            raise ImportFormatError(str(sample), "", f"no {info.name} beside it to name the benchmark")
        meta = load_json(info)
        group = need(meta, "group_id", str, info)
        function = meta.get("function_id")
        value = meta.get("value_str")
        record = {"group": group, "function": "" if function is None else str(function),
                  "value": "" if value is None else str(value)}  # fmt: skip
        rows += [Row(record, {"time_ns": t / n}) for n, t in zip(iters, times, strict=True)]
    variables = ["group", "function", "value"]
    if not any(r.record["value"] for r in rows):  # no parameterised benchmark: no empty column
        variables.remove("value")
        for r in rows:
            r.record.pop("value", None)
    return Imported("criterion", variables, ["time_ns"], {"time_ns": "ns"}, rows, "time_ns")
