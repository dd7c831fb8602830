"""The JSON schemas of the configuration and of campaigns: their defaults,
and how a violation of one reads.

Every default is written once, in the schema, and read from here (nested
ones included), by the campaign loader and by the stages alike. A value the
schema refuses becomes one CampaignError line naming the key and saying why
(jsonschema's own message is the last resort, not the rule).
"""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from typing import Any

import jsonschema
import yaml

from perfsnake import ROOT
from perfsnake.errors import CampaignError, did_you_mean

SCHEMA_DIR = ROOT / "config" / "schemas"

#: benchmark types defined inline in a campaign, each with its own schema definition
INLINE = {"command": "command_benchmark", "imported": "imported_benchmark"}


@cache
def load_schema(name: str) -> dict:
    # libyaml when installed (the same documents, a quarter of the time): every
    # Snakemake process and every script job loads the campaign schema.
    return yaml.load((SCHEMA_DIR / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


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


def _dotted(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())


def schema_error(
    data: Any,
    schema_name: str,
    origin: str,
    *,
    benchmarks: Collection[str] | None = None,
    platforms: Collection[str] | None = None,
) -> CampaignError | None:
    """The most relevant schema violation as a CampaignError, or None.

    A campaign's `benchmark` and `platform` are one of several kinds; given
    the registries' names of those kinds (which live in layers above this
    one), a violation there is worded for the kind the value names."""
    schema = load_schema(schema_name)
    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors(data))
    if not errors:
        return None
    error = jsonschema.exceptions.best_match(errors)
    if benchmarks is not None and isinstance(data, dict) and list(error.absolute_path)[:1] == ["benchmark"]:
        # oneOf hides which alternative was meant; judge by the given type.
        return _benchmark_error(data.get("benchmark"), benchmarks, origin)
    if platforms is not None and isinstance(data, dict) and list(error.absolute_path)[:1] == ["platform"]:
        return _platform_error(data.get("platform"), platforms, origin)
    error = _intended(error)
    key = _dotted(error.absolute_path)
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known)) if isinstance(error.instance, dict) else []
        if extra:
            where = f"{key}.{extra[0]}" if key else extra[0]
            hint = f"{did_you_mean(extra[0], known)} (known: {', '.join(known)})" if known else ""
            return CampaignError(origin, where, f"unknown key{hint}")
    if error.validator == "pattern":
        return CampaignError(
            origin, key, f"{_show(error.instance)} does not match the pattern {error.validator_value!r}"
        )
    if error.validator == "enum":
        choices = [str(c) for c in error.validator_value]
        return CampaignError(
            origin,
            key,
            f"{_show(error.instance)} is not one of {', '.join(choices)}{did_you_mean(str(error.instance), choices)}",
        )
    if error.validator == "required":
        return CampaignError(origin, key, _one_line(error.message))
    if error.validator == "minItems" and error.validator_value == 1:
        return CampaignError(origin, key, "empty list of values")
    if error.validator == "type":
        return CampaignError(origin, key, f"expected {_types(error.validator_value)}, got {_show(error.instance)}")
    return CampaignError(origin, key, _one_line(error.message))


def _intended(error: jsonschema.exceptions.ValidationError) -> jsonschema.exceptions.ValidationError:
    """For a value valid under none of several alternatives (oneOf/anyOf), the
    error of the alternative the user meant: the one whose required keys are
    all present (e.g. `git` and `rev` for a git source), so the message says
    why the value is invalid instead of "not valid under any of the given schemas"."""
    while error.validator in ("oneOf", "anyOf") and error.context:
        instance = error.instance
        by_branch: dict[int, list] = {}
        for sub in error.context:
            by_branch.setdefault(sub.schema_path[0] if sub.schema_path else 0, []).append(sub)
        chosen = None
        for index, branch in enumerate(error.validator_value):
            required = branch.get("required", []) if isinstance(branch, dict) else []
            if isinstance(instance, dict) and required and all(k in instance for k in required) and index in by_branch:
                chosen = by_branch[index]
                break
        if chosen is None:
            return error
        error = jsonschema.exceptions.best_match(chosen)
    return error


def _types(value: Any) -> str:
    return " or ".join(value) if isinstance(value, list) else str(value)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _sub_schema_error(spec: dict, sub: str, prefix: str, origin: str) -> CampaignError | None:
    """The most relevant violation of one $defs alternative, keyed under `prefix`."""
    schema = load_schema("campaign.schema.yaml")
    sub_schema = {**schema["$defs"][sub], "$defs": schema["$defs"]}
    errors = list(jsonschema.Draft202012Validator(sub_schema).iter_errors(spec))
    if not errors:
        return None
    error = _intended(jsonschema.exceptions.best_match(errors))
    key = _dotted([prefix, *error.absolute_path])
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        return CampaignError(
            origin, f"{key}.{extra[0]}", f"unknown key{did_you_mean(extra[0], known)} (known: {', '.join(known)})"
        )
    if error.validator == "type":
        return CampaignError(origin, key, f"expected {_types(error.validator_value)}, got {_show(error.instance)}")
    if error.validator == "pattern":
        return CampaignError(
            origin, key, f"{_show(error.instance)} does not match the pattern {error.validator_value!r}"
        )
    return CampaignError(origin, key, _one_line(error.message))


def _benchmark_error(spec: Any, builtins: Collection[str], origin: str) -> CampaignError:
    names = ", ".join(sorted([*builtins, *INLINE]))
    if isinstance(spec, str):
        return CampaignError(
            origin,
            "benchmark",
            f"unknown benchmark {spec!r}{did_you_mean(spec, [*builtins, *INLINE])} (choose from {names})",
        )
    if isinstance(spec, dict):
        kind = spec.get("type")
        if kind not in (*builtins, *INLINE):
            return CampaignError(origin, "benchmark.type", f"unknown benchmark {kind!r} (choose from {names})")
        error = _sub_schema_error(spec, INLINE.get(str(kind), "builtin_benchmark"), "benchmark", origin)
        if error:
            return error
    return CampaignError(origin, "benchmark", f"expected a benchmark name or mapping, got {_show(spec)}")


def _platform_error(spec: Any, platforms: Collection[str], origin: str) -> CampaignError:
    if not isinstance(spec, dict):
        return CampaignError(origin, "platform", f"expected a mapping with a type, got {_show(spec)}")
    kind = spec.get("type")
    if kind is None:
        return CampaignError(
            origin, "platform.type", f"missing: one of {', '.join(platforms)} (a platform is a mapping with a type)"
        )
    if kind not in platforms:
        return CampaignError(
            origin, "platform.type", f"unknown platform {_show(kind)} (choose from {', '.join(platforms)})"
        )
    error = _sub_schema_error(spec, f"{kind}_platform", "platform", origin)
    return error or CampaignError(origin, "platform", "invalid platform")
