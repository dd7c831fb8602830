"""Reading untyped values as numbers: cells of parsed CSV rows and JSON documents.

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
