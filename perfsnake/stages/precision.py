"""Run until precise: the precision_round checkpoint's job body and the
chain of decisions the collect and round rules read back."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from perfsnake import layout, precision
from perfsnake.contract import Statistics
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text
from perfsnake.stages.collect import collect_record_run
from perfsnake.statistics import decide
from perfsnake.values import number

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
    if c.precision.get("mode") == "decide":
        decide_sequential(index, name, round_number, status_files, output, log_file)
        return
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


def comparisons(c: Campaign) -> list[tuple[str, str, str]]:
    """(record a, record b, variable) of the records one variable apart that
    statistics.test_variables and baseline select: the pairs comparisons.csv has."""
    from perfsnake.statistics.records import pairs

    stats = Statistics.from_dict(c.data["statistics"])
    keys = {tuple(value_text(r.values[v]) for v in c.variables): r.path for r in c.records}
    # each variable's values in the campaign's order: a of a pair is the one listed first
    values = {v: list(dict.fromkeys(value_text(r.values[v]) for r in c.records)) for v in c.variables}
    out = []
    for a, b, var in pairs(list(keys), list(c.variables), stats.baseline, values):
        if not stats.test_variables or var in stats.test_variables:
            out.append((keys[a], keys[b], var))
    return out


def decide_sequential(
    index: CampaignIndex, name: str, round_number: int, status_files: list[str], output: str, log_file: str
) -> None:
    """A round of `statistics.decide`: each open comparison decided on its paired
    runs (perfsnake.statistics.decide), runs added to the records of those still open,
    up to the next look; a comparison once decided stays decided."""
    c = index.campaigns[name]
    spec = c.precision
    assert spec is not None
    design = decide.Spec(float(spec["min_effect"]), str(spec["variance"]), float(spec["power"]))
    plan: dict[str, list[int]] = {}
    for status in status_files:
        path, run = layout.split_status(name, status)
        plan.setdefault(path, []).append(run)
    values, spent = metric_runs(c, status_files, str(spec["metric"]))
    used = {k: spec[k] for k in DESIGN_KEYS}
    before: dict[str, dict] = {}
    if round_number > 1:
        earlier = json.loads(Path(layout.precision_round(name, round_number - 1)).read_text())
        before = {f"{x['record_a']} vs {x['record_b']}": x for x in earlier["comparisons"]}
        recorded = earlier.get("design", used)  # rounds written before designs were recorded: trusted
        changed = [f"{k} {recorded[k]} -> {used[k]}" for k in DESIGN_KEYS if recorded[k] != used[k]]
        if changed:
            # Earlier rounds were decided by another design: mixing them would hold neither's error rates.
            raise CampaignError(
                c.origin,
                "statistics.decide",
                f"changed since round {round_number - 1} ({', '.join(changed)}): "
                f"delete {Path(layout.precision_round(name, 1)).parent}/ to decide again from the same runs",
            )
    budget = spec.get("budget_s")
    over_budget = budget is not None and spent >= float(budget)
    max_runs = int(spec["max_runs"])
    add: dict[str, int] = {}
    rows = []
    for a, b, var in comparisons(c):
        key = f"{a} vs {b}"
        old = before.get(key, {})
        if old.get("outcome", "continue") != "continue":
            rows.append(old)
            continue
        common = sorted(set(values.get(a, {})) & set(values.get(b, {})))
        d = [values[b][i] - values[a][i] for i in common]
        reference = sum(values[a][i] for i in common) / len(common) if common else 0.0
        # A side whose runs all failed would be given runs until max_runs.
        failed = [x for x in (a, b) if len(plan.get(x, [])) >= design.first_look and not values.get(x)]
        look = int(old.get("look", -1))
        dec = (
            decide.Decision("undecided", len(common), look)
            if failed
            else decide.decide(np.asarray(d), reference, design, look)
        )
        outcome, reason = dec.outcome, ""
        if failed:
            reason = f"no ok runs of {failed[0]}"
        elif outcome == "undecided":
            reason = "at the design's maximum size" if dec.tau >= 1 else "the difference is real but below min_effect"
        elif outcome == "continue" and over_budget:
            outcome, reason = "undecided", f"budget of {budget:g} s spent"
        elif outcome == "continue" and max(len(plan.get(a, [])), len(plan.get(b, []))) >= max_runs:
            outcome, reason = "undecided", f"max_runs ({max_runs}) reached"
        if outcome == "continue":
            want = dec.pairs_to_next_look(design)
            for path in (a, b):
                add[path] = max(add.get(path, 0), want)
        rows.append({
            "record_a": a, "record_b": b, "variable": var, "metric": spec["metric"], "outcome": outcome,
            "reason": reason, "pairs": dec.n, "round": round_number, "look": dec.look, "mean_a": reference,
            "difference": dec.estimate, "low": dec.low, "high": dec.high, "min_effect": dec.margin, "tau": dec.tau,
            "z_different": dec.z_different, "bound_different": dec.bound_different,
            "z_equivalent": dec.z_equivalent, "bound_equivalent": dec.bound_equivalent,
        })  # fmt: skip
    add = same_counts(add, plan, [(r["record_a"], r["record_b"]) for r in rows if r["outcome"] == "continue"])
    records: dict[str, dict[str, object]] = {}
    for path, runs in sorted(plan.items()):
        runs = sorted(runs)
        # At most GROWTH times the runs so far: an estimate from few runs is noisy.
        count = min(add.get(path, 0), max_runs - len(runs), precision.GROWTH * len(runs))
        records[path] = {"runs": runs, "ok": len(values.get(path, {})), "rel_ci": None, "met": path not in add,
                         "add": list(range(max(runs) + 1, max(runs) + 1 + max(count, 0)))}  # fmt: skip
    done = not any(r["add"] for r in records.values())
    decision = {"round": round_number, "mode": "decide", "design": used, "done": done, "spent_s": spent,
                "records": records, "comparisons": [_finite(r) for r in rows]}  # fmt: skip
    Path(output).write_text(json.dumps(decision, indent=1) + "\n")
    counts = {o: sum(r["outcome"] == o for r in rows) for o in decide.OUTCOMES}
    line = (f"decide {name}: round {round_number}, {sum(len(r) for r in plan.values())} runs ({spent:.0f} s): "
            + ", ".join(f"{n} {o}" for o, n in counts.items() if n))  # fmt: skip
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(log_file).write_text(
        line + "\n" + "".join(f"{r['record_a']} vs {r['record_b']}: {r['outcome']} {r['reason']}\n" for r in rows)
    )
    # The terminal hears every round (the loop may run for long) and the end.
    print(line + ("" if not done else " (done: see decisions.md)"), file=sys.stderr, flush=True)


#: The settings that make a decide campaign's design; a round refuses to go on under others.
DESIGN_KEYS = ("metric", "min_effect", "power", "variance")


def same_counts(add: dict[str, int], plan: dict[str, list[int]], open_pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Runs to add so that records linked by open comparisons end the round with
    as many runs as each other: a pair is run i of each side, neighbours in time
    only while the two sides are run round for round."""
    group = {path: path for path in add}

    def root(x: str) -> str:
        while group[x] != x:
            x = group[x]
        return x

    for a, b in open_pairs:
        if a in group and b in group:
            group[root(a)] = root(b)
    target: dict[str, int] = {}
    for path, n in add.items():
        target[root(path)] = max(target.get(root(path), 0), len(plan.get(path, [])) + n)
    return {path: target[root(path)] - len(plan.get(path, [])) for path in add}


