"""Turning parameter values into path components that cannot escape.

A value becomes exactly one path component: bytes outside a small safe set
are %-encoded (UTF-8), so slashes, spaces, shell metacharacters and unicode
never add a level or leave results/. The encoding is injective, so two
distinct values never share a directory.
"""

from __future__ import annotations

SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-.")


def value_text(value: object) -> str:
    """The canonical text of a YAML scalar (booleans as YAML spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def escape_component(text: str) -> str:
    """Encode `text` as a single safe path component."""
    out = []
    for byte in text.encode("utf-8"):
        if byte in SAFE:
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    encoded = "".join(out)
    # "." and ".." (and any leading dot) would be special or hidden.
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    return encoded or "%"


def unescape_component(encoded: str) -> str:
    """Inverse of escape_component."""
    if encoded == "%":
        return ""
    raw = bytearray()
    i = 0
    while i < len(encoded):
        if encoded[i] == "%":
            raw.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.append(ord(encoded[i]))
            i += 1
    return raw.decode("utf-8")


def record_path(record: dict[str, object], order: list[str]) -> str:
    """The relative directory of a record: var-value/var-value/... in `order`."""
    if not order:
        return "default"
    return "/".join(f"{var}-{escape_component(value_text(record[var]))}" for var in order)


def key_component(record: dict[str, object], order: list[str]) -> str:
    """A single flat component for a sub-record (used for build keys)."""
    if not order:
        return "default"
    return ",".join(f"{var}-{escape_component(value_text(record[var]))}" for var in order)
