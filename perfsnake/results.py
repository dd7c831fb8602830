"""The campaign CSV's format, and its documented reader.

    from perfsnake.results import read_results, read_results_metadata
    frame = read_results("results/leveldb/leveldb.csv")      # a pandas DataFrame
    meta = read_results_metadata("results/leveldb/leveldb.csv")

The `#` metadata lines (benchkit style) all come before the header, and the
first one says how many there are (`# metadata_lines: N`), so a reader skips
exactly those lines and never takes a `#` inside a value for a comment.
With pandas alone: `pandas.read_csv(path, skiprows=N, keep_default_na=False,
na_values=[""])`.
"""

from __future__ import annotations

import io
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


def read_results(source: str | Path | io.TextIOBase, dtype: object = None) -> pd.DataFrame:
    """A campaign CSV read back exactly: the metadata block is skipped by its
    count, never by a comment character; "NA" and the like stay strings."""
    text = _text(source)
    return pd.read_csv(
        io.StringIO(text), skiprows=metadata_lines(text), keep_default_na=False, na_values=[""], dtype=dtype
    )


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
