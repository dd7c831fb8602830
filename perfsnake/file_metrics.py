"""Metrics read from files a benchmark writes (stress-ng --yaml, fio
--output-format=json, hyperfine --export-json, a CSV), by dotted paths.

    metrics_from:
      - {file: out.json, format: json, fields: {read_iops: jobs.0.read.iops}}
      - {file: times.csv, format: csv, fields: {last_ms: -1.ms}}

A path walks mappings by key and lists by index (negative counts from the
end); a CSV is a list of rows, each a mapping of column -> value.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path

import yaml

FORMATS = ("json", "yaml", "csv")


def load(path: Path, fmt: str) -> object:
    text = path.read_text(errors="replace")
    if fmt == "json":
        return json.loads(text)
    if fmt == "yaml":
        return yaml.safe_load(text)
    return list(csv.DictReader(io.StringIO(text)))


def lookup(document: object, dotted: str) -> object:
    node = document
    for part in dotted.split("."):
        if isinstance(node, Mapping):
            node = node[part]
        elif isinstance(node, list):
            node = node[int(part)]
        else:
            raise KeyError(dotted)
    return node


def number(value: object) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        text = str(value).strip()
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        return None


def metrics_from(run_dir: Path, specs: list[Mapping[str, object]]) -> tuple[dict[str, object], list[str]]:
    """(metrics, problems): every declared field, None where it could not be read."""
    out: dict[str, object] = {}
    problems: list[str] = []
    for spec in specs:
        fields: Mapping[str, str] = spec["fields"]  # type: ignore[assignment]
        path = run_dir / str(spec["file"])
        try:
            document = load(path, str(spec.get("format", "json")))
        except (OSError, ValueError, yaml.YAMLError) as exc:
            problems.append(f"{spec['file']}: {exc}")
            out.update({name: None for name in fields})
            continue
        for name, dotted in fields.items():
            try:
                out[name] = number(lookup(document, dotted))
            except (KeyError, IndexError, ValueError, TypeError):
                out[name] = None
                problems.append(f"{spec['file']}: no {dotted}")
    return out, problems
