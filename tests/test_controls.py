"""Observers versus treatments: control runs drop only the instruments that
watch a run, never the ones under study (an allocator, a lock, pinning)."""

from __future__ import annotations

import pytest
from helpers import write_campaign

from perfsnake.campaign import load_campaigns
from perfsnake.errors import CampaignError
from perfsnake.instruments.registry import HOOKS, LIBS, WRAPPERS

OBSERVERS = {
    "perf_stat",
    "perf_record",
    "strace",
    "ltrace",
    "valgrind",
    "time",
    "monitor",
    "sched_timeline",
    "offcpu",
    "attach",
}


def _campaign(tmp_path, **extra):
    data = {
        "name": "c",
        "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1], "cpus": ["0"]},
        "nb_runs": 2,
        **extra,
    }
    return load_campaigns([str(write_campaign(tmp_path, data))])


def test_every_instrument_says_whether_it_observes_or_treats():
    kinds = {name: cls.observer for table in (WRAPPERS, LIBS, HOOKS) for name, cls in table.items()}
    assert {k for k, observes in kinds.items() if observes} == OBSERVERS


def test_controls_keep_treatments_and_drop_observers(tmp_path):
    main, control, only = _campaign(
        tmp_path,
        wrappers=[{"type": "taskset", "variable": "cpus"}, "strace", "time"],
        shared_libs=["jemalloc"],
        control="per_instrument",
    )[:3]
    assert [i.kind for i in main.instruments.all()] == ["taskset", "strace", "time", "jemalloc"]
    assert control.name == "c__control" and [i.kind for i in control.instruments.all()] == ["taskset", "jemalloc"]
    assert only.name == "c__only-strace" and [i.kind for i in only.instruments.all()] == [
        "taskset",
        "strace",
        "jemalloc",
    ]


def test_control_without_any_observer_is_refused_in_one_line(tmp_path):
    with pytest.raises(CampaignError) as err:
        _campaign(tmp_path, shared_libs=["jemalloc"], control=True)
    text = str(err.value)
    assert "\n" not in text and "control" in text and "jemalloc" in text
