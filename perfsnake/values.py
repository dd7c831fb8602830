"""Reading untyped values: numbers in cells of parsed CSV rows and JSON documents, flags in the configuration.

Rows read back from files are `dict[str, object]`; `float(row["x"])` on an
`object` is what mypy rightly refuses. `number` says what is meant: the value
is a number, or a text of one, and anything else is a bug worth a TypeError.
"""

from __future__ import annotations

import numbers


def number(value: object) -> float:
    """`value` as a float: an int, float, numpy scalar or numeric text; else TypeError."""
    if isinstance(value, numbers.Real | str | bytes):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def config_flag(config: dict, key: str, default: bool = False) -> bool:
    """A configuration flag: YAML's true/false, or the text `--config key=true` gives (Snakemake passes it on as a
    string): true, yes or 1, in any case."""
    return str(config.get(key, default)).lower() in ("true", "yes", "1")
