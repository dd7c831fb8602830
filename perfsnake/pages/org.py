"""A table of the page model as an Org table (ASCII: ± as +-)."""

from __future__ import annotations

from collections.abc import Sequence

from perfsnake.pages.model import Bold, Cell, Code, Link, Table, Text, spans


def inline(value: Text | Cell) -> str:
    out = []
    for s in spans(value.text if isinstance(value, Cell) else value):
        if isinstance(s, str):
            out.append(s)
        elif isinstance(s, Code):
            out.append(f"~{s.text}~")
        elif isinstance(s, Bold):
            out.append(f"*{inline(s.parts)}*")
        elif isinstance(s, Link):
            out.append(f"[[{s.href}][{s.text}]]")
    # A pipe would end the cell.
    return "".join(out).replace("|", "\\vert{}").replace("±", "+-")


def table(t: Table) -> str:
    def cells(values: Sequence[Text | Cell]) -> str:
        return "| " + " | ".join(inline(v) for v in values) + " |"

    lines = [cells(r) for r in t.rows]
    if t.columns is not None:
        rule = "|" + "+".join("-" * (len(inline(c)) + 2) for c in t.columns) + "|"
        lines = [cells(t.columns), rule, *lines]
    return "\n".join(lines) + "\n"
