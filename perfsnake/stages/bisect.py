"""Bisection stage (rules/bisect.smk): the bisect_step checkpoint's job body,
the chain of decisions the step, collect and report rules read back, and
bisect.md. The decision itself is perfsnake.bisect."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import bisect, versions
from perfsnake.contract import Statistics
from perfsnake.escape import value_text
from perfsnake.pages import markdown as md_render
from perfsnake.pages.model import Bold, BulletList, Code, Document, Heading, Inline, Paragraph, Table, Text
from perfsnake.stages.precision import metric_values
from perfsnake.values import number

if TYPE_CHECKING:
    from perfsnake.campaign import Campaign
    from perfsnake.planning import CampaignIndex

#: (campaign, step) -> path of that step's decision; Snakemake's
#: `checkpoints.bisect_step.get(...)` behind it raises until it exists.
StepFile = Callable[[str, int], str]


def ordered_versions(c: Campaign) -> list[str]:
    var = str(c.bisect["variable"])  # type: ignore[index]
    return [value_text(r.values[var]) for r in c.records]


def _paths(c: Campaign) -> dict[str, str]:
    """version -> record path."""
    var = str(c.bisect["variable"])  # type: ignore[index]
    return {value_text(r.values[var]): r.path for r in c.records}


def plans(
    index: CampaignIndex, step_file: StepFile, name: str, upto: int | None = None
) -> tuple[dict[str, list[int]], str | None]:
    """(runs measured after the last step read, path of that step's decision),
    stopping at the final step or before step `upto`."""
    c = index.campaigns[name]
    paths = _paths(c)
    plan = index.rounds.first_plan(name)
    step, path = 1, None
    while upto is None or step < upto:
        path = step_file(name, step)
        decision = json.loads(Path(path).read_text())
        if decision["done"]:
            break
        for version, runs in decision["next"].items():
            plan.setdefault(paths[version], [])
            plan[paths[version]] += [r for r in runs if r not in plan[paths[version]]]
        step += 1
    return plan, path


def step_inputs(index: CampaignIndex, step_file: StepFile, name: str, step: int) -> list[str]:
    """A step's runs (every run so far) and the previous step's decision."""
    plan, previous = plans(index, step_file, name, upto=step)
    return index.rounds.plan_targets(name, plan) + ([previous] if step > 1 and previous else [])


def collect_inputs(index: CampaignIndex, step_file: StepFile, name: str) -> list[str]:
    return index.rounds.plan_targets(name, plans(index, step_file, name)[0])


def final_step(index: CampaignIndex, step_file: StepFile, name: str) -> list[str]:
    path = plans(index, step_file, name)[1]
    return [path] if path else []


def decide_step(index: CampaignIndex, name: str, step: int, inputs: list[str], output: str, log_file: str) -> None:
    """Checkpoint of one step: read every run so far, decide, write the decision."""
    c = index.campaigns[name]
    spec = c.bisect
    assert spec is not None
    by_path = {path: version for version, path in _paths(c).items()}
    status_files = [s for s in inputs if s.endswith("status.json")]
    values = {by_path[p]: v for p, v in metric_values(c, status_files, str(spec["metric"])).items()}
    state = None
    previous = [s for s in inputs if s.endswith(".json") and not s.endswith("status.json")]
    if previous:
        state = json.loads(Path(previous[0]).read_text())
    order = ordered_versions(c)
    missing = [v for v in (order[0], order[-1]) if len(values.get(v, [])) < 2]
    alpha = float(Statistics.from_dict(c.data["statistics"]).alpha)
    if missing:  # failed runs: nothing to decide on
        decision: dict[str, object] = {"done": True, "verdict": f"undecided: fewer than 2 ok runs of {missing[0]}",
                                       "steps": list(state["steps"]) if state else [], "next": {}}  # fmt: skip
    else:
        decision = bisect.decide(order, state, values, step, c.nb_runs, float(spec["threshold"]), alpha)
    decision["values"] = values
    Path(output).write_text(json.dumps(decision, indent=1) + "\n")
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(log_file).write_text(
        f"step {step}: {'done: ' + str(decision.get('verdict')) if decision['done'] else 'next ' + json.dumps(decision['next'])}\n"
    )


def _pct(x: object) -> str:
    return f"{number(x) * 100:+.2f}%"


def write_report(index: CampaignIndex, name: str, final: str, output: str) -> None:
    """bisect.md: the first changed commit, its message, the change with its interval, the steps."""
    c = index.campaigns[name]
    spec = c.bisect
    assert spec is not None
    decision = json.loads(Path(final).read_text())
    order = ordered_versions(c)
    metric, threshold = spec["metric"], float(spec["threshold"])
    doc = Document(f"{name}: bisection of {metric} over {len(order)} commits ({order[0]}..{order[-1]})")
    verdict = str(decision.get("verdict"))
    range_spec = c.data["variables"][spec["variable"]]
    if verdict == "changed":
        first, previous = decision["first"], decision["previous"]
        subject = versions.subjects(range_spec, [first]).get(first, "")
        values = decision["values"]
        change = bisect.compare(
            values[previous], values[first], threshold, alpha=float(Statistics.from_dict(c.data["statistics"]).alpha)
        )
        doc.add(Paragraph([Bold(f"First commit that changed {metric}: ", Code(first)), f" ({subject})"]))
        doc.add(BulletList([["against ", Code(previous), f", the commit before it: {_pct(change['relative'])} "
                             f"(mean {change['mean_a']:.4g} -> {change['mean_b']:.4g}, difference "
                             f"[{change['diff_ci_low']:.4g}, {change['diff_ci_high']:.4g}], p = {change['p_value']:.2g})"]]))  # fmt: skip
    elif verdict == "no change":
        ends = decision["steps"][-1]["ends"]
        doc.add(Paragraph([Bold(f"No change of {metric} by {threshold:.0%} or more shown between the ends"),
                           f" ({_pct(ends['relative'])}, p = {float(ends['p_value']):.2g}"
                           + (": a difference this large that is not significant needs more runs (nb_runs)" if abs(float(ends["relative"])) >= threshold else "")
                           + ")."]))  # fmt: skip
    else:
        doc.add(Paragraph(Bold(verdict)))
    doc.add(
        Heading(f"Steps ({len(decision['steps'])}; at most {bisect.max_steps(len(order))} for {len(order)} commits)")
    )
    steps: list[list[Text]] = []
    for s in decision["steps"]:
        what: list[Inline]
        if "ends" in s:
            what = [f"ends differ by {_pct(s['ends']['relative'])} (p = {float(s['ends']['p_value']):.2g})"]
        else:
            what = [Code(s["version"]), f" is like the {s['like']} end ({_pct(s['vs_old']['relative'])} from the old, "
                    f"{_pct(s['vs_new']['relative'])} to the new){' (ambiguous: the closer end decided)' if s['ambiguous'] else ''}"]  # fmt: skip
        steps.append([str(s["step"]), _codes(s["measured"]), what])
    doc.add(Table(["step", "measured", "decision"], steps))
    measured = sorted(decision["values"], key=order.index)
    doc.add(Paragraph([f"Runs: {sum(len(v) for v in decision['values'].values())} of {len(measured)} commits (",
                       *_codes(measured), "); every step's runs interleaved with new runs of both ends."]))  # fmt: skip
    md_render.write(doc, Path(output))


def _codes(names: Sequence[str]) -> list[Inline]:
    """Commits as code, comma-separated."""
    out: list[Inline] = []
    for i, n in enumerate(names):
        out += [", "] if i else []
        out.append(Code(n))
    return out
