"""Profile stage (rules/profile.smk): flame-graph tools, options and inputs.

inferno (crates.io) is the default, installed by `make setup` into
resources/tools/bin; when a FlameGraph checkout is configured (config key
`flamegraph_dir` or the FLAMEGRAPH_DIR environment variable), Brendan Gregg's
scripts are used instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import ROOT, layout
from perfsnake.errors import CampaignError

if TYPE_CHECKING:
    from perfsnake.planning import CampaignIndex

INFERNO_VERSION = "0.12.8"
INFERNO_BIN = ROOT / layout.third_party_tools() / "bin"
#: Campaign `flamegraph:` keys -> the option both tools understand.
OPTIONS = {
    "colors": "--colors",
    "width": "--width",
    "min_width": "--minwidth",
    "hash": "--hash",
    "reverse": "--reverse",
    "inverted": "--inverted",
}


@dataclass(frozen=True)
class Tools:
    collapse: str  # shell words reading `perf script` output on stdin
    flamegraph: str  # folded stacks on stdin -> SVG on stdout
    diff: str  # two folded files as arguments -> differential folded stacks
    kind: str


def find_tools(flamegraph_dir: str | None = None) -> Tools | None:
    directory = flamegraph_dir or os.environ.get("FLAMEGRAPH_DIR")
    if directory:
        d = Path(directory)
        scripts = [d / "stackcollapse-perf.pl", d / "flamegraph.pl", d / "difffolded.pl"]
        if all(s.exists() for s in scripts):
            collapse, draw, diff = (shlex.join(["perl", str(s)]) for s in scripts)
            return Tools(collapse, draw, diff, kind="FlameGraph")
        return None
    names = ["inferno-collapse-perf", "inferno-flamegraph", "inferno-diff-folded"]
    found = []
    for name in names:
        local = INFERNO_BIN / name
        # Relative to the working directory when shipped with the workflow, so
        # a moved checkout keeps the same rule parameters (nothing re-runs).
        path = layout.shipped(local) if local.exists() else shutil.which(name)
        if path is None:
            return None
        found.append(shlex.quote(path))
    return Tools(found[0], found[1], found[2], kind="inferno")


def require_tools(origin: str, flamegraph_dir: str | None = None) -> Tools:
    tools = find_tools(flamegraph_dir)
    if tools is None:
        where = flamegraph_dir or os.environ.get("FLAMEGRAPH_DIR")
        problem = (
            f"FlameGraph scripts not found in {where}"
            if where
            else f"inferno is not installed (run `make setup`, or cargo install inferno --locked --version {INFERNO_VERSION} --root {layout.third_party_tools()})"
        )
        raise CampaignError(origin, "wrappers", f"perf_record needs flame-graph tools: {problem}")
    return tools


def options(spec: dict[str, object]) -> str:
    """Command-line options for the campaign's `flamegraph:` mapping."""
    words: list[str] = []
    for key, value in spec.items():
        flag = OPTIONS[key]
        if isinstance(value, bool):
            if value:
                words.append(flag)
        else:
            words += [flag, str(value)]
    return shlex.join(words)


# ---- the profile rules' input functions and parameters ----------------------------
_TOOLS: dict[int, Tools] = {}


def check_tools(index: CampaignIndex) -> None:
    """Refuse at parse time, in one line, a campaign whose instruments need
    flame-graph tools that are not installed."""
    for c in index.campaigns.values():
        if c.instruments.needs_flame_tools():
            _TOOLS[id(index)] = require_tools(c.origin, index.flamegraph_dir)


def flame_tool(index: CampaignIndex, which: str) -> str:
    tools = _TOOLS.get(id(index))
    if tools is None:
        raise CampaignError("config", "wrappers", "no flame-graph tools")
    return str(getattr(tools, which))


def flame_options(index: CampaignIndex, name: str) -> str:
    return options(index.campaigns[name].data["flamegraph"])


def folded_inputs(index: CampaignIndex, name: str, flat_record: str, file: str = "perf.folded") -> list[str]:
    c = index.campaigns[name]
    record = layout.unflat(flat_record)
    if record not in c.by_path:
        raise KeyError(f"{name} has no record {record}")
    return [f"{layout.run_dir(name, record, i)}/{file}" for i in index.targets.plan(name)[record]]
