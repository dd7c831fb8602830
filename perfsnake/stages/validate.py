"""What the workflow refuses before its first run, as one path for the
workflow (rules/common.smk) and `perfsnake validate`: what one accepts, the
other runs."""

from __future__ import annotations

from collections.abc import Callable

from perfsnake.planning import CampaignIndex, index_from_config
from perfsnake.stages import profile


def plan(config: dict, run_times: Callable[[str], tuple[float, int] | None] | None = None) -> CampaignIndex:
    """The invocation's plan, checked in the workflow's order: the campaigns,
    the benchmark lock, the figures and the batches (index_from_config),
    then the flame-graph tools. Raises CampaignError, one line."""
    index = index_from_config(config, run_times=run_times)
    profile.check_tools(index)
    return index
