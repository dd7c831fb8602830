"""Turning parameter values into path components that cannot escape.

A value becomes exactly one path component: bytes outside a small safe set
are %-encoded (UTF-8), so slashes, spaces, shell metacharacters and unicode
never add a level or leave results/. The encoding is injective, so two
distinct values never share a directory.

Two kinds of values get a marked component (`~`, which the encoding never
produces, so marked and plain components cannot collide): one too long for a
file name keeps a prefix and gains `~` and a hash of the full value; one
ending in a run of 20 or more repeats (a CPU mask 0xffff...), which Snakemake
refuses as a wildcard value, gains a final `~`. The full value is kept in the
run's result JSON and the CSV. A build key joins several components into one
file name; when they are too long together, it too keeps a prefix and gains
`~` and a hash of all its values.
"""

from __future__ import annotations

import hashlib
import json
import re

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


#: Longest var-value component, in bytes (file systems allow 255 per name;
#: a build key joins several).
MAX_COMPONENT = 120
#: Snakemake's PeriodicityDetector: a suffix repeated 20 times or more.
_PERIODIC = re.compile(r"(.+)\1{19,}$")


def var_component(var: str, value: object) -> str:
    """`var-value`, escaped, shortened with a stable hash when too long,
    marked when Snakemake would take it for a periodic wildcard."""
    text = value_text(value)
    component = f"{var}-{escape_component(text)}"
    if len(component) > MAX_COMPONENT:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return f"{component[: MAX_COMPONENT - 17]}~{digest}"
    if _PERIODIC.search(component):
        return component + "~"
    return component


def record_path(record: dict[str, object], order: list[str]) -> str:
    """The relative directory of a record: var-value/var-value/... in `order`."""
    if not order:
        return "default"
    return "/".join(var_component(var, record[var]) for var in order)


#: Longest build key, in bytes: its build directory is one file name, and its
#: log `<key>.log` (beside it, under resources/logs/build/) another.
MAX_KEY = 255 - len(".log")


def key_component(record: dict[str, object], order: list[str], prefix: str = "") -> str:
    """A single flat component for a sub-record (used for build keys), after
    `prefix` (a platform's build tag). Each var-value is shortened as in a
    record's path, but several of them joined can still be too long for a
    file name: then the key keeps a prefix and gains `~` and a hash of the
    prefix and every value. Keys that fit are unchanged, so existing builds
    keep their names."""
    key = prefix + (",".join(var_component(var, record[var]) for var in order) if order else "default")
    if len(key.encode("utf-8")) <= MAX_KEY:
        return key
    full = json.dumps([prefix, [[var, value_text(record[var])] for var in order]], ensure_ascii=False)
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:16]
    # Cut by bytes (a tag or a variable's name need not be ASCII), never inside a character.
    kept = key.encode("utf-8")[: MAX_KEY - 17].decode("utf-8", errors="ignore")
    return f"{kept}~{digest}"
