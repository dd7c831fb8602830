"""A document as Markdown (GitHub's dialect: pipe tables)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from perfsnake.pages.model import (
    Block,
    Bold,
    BulletList,
    Cell,
    Code,
    Document,
    Figure,
    Heading,
    Inline,
    Link,
    Paragraph,
    Preformatted,
    Table,
    Text,
    spans,
)


def inline(text: Text, in_table: bool = False) -> str:
    out = []
    for s in spans(text):
        out.append(_span(s))
    joined = "".join(out)
    # A pipe would end the cell; a line break the row.
    return joined.replace("|", "\\|").replace("\n", " ") if in_table else joined


def _span(s: Inline) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, Code):
        return f"`{s.text}`"
    if isinstance(s, Bold):
        return f"**{inline(s.parts)}**"
    if isinstance(s, Link):
        return f"[{s.text}]({s.href})"
    raise TypeError(f"not an inline span: {s!r}")


def table(t: Table) -> str:
    """A pipe table; a table without column names gets empty ones (Markdown needs a header)."""
    width = max([len(t.columns or ()), *(len(r) for r in t.rows)])
    head = list(t.columns) if t.columns is not None else [""] * width
    rule = {None: "---", "left": ":---", "right": "---:"}
    lines = [
        "| " + " | ".join(inline(c, True) for c in head) + " |",
        "|" + "|".join(rule[t.alignment(i)] for i in range(len(head))) + "|",
    ]
    for row in t.rows:
        lines.append("| " + " | ".join(inline(c.text if isinstance(c, Cell) else c, True) for c in row) + " |")
    return "\n".join(lines)


def block(b: Block, base: Path | None = None) -> str:
    if isinstance(b, Heading):
        return "#" * b.level + " " + inline(b.text)
    if isinstance(b, Paragraph):
        return inline(b.text)
    if isinstance(b, BulletList):
        return "\n".join("- " + inline(item) for item in b.items)
    if isinstance(b, Table):
        return table(b)
    if isinstance(b, Figure):
        where = b.path or ""
        if where and base is not None:
            # Relative to the Markdown file, as a viewer resolves it.
            import os

            where = os.path.relpath(where, base)
        # %-encoded: a viewer decodes the link, and file names hold escaped values (%20, %2F).
        return f"![{b.alt}]({quote(where)})" if where else f"({b.alt})"
    if isinstance(b, Preformatted):
        return "```\n" + b.text.rstrip("\n") + "\n```"
    raise TypeError(f"not a block: {b!r}")


def render(doc: Document, base: Path | None = None) -> str:
    """The page: its title as a level-1 heading, then its blocks; `base`: the
    directory the Markdown file is written to (figures' paths are relative to it)."""
    return "\n\n".join([f"# {doc.title}", *(block(b, base) for b in doc.blocks)]) + "\n"


def write(doc: Document, path: Path) -> None:
    Path(path).write_text(render(doc, Path(path).parent))
