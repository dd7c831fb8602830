"""A document as HTML: blocks rendered here, the page's shell and styles in
templates/ (Jinja2, which Snakemake installs)."""

from __future__ import annotations

import base64
import functools
import html
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    import jinja2
    import markupsafe

#: A page's title is an <h3> (Snakemake's report frames the page); its sections' headings follow.
TITLE_LEVEL = 3


@functools.cache
def environment() -> jinja2.Environment:
    # Imported here: parsing the workflow does not need it.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("perfsnake.pages", "templates"),
        autoescape=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )


def _escape(text: str) -> str:
    return html.escape(text)


def inline(text: Text) -> str:
    # A soft line break is a space in HTML.
    return "".join(_span(s) for s in spans(text)).replace("\n", " ")


def _span(s: Inline) -> str:
    if isinstance(s, str):
        return _escape(s)
    if isinstance(s, Code):
        return f"<code>{_escape(s.text)}</code>"
    if isinstance(s, Bold):
        return f"<b>{inline(s.parts)}</b>"
    if isinstance(s, Link):
        return f"<a href='{_escape(s.href)}'>{_escape(s.text)}</a>"
    raise TypeError(f"not an inline span: {s!r}")


def _cell(tag: str, value: Text | Cell, align: str | None) -> str:
    style = [f"text-align:{align}"] if align else []
    if isinstance(value, Cell):
        style += [f"background:{value.tint}"] if value.tint else []
        value = value.text
    attr = f" style='{';'.join(style)}'" if style else ""
    return f"<{tag}{attr}>{inline(value)}</{tag}>"


def table(t: Table) -> str:
    head = ""
    if t.columns is not None:
        head = "<thead><tr>" + "".join(_cell("th", c, None) for c in t.columns) + "</tr></thead>"
    rows = []
    for row in t.rows:
        cells = [_cell("th" if t.row_headers and i == 0 else "td", c, t.alignment(i)) for i, c in enumerate(row)]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>{head}<tbody>{''.join(rows)}</tbody></table>"


def figure(f: Figure) -> str:
    raw = f.data if f.data is not None else Path(f.path or "").read_bytes()
    src = f"data:{f.mime};base64,{base64.b64encode(raw).decode()}"
    if f.frame:
        height = f.height or 520
        return f"<iframe title='{_escape(f.alt)}' src='{src}' style='width:100%;height:{height}px;border:1px solid #ccc'></iframe>"
    return f"<img style='max-width:100%' alt='{_escape(f.alt)}' src='{src}'>"


def block(b: Block) -> str:
    if isinstance(b, Heading):
        level = min(TITLE_LEVEL + b.level - 1, 6)
        return f"<h{level}>{inline(b.text)}</h{level}>"
    if isinstance(b, Paragraph):
        return f"<p>{inline(b.text)}</p>"
    if isinstance(b, BulletList):
        style = "" if b.markers else " style='list-style:none;padding:0'"
        return f"<ul{style}>" + "".join(f"<li>{inline(item)}</li>" for item in b.items) + "</ul>"
    if isinstance(b, Table):
        return table(b)
    if isinstance(b, Figure):
        return figure(b)
    if isinstance(b, Preformatted):
        return f"<pre>{_escape(b.text)}</pre>"
    raise TypeError(f"not a block: {b!r}")


def blocks(bs: list[Block]) -> str:
    return "\n".join(block(b) for b in bs)


def _markup(text: str) -> markupsafe.Markup:
    import markupsafe

    return markupsafe.Markup(text)


def render(doc: Document) -> str:
    """A whole page (templates/page.html): the title, the styles, the blocks."""
    return environment().get_template("page.html").render(title=doc.title, body=_markup(blocks(doc.blocks)))


def fragment(template: str, values: Mapping[str, object]) -> str:
    """A template filled with `values`: blocks and lists of blocks are rendered, text escaped."""
    filled = {k: _rendered(v) for k, v in values.items()}
    return environment().get_template(template).render(**filled)


BLOCKS = (Heading, Paragraph, BulletList, Table, Figure, Preformatted)


def _rendered(v: object) -> object:
    """A block or a list of blocks as markup; anything else as given (the template escapes it)."""
    if isinstance(v, BLOCKS):
        return _markup(block(v))
    if isinstance(v, list) and v and all(isinstance(x, BLOCKS) for x in v):
        return _markup(blocks(v))
    return v


def write(doc: Document, path: Path) -> None:
    Path(path).write_text(render(doc))
