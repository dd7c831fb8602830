"""The recent past a history gate compares with (`references: [{history: {last: N}}]`).

For each record, the ok runs of the last N stored invocations of the campaign
on this machine in the same state (perfsnake compare's state keys: CPU and
microcode, kernel, frequency policy, SMT, huge pages, mitigations, compiler),
the current invocation's runs left out; and of those, only the invocations
since the latest step among them (find_invocation_steps: each invocation
one point, the variance between invocations the noise). So a
regression fails the gate once, at the invocation where it appeared: the
next invocation's recent past is the new level, and it passes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perfsnake.compare import STATE_KEYS
from perfsnake.history.sources import read_campaign
from perfsnake.history.store import Store
from perfsnake.history.views import STEP_OPTIONS


def _state(machine: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(machine.get(k)) for k in STATE_KEYS)


def recent_past(url: str | None, campaign_dir: Path, last: int, metric: str) -> list[dict[str, Any]]:
    """Result-like rows (variables, metrics, status, start_epoch) of the recent
    past of every record of the campaign in `campaign_dir`, cut at the latest
    step of `metric`."""
    current = read_campaign(campaign_dir)
    here = current.invocation["hostname"]
    state = _state(json.loads(str(current.invocation["machine"])))
    mine = {r["run_key"] for r in current.rows}
    frame = Store.open(url, create=False).frame(current.campaign, here)
    if frame.empty:
        return []
    same_state = frame["machine"].map(lambda m: _state(json.loads(m or "{}")) == state)
    frame = frame.loc[~frame["run_key"].isin(mine) & same_state.astype(bool)]
    if frame.empty:
        return []
    out: list[dict[str, Any]] = []
    for record, runs in frame.groupby("record", sort=False):
        invocations = runs.sort_values("start").drop_duplicates("invocation_id")["invocation_id"].tolist()[-last:]
        groups = [runs[runs["invocation_id"] == inv] for inv in invocations]
        groups = _since_latest_step(groups, metric)
        values = json.loads(str(record))
        for g in groups:
            for _, r in g.iterrows():
                out.append({"variables": values, "metrics": json.loads(r["metrics"]), "status": r["status"],
                            "wall_s": r["wall_s"], "start_epoch": str(r["start"] or "")})  # fmt: skip
    return out


def state_change(url: str | None, campaign_dir: Path) -> list[str]:
    """What of the machine state differs between this invocation and the
    latest other one stored for this campaign on this machine, when none of
    them was in this state (the history gate's recent past is empty because
    the state changed: a kernel upgrade, another governor, ...); [] otherwise."""
    current = read_campaign(campaign_dir)
    now = json.loads(str(current.invocation["machine"]))
    mine = {r["run_key"] for r in current.rows}
    frame = Store.open(url, create=False).frame(current.campaign, current.invocation["hostname"])
    if frame.empty:
        return []
    frame = frame.loc[~frame["run_key"].isin(mine)]
    if frame.empty or frame["machine"].map(lambda m: _state(json.loads(m or "{}")) == _state(now)).any():
        return []
    before = json.loads(frame.sort_values("start")["machine"].iloc[-1] or "{}")
    return [f"{k} {before.get(k)} -> {now.get(k)}" for k in STATE_KEYS if str(before.get(k)) != str(now.get(k))]


def _since_latest_step(groups: Sequence[Any], metric: str) -> list[Any]:
    """The invocations after the latest step of `metric` among them (all of them without one)."""
    from perfsnake.statistics.changepoints import find_invocation_steps

    if len(groups) < 2:
        return list(groups)
    series = []
    for i, g in enumerate(groups):
        x = [json.loads(m).get(metric) for m, s in zip(g["metrics"], g["status"], strict=True) if s == "ok"]
        numbers = [v for v in x if isinstance(v, int | float) and not isinstance(v, bool)]
        series.append((str(i), np.asarray(numbers, dtype=float)))
    cut = 0
    for step in find_invocation_steps(series, STEP_OPTIONS):
        p = step.get("p_value")
        if isinstance(p, float) and p < STEP_OPTIONS["alpha"]:
            cut = max(cut, int(str(step["version"])))
    return list(groups[cut:])
