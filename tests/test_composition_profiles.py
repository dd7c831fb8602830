"""Profiles composed with unusual values (issue 44): a record whose escaped
directory name carries `~` (a periodic value such as a CPU mask, a value
too long for a file name) is profiled like any other, its flame graph and
its differential graphs drawn."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from urllib.parse import unquote

import pytest
from helpers import skip_without_flame_tools, snakemake, write_campaign
from test_why import _campaign as planted_campaign

from perfsnake import layout
from perfsnake.escape import var_component

pytestmark = pytest.mark.e2e

PERIODIC = "f" * 30  # a 120-CPU mask: Snakemake would take it for a periodic wildcard
LONG = "x" * 130  # longer than a file name's component may be


def test_flat_names_with_tilde_match_and_pairs_split_at_the_separator():
    flats = [layout.flat(var_component("mask", v)) for v in (PERIODIC, LONG, "1")]
    assert flats[0].endswith("~") and "~" in flats[1] and "~" not in flats[2]
    for a in flats:
        assert re.fullmatch(layout.FLAT_RE, a)
        for b in flats:
            pair = re.fullmatch(f"({layout.FLAT_RE}){layout.PAIR_SEPARATOR}({layout.FLAT_RE})", f"{a}~vs~{b}")
            assert pair and pair.groups() == (a, b)


def test_a_record_whose_name_ends_in_tilde_gets_its_flame_graphs(tmp_path):
    skip_without_flame_tools()
    camp = write_campaign(
        tmp_path,
        {
            "name": "tl",
            "benchmark": {
                "type": "command",
                "command": "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; echo value=1",
                "metrics": {"value": r"value=(\S+)"},
            },
            "variables": {"mask": [PERIODIC, LONG]},
            "nb_runs": 1,
            "wrappers": [{"type": "perf_record", "frequency": 499}],
            "flamegraph_pairs": [{"a": {"mask": PERIODIC}, "b": {"mask": LONG}}],
        },
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    base = tmp_path / "results/tl"
    records = [var_component("mask", v) for v in (PERIODIC, LONG)]
    for record in records:
        ET.parse(base / "runs" / record / "run-1" / "flamegraph.svg")
    a, b = records
    for first, second in ((a, b), (b, a)):
        ET.parse(base / "diff" / f"{first}{layout.PAIR_SEPARATOR}{second}.svg")
    assert (base / "report/flamegraphs.html").is_file()


def test_why_md_links_resolve_for_values_escaped_in_file_names(tmp_path):
    """why.md's image links, decoded as a Markdown viewer decodes them, name
    the differential graphs on disk, for records whose names hold %-escapes."""
    skip_without_flame_tools()
    camp = planted_campaign(
        tmp_path, variables={"variant": ["plain", "hot"], "label": ["a b/c"]}, profile_differences={"top": 1, "runs": 2}
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    why = tmp_path / "results/planted/why/why.md"
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", why.read_text())
    assert links
    for link in links:
        target = (why.parent / unquote(link)).resolve()
        assert target.is_file() and target.stat().st_size > 0, (link, target)
        assert "label-a%20b%2Fc" in target.name


def test_precision_rounds_profile_every_run_they_add(tmp_path):
    """perf_record under `precision`: the runs later rounds add get their
    report and flame graph too, and the record's merged stacks fold them all."""
    skip_without_flame_tools()
    camp = write_campaign(
        tmp_path,
        {
            "name": "pr",
            "benchmark": {
                "type": "command",
                # Values are the run numbers: the interval never gets narrow, so max_runs are run.
                "command": 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo value=$(basename "$PWD" | tr -dc 0-9)',
                "metrics": {"value": r"value=(\S+)"},
            },
            "variables": {"x": [1]},
            "precision": {"metric": "value", "target_rel_ci": 0.001, "min_runs": 2, "max_runs": 4},
            "wrappers": [{"type": "perf_record", "frequency": 499}],
        },
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = sorted((tmp_path / "results/pr/runs/x-1").glob("run-*"))
    assert [r.name for r in runs] == ["run-1", "run-2", "run-3", "run-4"]
    for rdir in runs:
        ET.parse(rdir / "flamegraph.svg")
        assert (rdir / "perf.report").stat().st_size > 0
    log = (tmp_path / "results/pr/folded/x-1.log").parent
    assert (log / "x-1.folded").is_file()
    page = (tmp_path / "results/pr/report/flamegraphs.html").read_text()
    assert all(f"run {i}" in page for i in range(1, 5)), page[:2000]
