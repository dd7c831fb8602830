"""`perfsnake validate` refuses what the workflow refuses before its first
run, with the same line, and takes a workflow configuration too (issue 44,
break 10): both plan through perfsnake.stages.validate.plan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, snakemake, write_campaign

pytestmark = pytest.mark.e2e


def validate(workdir: Path, *files: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perfsnake", "validate", *files], cwd=workdir,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def command(**extra: object) -> dict:
    return {
        "name": "b",
        "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\S+)"}},
        "nb_runs": 4,
        **extra,
    }


@pytest.mark.parametrize(
    "extra",
    [
        {"batch": 4, "wrappers": [{"type": "perf_record", "frequency": 99}]},
        {"batch": 2, "wrappers": ["perf_stat", {"type": "perf_record", "frequency": 99}]},
    ],
    ids=["batch-perf_record", "batch-perf_stat-perf_record"],
)
def test_validate_refuses_what_the_workflow_refuses_with_the_same_line(tmp_path, extra):
    camp = write_campaign(tmp_path, command(**extra))
    before = tree(tmp_path)
    proc = validate(tmp_path, str(camp))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"perfsnake: error: {camp}: batch: ")
    assert tree(tmp_path) == before  # nothing written
    dry = snakemake(tmp_path, camp, "-n", check=False)
    assert dry.returncode != 0 and lines[0] in dry.stderr.splitlines()


def test_validate_takes_a_workflow_configuration_and_checks_its_figures(tmp_path):
    camp = write_campaign(tmp_path, command(variables={"x": [1, 2]}))
    figure = {"name": "fig", "campaigns": ["b"], "kind": "line", "x": "x", "y": "value"}
    config = tmp_path / "workflow.yaml"
    config.write_text(yaml.safe_dump({"campaigns": [str(camp)], "figures": [figure]}))
    proc = validate(tmp_path, str(config))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"{camp}: ok (2 records x 4 runs)", f"{config}: ok (1 figures)"]
    # A figure over a campaign the configuration does not list: refused by both, in one line.
    config.write_text(yaml.safe_dump({"campaigns": [str(camp)], "figures": [{**figure, "campaigns": ["nope"]}]}))
    proc = validate(tmp_path, str(config))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "nope" in lines[0], proc.stderr
    dry = snakemake(tmp_path, None, "-n", "--configfile", str(config), check=False)
    assert dry.returncode != 0 and lines[0] in dry.stderr.splitlines(), dry.stderr[-2000:]


def test_the_ready_figure_configurations_validate():
    files = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "config/figures").glob("*.yaml"))]
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", *files], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False, env={**os.environ})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if "figures)" in line] == [f"{f}: ok (1 figures)" for f in files]
