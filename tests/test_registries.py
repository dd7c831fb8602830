"""Each catalog is declared once and has one face: the schema's and the docs'
name lists agree with the catalogs, and the package's imports have no cycle
and point down the layers."""

from __future__ import annotations

import inspect
import re

import pytest

from perfsnake import ROOT, benchmarks, importers, instruments, platforms
from perfsnake.benchmarks import BUILTINS
from perfsnake.devtools import imports
from perfsnake.instruments.registry import HOOKS, LIBS, SECTIONS, WRAPPERS
from perfsnake.platforms import PLATFORMS
from perfsnake.platforms.base import PlatformProtocol
from perfsnake.schema import load_schema

CATALOGS = {"benchmarks": benchmarks, "instruments": instruments, "platforms": platforms, "importers": importers}


def _schema() -> dict:
    return load_schema("campaign.schema.yaml")


def _docs_section(heading: str) -> str:
    """config/README.md from the heading that starts with `heading` to the next heading of its level or
    above (a `#` line inside a code block is no heading)."""
    lines = (ROOT / "config" / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    level = len(heading) - len(heading.lstrip("#"))
    fenced = False
    for end in range(start + 1, len(lines)):
        fenced ^= lines[end].startswith("```")
        if not fenced and re.match(rf"#{{1,{level}}} ", lines[end]):
            break
    else:
        end = len(lines)
    return "\n".join(lines[start + 1 : end])


def _first_cells(section: str) -> list[str]:
    """The names in backquotes in the first cell of each table row (a header's plain words have none)."""
    out = []
    for line in section.splitlines():
        cell = line.split("|")[1] if line.startswith("|") else ""
        out += re.findall(r"`([^`]+)`", cell)
    return out


@pytest.mark.parametrize("package", CATALOGS)
def test_every_catalog_has_the_same_face(package):
    module = CATALOGS[package]
    assert isinstance(module.CATALOG, dict) and module.CATALOG
    assert all(isinstance(name, str) for name in module.CATALOG)
    assert module.names() == list(module.CATALOG)
    assert list(inspect.signature(module.create).parameters)[:3] == ["spec", "origin", "key"]


def test_benchmark_names_in_schema_and_docs_match_the_catalog():
    schema = _schema()
    listed = schema["properties"]["benchmark"]["oneOf"][0]["enum"]
    builtin = schema["$defs"]["builtin_benchmark"]["properties"]["type"]["enum"]
    assert sorted(listed) == sorted(BUILTINS) == sorted(builtin)
    refs = [b["$ref"].rsplit("/", 1)[1] for b in schema["properties"]["benchmark"]["oneOf"] if "$ref" in b]
    kinds = [k for ref in refs for k in schema["$defs"][ref]["properties"]["type"].get("enum", [])]
    kinds += [schema["$defs"][ref]["properties"]["type"]["const"] for ref in refs if ref != "builtin_benchmark"]
    assert sorted(kinds) == sorted(benchmarks.CATALOG)
    assert schema["$defs"]["command_benchmark"]["properties"]["type"]["const"] == "command"
    documented = re.findall(r"^\*\*`([^`]+)`\*\*", _docs_section("### Built-in benchmarks"), re.M)
    documented += _first_cells(_docs_section("### Workload catalog"))
    assert sorted(documented) == sorted(BUILTINS)
    inline = re.findall(r"^### .*\(`type: ([a-z_]+)`\)", (ROOT / "config" / "README.md").read_text(), re.M)
    assert sorted(inline) == sorted(set(benchmarks.CATALOG) - set(BUILTINS))


def test_platform_names_in_schema_and_docs_match_the_catalog():
    schema = _schema()
    refs = [branch["$ref"].rsplit("/", 1)[1] for branch in schema["properties"]["platform"]["oneOf"]]
    kinds = [schema["$defs"][ref]["properties"]["type"]["const"] for ref in refs]
    assert kinds == list(platforms.CATALOG) and PLATFORMS is platforms.CATALOG
    documented = re.findall(r"^`type: ([a-z_]+)`", _docs_section("## Platforms"), re.M)
    assert sorted(documented) == sorted(platforms.CATALOG)


def test_every_platform_implements_the_interface():
    members = [m for m in dir(PlatformProtocol) if not m.startswith("_")] + ["kind"]
    for name, cls in platforms.CATALOG.items():
        assert all(hasattr(cls, m) for m in members), name
        assert cls.kind == name


def test_every_instrument_kind_is_registered_once_under_its_name():
    for table in (WRAPPERS, LIBS, HOOKS):
        for name, cls in table.items():
            assert cls.kind == name
    assert set(SECTIONS) == {"wrappers", "shared_libs", "pre_run_hooks", "post_run_hooks"}
    assert not set(WRAPPERS) & set(LIBS) and not set(LIBS) & set(HOOKS)
    assert instruments.CATALOG == {**WRAPPERS, **LIBS, **HOOKS}


def test_instrument_sections_in_schema_and_docs_match_the_catalog():
    schema = _schema()
    sections = [k for k, v in schema["properties"].items() if v.get("$ref") == "#/$defs/instruments"]
    assert sorted(sections) == sorted(SECTIONS)
    assert sorted(_first_cells(_docs_section("### `wrappers`"))) == sorted(WRAPPERS)
    assert sorted(_first_cells(_docs_section("### `shared_libs`"))) == sorted(LIBS)
    assert sorted(_first_cells(_docs_section("### `pre_run_hooks` and `post_run_hooks`"))) == sorted(HOOKS)


def test_importer_tools_in_schema_docs_and_cli_match_the_catalog():
    schema = _schema()
    assert sorted(schema["$defs"]["imported_benchmark"]["properties"]["tool"]["enum"]) == sorted(importers.names())
    documented = _first_cells(_docs_section("### Results of other tools"))
    assert sorted(documented) == sorted(importers.names())
    assert list(importers.TOOLS) == importers.names()


def test_defaults_are_written_once_in_the_schema():
    from perfsnake.schema import schema_defaults

    stats = schema_defaults("statistics")
    assert stats["confidence"] == 0.95 and stats["warmup"] == "changepoint" and stats["statistic"] == "mean"


def test_no_import_cycles_and_no_upward_imports():
    assert imports.problems() == []


def test_the_import_checker_catches_a_cycle():
    graph = imports.graph()
    graph["perfsnake.layout"].add("perfsnake.planning")
    assert imports.cycles(graph) and ("perfsnake.layout", "perfsnake.planning") in imports.upward(graph)


@pytest.mark.parametrize(
    ("metric", "unit"),
    [
        ("ops_per_s", "ops/s"), ("micros_per_op", "us/op"), ("mb_per_s", "MB/s"), ("bandwidth_max_mb_s", "MB/s"),
        ("latency_min_ns", "ns"), ("read_lat_p99_us", "us"), ("latency_p95_ms", "ms"), ("total_time_s", "s"),
        ("read_bw_kib_s", "KiB/s"), ("write_iops", "IO/s"), ("bogo_ops_per_s", "bogo ops/s"), ("operations", None),
    ],
)  # fmt: skip
def test_metric_units_are_read_from_metric_names(metric, unit):
    from perfsnake.benchmarks.base import metric_unit

    assert metric_unit(metric) == unit


def test_every_catalog_metric_has_a_unit_or_is_a_count():
    from perfsnake.benchmarks import BUILTINS

    # counts and plain numbers: no unit to show
    counts = {
        "operations",
        "bogo_ops",
        "total_events",
        "mhz",
        "samples",
        "overflows",
        "rt_priority",
        "ops",
        "transactions",
        "failed_transactions",
    }
    for name, cls in BUILTINS.items():
        if name == "command":
            continue
        bench = cls({"type": name}, "t")
        missing = [m for m in bench.metrics if m not in bench.units() and m not in counts]
        assert not missing, f"{name}: no unit for {missing}"
