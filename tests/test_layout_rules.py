"""layout.py and the rules agree: every path the campaign index asks for is
made by exactly one rule's output pattern (rules spell their patterns
literally, as Snakemake workflows do; layout.py is where the package builds
them), so a path changed on one side only fails here, not in a user's run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, write_campaign

from perfsnake import layout
from perfsnake.machine import capabilities
from perfsnake.planning import index_from_config
from perfsnake.stages import profile

OUTPUT_KEYS = ("output:",)


def rule_outputs() -> dict[str, list[str]]:
    """rule name -> its output patterns, read from rules/*.smk."""
    outputs: dict[str, list[str]] = {}
    for smk in sorted((ROOT / "rules").glob("*.smk")):
        rule, section = None, None
        for line in smk.read_text().splitlines():
            if m := re.match(r"^(?:rule|checkpoint) (\w+):", line):
                rule, section = m.group(1), None
                outputs[rule] = []
            elif m := re.match(r"^    (\w+):", line):
                section = m.group(1)
            elif rule and section == "output":
                outputs[rule] += re.findall(r'"((?:results|resources)/[^"]*)"', line)
    return outputs


def constraints() -> dict[str, str]:
    """Wildcard regexes: layout's, and the rules' own wildcard_constraints."""
    regexes = dict(layout.WILDCARDS)
    for smk in (ROOT / "rules").glob("*.smk"):
        for name, regex in re.findall(r'^\s+(\w+)=r"([^"]+)",$', smk.read_text(), re.M):
            regexes.setdefault(name, regex)
    return regexes


def as_regex(pattern: str, regexes: dict[str, str]) -> re.Pattern[str]:
    # A wildcard repeated in a pattern takes the same value each time.
    parts = re.split(r"\{(\w+)\}", pattern)
    out, seen = "", set()
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out += re.escape(part)
        elif part in seen:
            out += f"(?P={part})"
        else:
            seen.add(part)
            out += f"(?P<{part}>{regexes.get(part, '.+')})"
    return re.compile(out + r"\Z")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A campaign index using the features that add targets: plots, perf
    record with a differential flame graph, a control, precision, figures."""
    tmp = tmp_path_factory.mktemp("layout")
    camp = write_campaign(tmp, {
        "name": "feat", "benchmark": "heater",
        "variables": {"cpu": [0], "interval_ms": [50, 100]},
        "nb_runs": 2, "duration_s": 0.2,
        "wrappers": [{"type": "perf_record", "frequency": 99}, {"type": "perf_stat"}, "sched_timeline", "offcpu"],
        "flamegraph_pairs": [{"a": {"interval_ms": 50}, "b": {"interval_ms": 100}}],
        "control": True,
        "plots": [{"kind": "bar", "x": "interval_ms", "y": "ops_per_s"}],
    })  # fmt: skip
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config.update({
        "campaigns": [str(camp)],
        "figures": [{"name": "fig", "kind": "bar", "x": "interval_ms", "y": "ops_per_s", "color": "campaign"}],
    })  # fmt: skip
    # The targets are paths, whoever plans them: nothing runs here, so what
    # this user may record (sched_timeline and offcpu record every CPU: root,
    # for a normal user) and whether this account has inferno (flame graphs)
    # are answered as on a machine that allows everything; every feature's
    # targets are checked in every account.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(capabilities, "recording_problem", lambda events: None)
        mp.setattr(profile, "find_tools", lambda flamegraph_dir=None: profile.Tools(
            "inferno-collapse-perf", "inferno-flamegraph", "inferno-diff-folded", kind="inferno"))  # fmt: skip
        yield index_from_config(config)  # (the test plans inside: flame-graph rules ask for the tools then)


def test_every_target_is_made_by_exactly_one_rule(index):
    regexes = constraints()
    patterns = [(rule, p, as_regex(p, regexes)) for rule, ps in rule_outputs().items() for p in ps]
    targets = [*index.all_targets(), *[t for name in index.campaigns for t in index.run_targets(name)]]
    targets += [t for c in index.campaigns for t in index.campaign_builds(c)]
    assert len(targets) > 30
    for target in targets:
        makers = {(rule, p) for rule, p, regex in patterns if regex.match(target)}
        assert len(makers) == 1, f"{target}: made by {sorted(makers) or 'no rule'}"


def test_the_layout_functions_spell_the_rules_patterns():
    # The same paths seen from the other side: each layout function, given
    # the rule's wildcards, gives the rule's literal pattern.
    outputs = {p for ps in rule_outputs().values() for p in ps}
    pairs = {
        layout.run_dir("{campaign}", "{record}", "{run}") + "/status.json": "run",
        layout.status_file("{campaign}", "{record}", "{run}"): "run",
        layout.csv("{campaign}"): "aggregate",
        layout.rows_json("{campaign}"): "aggregate",
        layout.results_json("{campaign}"): "collect",
        layout.summary("{campaign}"): "analyse",
        layout.comparisons("{campaign}"): "analyse",
        layout.significant("{campaign}"): "analyse",
        layout.plot("{campaign}", "{plot}", "svg"): "plot",
        layout.figure("{figure}", "svg"): "figure",
        layout.builds_ready("{campaign}"): "builds_ready",
        layout.source_dir("{source}"): "fetch",
        layout.build_dir("{bench}", "{bkey}"): "build",
        layout.tool("{tool}"): "tool",
        layout.precision_round("{campaign}", "{round}"): "precision",
        layout.folded("{campaign}", "{flat}"): "folded",
    }
    for path, rule in pairs.items():
        assert path in outputs, f"{path} (layout, for rule {rule}) is no rule's output"


def test_rules_files_exist_for_every_stage():
    stages = {p.stem for p in (ROOT / "perfsnake/stages").glob("*.py")} - {"__init__"}
    rules = {p.stem for p in Path(ROOT / "rules").glob("*.smk")}
    # a stage is a rule file's job bodies, or a helper of one (summary); rules/report.smk's
    # bodies are two stages, named for what they make: plots (figures) and tables (pages)
    core = {"fetch", "build", "run", "collect", "aggregate", "analysis", "profile", "noise_floor"}
    assert core | {"plots", "tables"} <= stages
    assert core | {"report"} <= rules
