"""Validation says why a value is invalid, suggests the name meant, and
refuses instruments that would read a variable the campaign lacks."""

from __future__ import annotations

import os

import pytest
import yaml

from perfsnake.campaign import load_campaign
from perfsnake.errors import CampaignError
from perfsnake.machine import capabilities
from perfsnake.schema import schema_error

CASES = [
    ({"benchmark": {"type": "command", "command": "echo {v}", "source": {"git": "https://x/y.git", "rev": "bad rev!"}}, "variables": {"v": [1]}},
     "benchmark.source.rev: 'bad rev!' does not match the pattern"),
    ({"benchmark": "heatr"}, "benchmark: unknown benchmark 'heatr' (did you mean 'heater'?)"),
    ({"benchmark": "heater", "nb_rns": 3}, "nb_rns: unknown key (did you mean 'nb_runs'?)"),
    ({"benchmark": "heater", "order": "interleave"}, "order: 'interleave' is not one of interleaved, grouped, random (did you mean 'interleaved'?)"),
    ({"benchmark": "heater", "variables": {"cpus": ["0"]}, "wrappers": [{"type": "taskset", "variable": "cpu"}]},
     "wrappers[0].variable: reads the variable 'cpu', which the campaign does not define (did you mean 'cpus'?)"),
    ({"benchmark": "heater", "variables": {"cpu_lst": ["0"]}, "wrappers": ["taskset"]},
     "wrappers[0]: reads the variable 'cpu_list', which the campaign does not define (did you mean 'cpu_lst'?)"),
    ({"benchmark": "heater", "variables": {"alloc": ["jemalloc"]}, "shared_libs": ["allocator"]},
     "shared_libs[0]: reads the variable 'allocator', which the campaign does not define"),
    ({"benchmark": {"type": "command", "command": "run --threads {thread}"}, "variables": {"threads": [1]}},
     "benchmark.command: unknown placeholder {thread} (did you mean 'threads'?)"),
    ({"benchmark": "heater", "wrappers": [{"type": "perf_stat", "events": ["task-clock", "cyles"]}]},
     "wrappers[0].events: perf does not know the event 'cyles' on this machine (did you mean 'cycles'?)"),
    # the platform is one of several kinds: worded for the kind named, as the benchmark is
    ({"benchmark": "heater", "platform": {"type": "sssh"}},
     "platform.type: unknown platform 'sssh' (choose from local, container, ssh)"),
    ({"benchmark": "heater", "platform": "local"}, "platform: expected a mapping with a type, got 'local'"),
    ({"benchmark": "heater", "platform": {}}, "platform.type: missing: one of local, container, ssh"),
    ({"benchmark": {"type": "heatr"}}, "benchmark.type: unknown benchmark 'heatr' (choose from"),
]  # fmt: skip


def test_events_perf_lists_and_generic_ones_pass(tmp_path):
    path = tmp_path / "c.yaml"
    events = ["task-clock", "cs", "cycles", "LLC-load-misses", "sched:sched_switch", "r003c", "cycles:u"]
    wrapper = {"type": "perf_stat", "events": events, "unsupported": "empty"}
    path.write_text(yaml.safe_dump({"name": "c", "benchmark": "heater", "wrappers": [wrapper]}))
    # A user who may not read tracefs (a normal user, on most distributions):
    # perf lists no tracepoint for them, so the tracepoint is refused, and
    # only then; asked of the machine both ways.
    hidden = capabilities.tracepoint_problem(("sched:sched_switch",)) is not None
    readable = os.access("/sys/kernel/tracing/events/sched/sched_switch", os.R_OK | os.X_OK)
    assert hidden != readable, (hidden, readable)
    if hidden:
        with pytest.raises(CampaignError) as err:
            load_campaign(path)
        assert str(err.value).endswith(
            "wrappers[0].events: perf does not know the event 'sched:sched_switch' on this machine (`perf list` shows them)"
        ), err.value
        events.remove("sched:sched_switch")
        wrapper["events"] = events
        path.write_text(yaml.safe_dump({"name": "c", "benchmark": "heater", "wrappers": [wrapper]}))
    assert load_campaign(path).instruments.wrappers[0].events == events


@pytest.mark.parametrize("event", ["cycles", "LLC-load-misses", "r003c", "instructions:u"])
def test_hardware_events_without_a_pmu_are_refused_in_one_line(tmp_path, monkeypatch, event):
    # Both kinds of machine: this one's answer replaced by "no PMU".
    monkeypatch.setattr(capabilities, "hardware_pmu", lambda: False)
    path = tmp_path / "c.yaml"
    wrapper = {"type": "perf_stat", "events": ["task-clock", event]}
    path.write_text(yaml.safe_dump({"name": "c", "benchmark": "heater", "wrappers": [wrapper]}))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    message = str(err.value)
    assert "\n" not in message and "wrappers[0].events" in message
    assert f"{event!r} needs a hardware PMU, which this machine lacks" in message and "unsupported: empty" in message
    monkeypatch.setattr(capabilities, "hardware_pmu", lambda: True)
    assert load_campaign(path).instruments.wrappers[0].events == ["task-clock", event]


@pytest.mark.parametrize(("data", "expected"), CASES)
def test_one_line_that_says_why(tmp_path, data, expected):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", **data}))
    with pytest.raises(CampaignError) as err:
        load_campaign(path)
    text = str(err.value)
    assert "\n" not in text and expected in text, text
    assert "not valid under any of the given schemas" not in text


def test_the_configuration_is_worded_by_the_same_schema_check():
    # No benchmark or platform kinds there: the generic wording, one line.
    error = schema_error({"campaigns": ["a"], "strictt": True}, "config.schema.yaml", "config")
    # (the known keys are listed too; their list grows with the schema)
    assert str(error).startswith("config: strictt: unknown key (did you mean 'strict'?) (known: campaign, campaigns, ")
    error = schema_error({"campaigns": "a"}, "config.schema.yaml", "config")
    assert str(error) == "config: campaigns: expected array, got 'a'"
    assert schema_error({"campaigns": ["a"]}, "config.schema.yaml", "config") is None
