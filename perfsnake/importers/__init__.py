"""Results of other benchmarking tools, read into perfsnake's rows.

One module per tool, each a `parse(path) -> Imported` that reads the tool's own
JSON (never its text report) and refuses what it does not recognise with one
line naming the file, the key and the problem. A new tool is a module and a
line in `CATALOG`, the face every catalog has (perfsnake.benchmarks,
perfsnake.instruments, perfsnake.platforms): `CATALOG`, `names()` and
`create(spec, origin, key)`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfsnake.errors import CampaignError


class ImportFormatError(CampaignError):
    """A file that is not what its tool writes: `file: key: problem`."""


@dataclass
class Row:
    """One measured run (a repetition, a sample) of one record."""

    record: dict[str, object]
    metrics: dict[str, float | None]
    status: str = "ok"
    exit_code: int = 0
    reason: str = ""
    #: the run's wall-clock time, when the tool measured whole runs (hyperfine)
    wall_s: float | None = None


@dataclass
class Imported:
    """What one file holds: variables, metrics with units, rows, where it came from."""

    tool: str
    variables: list[str]
    metrics: list[str]
    units: dict[str, str]
    rows: list[Row]
    #: the metric a default figure draws
    primary: str = "wall_s"
    #: what the tool recorded about the machine and itself (`hostname` when known)
    context: dict[str, str] = field(default_factory=dict)


def load_json(path: Path) -> Any:
    try:
        text = path.read_text()
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise ImportFormatError(str(path), "", f"cannot read ({exc.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(str(path), "", f"not JSON (line {exc.lineno}: {exc.msg})") from None


def need(data: Any, key: str, kind: type | tuple[type, ...], path: Path, where: str = "") -> Any:
    """data[key], checked to be of `kind`; a one-line error naming the key otherwise."""
    dotted = f"{where}.{key}" if where else key
    if not isinstance(data, dict):
        raise ImportFormatError(str(path), where or "", "expected an object")
    if key not in data:
        raise ImportFormatError(str(path), dotted, "missing")
    value = data[key]
    # bool is an int in Python; a flag is never a number here
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ImportFormatError(str(path), dotted, f"expected {_kind_name(kind)}, got a boolean")
    if not isinstance(value, kind):
        raise ImportFormatError(str(path), dotted, f"expected {_kind_name(kind)}, got {type(value).__name__}")
    return value


def numbers(values: Any, path: Path, where: str) -> list[float]:
    if not isinstance(values, list) or not values:
        raise ImportFormatError(str(path), where, "expected a non-empty list of numbers")
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ImportFormatError(str(path), f"{where}[{i}]", f"expected a number, got {type(v).__name__}")
    return [float(v) for v in values]


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def merge(parts: Iterable[Imported], origin: str) -> Imported:
    """Several files of one tool as one set: the same variables, every row in file order."""
    parts = list(parts)
    first = parts[0]
    for part in parts[1:]:
        if part.variables != first.variables:
            raise ImportFormatError(
                origin,
                "benchmark.files",
                f"the files name different variables ({', '.join(first.variables)} vs {', '.join(part.variables)})",
            )
    metrics = list(dict.fromkeys(m for p in parts for m in p.metrics))
    units = {k: v for p in parts for k, v in p.units.items()}
    context = {k: v for p in reversed(parts) for k, v in p.context.items()}
    rows = [r for p in parts for r in p.rows]
    return Imported(first.tool, first.variables, metrics, units, rows, first.primary, context)


@dataclass(frozen=True)
class Importer:
    """One tool perfsnake reads: its module's parser and what `perfsnake import --help` says it reads."""

    parse: Callable[[Path], Imported]
    reads: str


def names() -> list[str]:
    """Every tool, in the catalog's order."""
    return list(CATALOG)


def create(spec: Mapping[str, object], origin: str, key: str = "benchmark") -> Imported:
    """An imported benchmark's `tool` and `files`: every file parsed and merged, or a one-line error at `key`."""
    tool = str(spec.get("tool"))
    files = [Path(str(f)) for f in spec.get("files") or []]  # type: ignore[attr-defined]
    if tool not in CATALOG:
        raise ImportFormatError(origin, f"{key}.tool", f"unknown tool {tool!r} (choose from {', '.join(CATALOG)})")
    if not files:
        raise ImportFormatError(origin, f"{key}.files", "no file given")
    parts = [CATALOG[tool].parse(path) for path in files]
    return merge(parts, origin)


def read(tool: str, files: list[Path], origin: str) -> Imported:
    """Every file of one tool, parsed and merged (one-line errors)."""
    return create({"tool": tool, "files": files}, origin)


# ---- the catalog, last: the tool modules import the definitions above from this package
from perfsnake.importers import criterion, google_benchmark, hyperfine, pyperf  # noqa: E402

#: The importer catalog: tool name -> its reader (the schema's tool list, the
#: docs and `perfsnake import`'s choices are checked against it by tests/test_registries.py).
CATALOG: dict[str, Importer] = {
    "hyperfine": Importer(hyperfine.parse, "hyperfine --export-json FILE (per-run times)"),
    "google-benchmark": Importer(
        google_benchmark.parse, "a Google Benchmark binary's --benchmark_format=json (or --benchmark_out) output"
    ),
    "criterion": Importer(criterion.parse, "Criterion's target/criterion directory, or its */new/sample.json files"),
    "pyperf": Importer(pyperf.parse, "pyperf's JSON (-o FILE), .json or .json.gz"),
}
#: tool name -> what its `--help` line says it reads (perfsnake.cli's name for it)
TOOLS: dict[str, str] = {name: importer.reads for name, importer in CATALOG.items()}
