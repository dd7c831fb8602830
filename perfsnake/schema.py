"""The JSON schemas of the configuration and of campaigns, and their
defaults: every default is written once, in the schema, and read from here
(nested ones included), by the campaign loader and by the stages alike."""

from __future__ import annotations

from functools import cache

import yaml

from perfsnake import ROOT

SCHEMA_DIR = ROOT / "config" / "schemas"


@cache
def load_schema(name: str) -> dict:
    return yaml.safe_load((SCHEMA_DIR / name).read_text())


def fill_defaults(data: dict, schema: dict) -> dict:
    """Defaults from the schema, filled into nested mappings too (jsonschema
    does not fill them): the schema is the one place a default is written."""
    out = dict(data)
    for key, sub in schema.get("properties", {}).items():
        if key not in out and "default" in sub:
            out[key] = sub["default"]
        if isinstance(out.get(key), dict) and "properties" in sub:
            out[key] = fill_defaults(out[key], sub)
    return out


def schema_defaults(*path: str, schema: str = "campaign.schema.yaml") -> dict:
    """The defaults of a nested object of a schema (e.g. "statistics")."""
    sub = load_schema(schema)
    for key in path:
        sub = sub["properties"][key]
    return fill_defaults({}, sub)
