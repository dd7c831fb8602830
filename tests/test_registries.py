"""Each catalog is declared once: the schema's name lists agree with the
registries, and the package's imports have no cycle and point down the layers."""

from __future__ import annotations

import pytest

from perfsnake.benchmarks import BUILTINS
from perfsnake.devtools import imports
from perfsnake.instruments.registry import HOOKS, LIBS, SECTIONS, WRAPPERS
from perfsnake.platforms import PLATFORMS
from perfsnake.schema import load_schema


def _schema() -> dict:
    return load_schema("campaign.schema.yaml")


def test_benchmark_names_in_schema_match_the_registry():
    schema = _schema()
    listed = schema["properties"]["benchmark"]["oneOf"][0]["enum"]
    builtin = schema["$defs"]["builtin_benchmark"]["properties"]["type"]["enum"]
    assert sorted(listed) == sorted(BUILTINS) == sorted(builtin)
    assert schema["$defs"]["command_benchmark"]["properties"]["type"]["const"] == "command"


def test_platform_names_in_schema_match_the_registry():
    schema = _schema()
    refs = [branch["$ref"].rsplit("/", 1)[1] for branch in schema["properties"]["platform"]["oneOf"]]
    kinds = [schema["$defs"][ref]["properties"]["type"]["const"] for ref in refs]
    assert sorted(kinds) == sorted(PLATFORMS)


def test_every_instrument_kind_is_registered_once_under_its_name():
    for table in (WRAPPERS, LIBS, HOOKS):
        for name, cls in table.items():
            assert cls.kind == name
    assert set(SECTIONS) == {"wrappers", "shared_libs", "pre_run_hooks", "post_run_hooks"}
    assert not set(WRAPPERS) & set(LIBS) and not set(LIBS) & set(HOOKS)


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
