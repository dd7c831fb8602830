"""The document model: blocks (headings, paragraphs, lists, tables, figures,
preformatted text) holding inline spans (plain text, code, bold, links).
Plain data: the renderers decide the markup."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Bold:
    parts: tuple[Inline, ...]

    def __init__(self, *parts: Text) -> None:
        object.__setattr__(self, "parts", tuple(p for part in parts for p in spans(part)))


@dataclass(frozen=True)
class Link:
    text: str
    href: str


Inline = str | Code | Bold | Link
#: What a block's text may be given as: one span or several.
Text = Inline | Sequence[Inline]


def spans(text: Text) -> tuple[Inline, ...]:
    """A block's text as a tuple of spans."""
    if isinstance(text, (str, Code, Bold, Link)):
        return (text,)
    return tuple(text)


def plain(text: Text) -> str:
    """The text without markup (titles, alt texts)."""
    out = []
    for s in spans(text):
        out.append(s if isinstance(s, str) else plain(s.parts) if isinstance(s, Bold) else s.text)
    return "".join(out)


@dataclass(frozen=True)
class Heading:
    """A section heading; level 2 is a page's section (level 1 is its title)."""

    text: Text
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    """Prose; a newline in its text is a soft line break (kept in Markdown)."""

    text: Text


@dataclass(frozen=True)
class BulletList:
    items: Sequence[Text]
    #: False: no bullets in HTML (a list of labelled lines).
    markers: bool = True


@dataclass(frozen=True)
class Cell:
    """A table cell with a background tint (HTML only)."""

    text: Text
    tint: str | None = None


Align = Literal["left", "right"] | None


@dataclass(frozen=True)
class Table:
    """Rows of cells under optional column names; `row_headers`: each row's
    first cell names it (a key-value table)."""

    columns: Sequence[Text] | None
    rows: Sequence[Sequence[Text | Cell]]
    align: Sequence[Align] = ()
    row_headers: bool = False

    def alignment(self, i: int) -> Align:
        return self.align[i] if i < len(self.align) else None


@dataclass(frozen=True)
class Figure:
    """An image: embedded in HTML (`data` or the file at `path`), referred to
    by path in Markdown. `frame`: inside an iframe, where an interactive SVG
    (a flame graph's search and zoom) keeps working; `height` in pixels."""

    alt: str
    path: str | None = None
    data: bytes | None = None
    mime: str = "image/svg+xml"
    frame: bool = False
    height: int | None = None


@dataclass(frozen=True)
class Preformatted:
    text: str


Block = Heading | Paragraph | BulletList | Table | Figure | Preformatted


@dataclass
class Document:
    """A page: its title and its blocks, in order."""

    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> Document:
        self.blocks.extend(blocks)
        return self
