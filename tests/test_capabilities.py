"""What a normal user's account lets perfsnake see, answered without raising."""

from __future__ import annotations

import pytest
from helpers import write_campaign

from perfsnake.campaign import load_campaigns
from perfsnake.errors import CampaignError
from perfsnake.machine import capabilities


@pytest.fixture
def normal_user_at(monkeypatch, tmp_path):
    """This process as a normal user on a machine at a given perf_event_paranoid level."""

    def at(level: int) -> None:
        paranoid = tmp_path / "perf_event_paranoid"
        paranoid.write_text(f"{level}\n")
        monkeypatch.setattr(capabilities, "PARANOID", paranoid)
        monkeypatch.setattr(capabilities.os, "geteuid", lambda: 1000)

    return at


@pytest.mark.parametrize("wrapper", ["perf_stat", "perf_record"])
def test_perf_at_debians_level_3_is_refused_for_a_normal_user_in_one_line(tmp_path, normal_user_at, wrapper):
    camp = write_campaign(
        tmp_path, {"name": "p", "benchmark": {"type": "command", "command": "true"}, "wrappers": [wrapper]}
    )
    normal_user_at(3)
    with pytest.raises(CampaignError, match=r"wrappers\[0\]: perf cannot count or sample for this user: perf needs root or kernel.perf_event_paranoid <= 2 \(it is 3\)"):  # fmt: skip
        load_campaigns([str(camp)])
    normal_user_at(2)  # a user's own processes, user space only
    load_campaigns([str(camp)])


def test_unreadable_tracefs_is_a_no_with_a_reason(tmp_path, monkeypatch):
    locked = tmp_path / "tracing"
    (locked / "events" / "sched" / "sched_switch").mkdir(parents=True)
    locked.chmod(0o000)
    monkeypatch.setattr(capabilities, "TRACEFS", (locked / "events",))
    capabilities.tracefs_problem.cache_clear()
    capabilities.missing_tracepoint.cache_clear()
    try:
        if capabilities._present(locked / "events") is None:  # as root every directory is readable
            assert not capabilities.tracefs()
            assert "root only" in (capabilities.tracepoint_problem(("sched:sched_switch",)) or "")
            assert "tracefs=no" in capabilities.summary()
        else:
            assert capabilities.tracefs()
            assert (
                capabilities.tracepoint_problem(("sched:sched_switch", "sched:nope"))
                == "this kernel has no sched:nope tracepoint"
            )
    finally:
        locked.chmod(0o755)
        capabilities.tracefs_problem.cache_clear()
        capabilities.missing_tracepoint.cache_clear()
