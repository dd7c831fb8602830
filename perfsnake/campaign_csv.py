"""The campaign CSV's format, and its documented reader.

    from perfsnake.campaign_csv import read_results, read_results_metadata
    frame = read_results("results/leveldb/leveldb.csv")      # a pandas DataFrame
    meta = read_results_metadata("results/leveldb/leveldb.csv")

The `#` metadata lines (benchkit style) all come before the header, and the
first one says how many there are (`# metadata_lines: N`), so a reader skips
exactly those lines and never takes a `#` inside a value for a comment.
With pandas alone: `pandas.read_csv(path, skiprows=N, keep_default_na=False,
na_values=[""])`; that reads "" as missing and "007" as 7, where
read_results keeps the types the campaign's JSON beside the CSV records.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd


def _comment_lines(items: Mapping[str, object]) -> str:
    out = []
    for key, value in items.items():
        text = "" if value is None else " ".join(str(value).split())
        out.append(f"# {key}: {text}\n")
    return "".join(out)


META_COUNT = "metadata_lines"


def write_csv(
    path: Path, rows: list[dict], columns: list[str], head: Mapping[str, object], foot: Mapping[str, object]
) -> None:
    """Metadata only above the header, its length on the first line, so a
    reader skips exactly those lines and never mistakes a value for a comment
    (a `#` inside a value, as in `C#`, is data)."""
    frame = pd.DataFrame(rows, columns=columns)
    meta = _comment_lines({**head, **foot})
    count = meta.count("\n") + 1
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as out:
        out.write(f"# {META_COUNT}: {count}\n")
        out.write(meta)
        frame.to_csv(out, index=False)
    tmp.replace(path)


def _text(source: str | Path | io.TextIOBase) -> str:
    if isinstance(source, (str, Path)):
        return Path(source).read_text(encoding="utf-8")
    return source.read()


def metadata_lines(text: str) -> int:
    """How many metadata lines precede the header (0 for a plain CSV)."""
    first = text.split("\n", 1)[0]
    prefix = f"# {META_COUNT}: "
    return int(first[len(prefix) :]) if first.startswith(prefix) else 0


def _csv_text_of(value: object) -> str:
    """How write_csv (pandas) spells a JSON value in the CSV."""
    return "" if value is None else str(value)


def value_types(rows_json: Path, header: list[str], metadata: Mapping[str, str]) -> dict[str, dict[str, object]]:
    """Column -> {its text in the CSV: the value the campaign recorded}, for
    each column of the campaign's JSON rows (`<campaign>.json`, written with
    the CSV) that holds a string; {} when there is no such file or it was
    written for other rows (its columns or metadata differ from the CSV's)."""
    try:
        data = json.loads(rows_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("columns") != header:
        return {}
    written = _comment_lines(dict(data.get("metadata") or {}))
    if written != _comment_lines({k: v for k, v in metadata.items() if k != META_COUNT}):
        return {}
    types: dict[str, dict[str, object]] = {}
    for column in header:
        values = [row.get(column) for row in data.get("rows") or []]
        if any(isinstance(v, str) for v in values):
            # "" is the empty string when the campaign has one, else a missing value.
            texts: dict[str, object] = {_csv_text_of(v): v for v in values if v is not None}
            texts.setdefault("", math.nan)
            types[column] = texts
    return types


def read_results(source: str | Path | io.TextIOBase, dtype: object = None) -> pd.DataFrame:
    """A campaign CSV read back exactly: the metadata block is skipped by its
    count, never by a comment character; "NA" and the like stay strings.

    A CSV cannot tell the empty string from a missing value, nor the string
    "007" from the number 7; the campaign's JSON rows beside it
    (`results/<campaign>/<campaign>.json`, same metadata) record each value
    with its type. So a column holding strings there (`cpu_list: ""`, a tag
    "007") reads back as those strings, exactly, and a column of numbers
    (metrics, numeric variables) stays numeric; a column mixing both gets
    each value's own type. A `dtype` given is used as it is; without that
    file (a text stream, a CSV copied alone) pandas infers the types: ""
    is then missing and numeric-looking strings become numbers."""
    text = _text(source)
    skip = metadata_lines(text)
    types: dict[str, dict[str, object]] = {}
    if dtype is None and isinstance(source, (str, Path)):
        header = next(csv.reader(io.StringIO(text.split("\n", skip)[-1])), [])
        types = value_types(Path(source).with_suffix(".json"), header, read_results_metadata(io.StringIO(text)))
    if not types:
        return pd.read_csv(io.StringIO(text), skiprows=skip, keep_default_na=False, na_values=[""], dtype=dtype)
    # Text columns are read as written, then given the campaign's values;
    # every other column is parsed as before ("" missing).
    frame = pd.read_csv(
        io.StringIO(text), skiprows=skip, keep_default_na=False, dtype=dict.fromkeys(types, str),
        na_values={c: [""] for c in header if c not in types},
    )  # fmt: skip
    for column, texts in types.items():
        frame[column] = [texts.get(v, v) for v in frame[column]]
    return frame


def read_results_metadata(source: str | Path | io.TextIOBase) -> dict[str, str]:
    """The metadata lines of a campaign CSV, as a mapping."""
    meta = {}
    text = _text(source)
    lines = text.splitlines()
    for line in lines[: metadata_lines(text) or len(lines)]:
        if line.startswith("# ") and ": " in line:
            key, value = line[2:].split(": ", 1)
            meta[key] = value
        elif line.startswith("# ") and line.endswith(":"):
            meta[line[2:-1]] = ""
    return meta


# Short names used inside the package.
read_csv = read_results
read_metadata = read_results_metadata