#: Columns of decisions.csv, in order.
DECISION_COLUMNS = (
    "metric", "variable", "record_a", "record_b", "outcome", "reason", "pairs", "round", "mean_a", "difference",
    "low", "high", "min_effect", "z_different", "bound_different", "z_equivalent", "bound_equivalent",
)  # fmt: skip


def write_decisions(
    index: CampaignIndex, name: str, decision_file: str, csv_file: str, md_file: str, log_file: str,
    page_file: str | None = None,
) -> None:  # fmt: skip
    """decisions.csv, decisions.md and its report page from the last round's decision."""
    import csv

    from perfsnake.pages import html as html_render
    from perfsnake.pages import markdown as md_render
    from perfsnake.pages.model import Bold, Code, Document, Paragraph, Table

    decision = json.loads(Path(decision_file).read_text())
    rows = decision["comparisons"]
    with open(csv_file, "w", newline="") as f:
        writer = csv.DictWriter(f, DECISION_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: ("" if r.get(k) is None else r.get(k)) for k in DECISION_COLUMNS} for r in rows)
    # The design the rounds used (older rounds did not record it: the campaign's).
    spec = decision.get("design") or index.campaigns[name].precision or {}
    runs = sum(len(r["runs"]) for r in decision["records"].values())
    counts = {o: sum(r["outcome"] == o for r in rows) for o in decide.OUTCOMES}
    doc = Document(f"{name}: decided in the fewest runs", [
        Paragraph([f"{len(rows)} comparisons of ", Code(str(spec.get("metric"))),
                   f" (min_effect {float(spec.get('min_effect', 0)):.1%}, power {spec.get('power')}, variance estimate ",
                   Code(str(spec.get("variance"))), f") after {decision['round']} rounds, {runs} runs, "
                   f"{float(decision['spent_s']):.0f} s of runs: " + ", ".join(f"{n} {o}" for o, n in counts.items() if n) + "."]),
        Paragraph('A group-sequential design (perfsnake.statistics.decide) looked after each round: a wrong "different" or a wrong\n'
                  '"equivalent" is at most 5 % likely despite the looks. The interval is the 90 % one of the difference\n'
                  "(b - a), the two one-sided tests' own; undecided says why."),
        Table(["a", "b", "outcome", "pairs", "difference", "90 % interval", "+-min_effect", "why undecided"], [
            [str(r["record_a"]), str(r["record_b"]), Bold(str(r["outcome"])), str(r["pairs"]), _number(r["difference"]),
             f"[{_number(r['low'])}, {_number(r['high'])}]", _number(r["min_effect"]), str(r["reason"])]
            for r in rows
        ]),
    ])  # fmt: skip
    md_render.write(doc, Path(md_file))
    if page_file is not None:
        html_render.write(doc, Path(page_file))
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    Path(log_file).write_text(f"{len(rows)} decisions written\n")


