"""Shell templates with {placeholders} whose values are always quoted.

Every substituted value goes through shlex.quote, so a parameter value can
never inject a command. Literal braces are written {{ and }}.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Mapping

from perfsnake.escape import value_text

_FORMATTER = string.Formatter()


def placeholders(template: str) -> set[str]:
    """The placeholder names a template uses; ValueError when malformed."""
    names = set()
    for _literal, field, spec, conversion in _FORMATTER.parse(template):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(f"placeholder {{{field}}} must be a plain name")
        names.add(field)
    return names


def render(template: str, values: Mapping[str, object]) -> str:
    """Substitute quoted values; KeyError names a missing placeholder."""
    out = []
    for literal, field, _spec, _conversion in _FORMATTER.parse(template):
        out.append(literal)
        if field is not None:
            out.append(shlex.quote(value_text(values[field])))
    return "".join(out)


def substitute(template: str, values: Mapping[str, object]) -> str:
    """Substitute values as they are (no shell quoting): for fields that are
    not shell text, such as a source's revision or URL."""
    out = []
    for literal, field, _spec, _conversion in _FORMATTER.parse(template):
        out.append(literal)
        if field is not None:
            out.append(value_text(values[field]))
    return "".join(out)
