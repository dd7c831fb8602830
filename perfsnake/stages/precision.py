"""Run until precise: the precision_round checkpoint's job body and the
chain of decisions the collect and round rules read back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout, precision
from perfsnake.stages.collect import collect_record_run

if TYPE_CHECKING:
    from perfsnake.campaign import Campaign
    from perfsnake.planning import CampaignIndex

#: (campaign, round) -> path of that round's decision file; Snakemake's
#: `checkpoints.precision_round.get(...)` behind it raises until it exists.
DecisionFile = Callable[[str, int], str]


def decide_round(
    index: CampaignIndex, name: str, round_number: int, status_files: list[str], output: str, log_file: str
) -> None:
    """Checkpoint of one round: which records need more runs, and how many."""
    c = index.campaigns[name]
    assert c.precision is not None
    plan: dict[str, list[int]] = {}
    for status in status_files:
        path, run = layout.split_status(name, status)
        plan.setdefault(path, []).append(run)
    values = metric_values(c, status_files, c.precision["metric"])
    decision = precision.decide(values, {p: sorted(r) for p, r in plan.items()}, c.precision, round_number)
    Path(output).write_text(json.dumps(decision, indent=1) + "\n")
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(log_file).write_text("".join(
        f"{path}: {len(r['runs'])} runs, relative half-width {r['rel_ci']}, met={r['met']}, adding {len(r['add'])}\n"
        for path, r in decision["records"].items()  # type: ignore[attr-defined]
    ))  # fmt: skip


def metric_values(c: Campaign, status_files: list[str], metric: str) -> dict[str, list[float]]:
    """Per record path, `metric` of the ok runs among `status_files`, in run order
    (what the precision and bisection checkpoints decide on)."""
    workdir = Path.cwd()
    values: dict[str, list[float]] = {}
    for path, run in sorted((layout.split_status(c.name, s) for s in status_files), key=lambda pr: pr[1]):
        result = collect_record_run(c, path, run, workdir)
        metrics: dict[str, object] = result["metrics"]  # type: ignore[assignment]
        value = result["wall_s"] if metric == "wall_s" else metrics.get(metric)
        if result["status"] == "ok" and isinstance(value, (int, float)):
            values.setdefault(path, []).append(float(value))
    return values


def decisions(
    index: CampaignIndex, decision_file: DecisionFile, name: str, upto: int | None = None
) -> tuple[dict[str, list[int]], str | None]:
    """(plan after the last round read, path of its decision), stopping at the
    final round or before round `upto`."""
    plan = index.first_plan(name)
    round_number, path = 1, None
    while upto is None or round_number < upto:
        path = decision_file(name, round_number)
        decision = json.loads(Path(path).read_text())
        plan = precision.next_plan(decision)
        if decision["done"]:
            break
        round_number += 1
    return plan, path


def collect_inputs(index: CampaignIndex, decision_file: DecisionFile, name: str) -> list[str]:
    """The runs collect reads: the first nb_runs, or every run the rounds asked for."""
    if index.campaigns[name].precision is None:
        return index.run_targets(name)
    return index.plan_targets(name, decisions(index, decision_file, name)[0])


def final_decision(index: CampaignIndex, decision_file: DecisionFile, name: str) -> list[str]:
    if index.campaigns[name].precision is None:
        return []
    path = decisions(index, decision_file, name)[1]
    return [path] if path else []


def round_inputs(index: CampaignIndex, decision_file: DecisionFile, name: str, round_number: int) -> list[str]:
    """A round's runs: the first nb_runs, then what earlier rounds added."""
    if round_number == 1:
        return index.run_targets(name)
    return index.plan_targets(name, decisions(index, decision_file, name, upto=round_number)[0])
