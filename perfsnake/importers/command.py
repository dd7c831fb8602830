"""`perfsnake import TOOL FILE... --campaign NAME`: another tool's results as a campaign.

Writes `config/campaigns/NAME.yaml` (an `imported` benchmark naming the
files, with a figure of the tool's main metric), then makes it with the
workflow: per-run rows, summary with intervals, corrected comparisons,
plots and the report's pages, as for any campaign. The files are read
first: a file the tool did not write is refused in one line and nothing is
written.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from perfsnake.importers import Imported, ImportFormatError, read

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def default_plot(data: Imported) -> dict[str, object]:
    """A bar chart of the main metric over the variable with the most values,
    one panel per value of the next one that varies, each with its own scale
    (a tool's benchmarks differ by orders of magnitude)."""
    distinct = {v: len({str(r.record[v]) for r in data.rows}) for v in data.variables}
    varying = sorted((v for v in data.variables if distinct[v] > 1), key=lambda v: -distinct[v])
    x = varying[0] if varying else data.variables[0]
    plot: dict[str, object] = {"kind": "bar", "x": x, "y": data.primary}
    if len(varying) > 1:
        plot |= {"column": varying[1], "resolve_x": "independent", "resolve_y": "independent"}
    plot["title"] = f"{data.tool}: {data.primary} by {x}"
    return plot


def campaign_yaml(tool: str, files: list[str], name: str, data: Imported) -> str:
    spec = {
        "name": name,
        "description": f"Results measured by {tool}, imported from {', '.join(files)}.",
        "benchmark": {"type": "imported", "tool": tool, "files": files},
        "plots": [default_plot(data)],
    }
    head = f"# Written by `perfsnake import {tool}`: {tool}'s own measurements, analysed by perfsnake.\n"
    return head + yaml.safe_dump(spec, sort_keys=False)


def write(tool: str, files: list[str], name: str, output: Path | None, force: bool) -> Path:
    """Check everything, then write the campaign file; returns its path."""
    where = "perfsnake import"
    if not _NAME.match(name):
        raise ImportFormatError(where, "--campaign", f"{name!r} is not a campaign name (letters, digits, _ . -)")
    data = read(tool, [Path(f) for f in files], where)
    out = output or Path("config/campaigns") / f"{name}.yaml"
    if out.exists() and not force:
        raise ImportFormatError(str(out), "", "exists (pass --force to replace it)")
    from perfsnake.campaign import load_campaign

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(campaign_yaml(tool, files, name, data))
    try:
        load_campaign(tmp, origin=str(out))
    except Exception:
        tmp.unlink()
        raise
    tmp.replace(out)
    return out


def make(campaign: Path, extra: list[str]) -> int:
    """The workflow on the written campaign (the Makefile's and the tests' way)."""
    from perfsnake.artifact import config_path, snakemake_command

    cmd = snakemake_command(config_path(), [f"campaign={campaign}"], extra, "--cores", "1", "all")
    return subprocess.run(cmd, check=False).returncode