def _number(value: object) -> str:
    return "" if value is None else f"{number(value):.4g}"


def _finite(row: dict[str, object]) -> dict[str, object]:
    """JSON has no NaN: an undefined number (no look yet) is null."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def metric_runs(c: Campaign, status_files: list[str], metric: str) -> tuple[dict[str, dict[int, float]], float]:
    """Per record path, run number -> `metric` of its ok runs; and the wall time all runs took."""
    workdir = Path.cwd()
    values: dict[str, dict[int, float]] = {}
    spent = 0.0
    for status in status_files:
        path, run = layout.split_status(c.name, status)
        result = collect_record_run(c, path, run, workdir)
        spent += number(result.get("wall_s") or 0.0)
        metrics: dict[str, object] = result["metrics"]  # type: ignore[assignment]
        value = result["wall_s"] if metric == "wall_s" else metrics.get(metric)
        if result["status"] == "ok" and isinstance(value, (int, float)) and math.isfinite(value):
            values.setdefault(path, {})[run] = float(value)
    return values, spent


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
    plan = index.rounds.first_plan(name)
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
        return index.rounds.run_targets(name)
    return index.rounds.plan_targets(name, decisions(index, decision_file, name)[0])


def final_decision(index: CampaignIndex, decision_file: DecisionFile, name: str) -> list[str]:
    if index.campaigns[name].precision is None:
        return []
    path = decisions(index, decision_file, name)[1]
    return [path] if path else []


def round_inputs(index: CampaignIndex, decision_file: DecisionFile, name: str, round_number: int) -> list[str]:
    """A round's runs: the first nb_runs, then what earlier rounds added."""
    if round_number == 1:
        return index.rounds.run_targets(name)
    return index.rounds.plan_targets(name, decisions(index, decision_file, name, upto=round_number)[0])


def batch_markers(index: CampaignIndex, decision_file: DecisionFile, name: str, upto: int | None = None) -> list[str]:
    """A batched campaign's markers in place of round_inputs (`upto`: a round's)
    or collect_inputs (None): the first plan's batches, then those of the runs
    each round read added (the chain `decisions` follows)."""
    markers = index.batches.first_markers(name)
    if index.campaigns[name].precision is None:
        return markers
    round_number = 1
    while upto is None or round_number < upto:
        decision = json.loads(Path(decision_file(name, round_number)).read_text())
        added = {path: r["add"] for path, r in decision["records"].items() if r["add"]}
        markers += index.batches.markers(name, round_number + 1, added)
        if decision["done"]:
            break
        round_number += 1
    return markers
