"""Flame-graph tooling and the campaign's flame-graph targets.

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

from perfsnake import ROOT
from perfsnake.errors import CampaignError

INFERNO_VERSION = "0.12.8"
INFERNO_BIN = ROOT / "resources" / "tools" / "bin"
#: Campaign `flamegraph:` keys -> the option both tools understand.
OPTIONS = {"colors": "--colors", "width": "--width", "min_width": "--minwidth", "hash": "--hash", "reverse": "--reverse", "inverted": "--inverted"}


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
            return Tools(*(shlex.join(["perl", str(s)]) for s in scripts), kind="FlameGraph")
        return None
    names = ["inferno-collapse-perf", "inferno-flamegraph", "inferno-diff-folded"]
    found = []
    for name in names:
        local = INFERNO_BIN / name
        path = str(local) if local.exists() else shutil.which(name)
        if path is None:
            return None
        found.append(shlex.quote(path))
    return Tools(*found, kind="inferno")


def require_tools(origin: str, flamegraph_dir: str | None = None) -> Tools:
    tools = find_tools(flamegraph_dir)
    if tools is None:
        where = flamegraph_dir or os.environ.get("FLAMEGRAPH_DIR")
        problem = (
            f"FlameGraph scripts not found in {where}"
            if where
            else f"inferno is not installed (run `make setup`, or cargo install inferno --locked --version {INFERNO_VERSION} --root resources/tools)"
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


def flat(record_path: str) -> str:
    """A record path as one component (',' never occurs in escaped values)."""
    return record_path.replace("/", ",")


def unflat(key: str) -> str:
    return key.replace(",", "/")
