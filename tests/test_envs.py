"""Software deployment declarations (--sdm conda / apptainer): neither conda
channels nor apptainer are reachable here, so they are checked, not run."""

from __future__ import annotations

import re

import yaml
from helpers import ROOT

RULE = re.compile(r"^(?:rule|checkpoint) (\w+):\n(.*?)(?=^\S|\Z)", re.M | re.S)


def rules() -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "rules").glob("*.smk")):
        for name, body in RULE.findall(path.read_text()):
            out[name] = body
    return out


def test_every_rule_running_software_declares_a_pinned_conda_env():
    found = rules()
    assert {"fetch", "build", "tool", "aggregate", "plot", "flamegraph"} <= set(found)
    for name, body in found.items():
        runs_software = re.search(r"^    (shell|script):", body, re.M)
        # `run:` blocks execute inside the Snakemake process (the lean
        # measurement path); conda: does not apply to them.
        if not runs_software:
            assert re.search(r"^    run:", body, re.M) or "input:" in body, name
            continue
        env = re.search(r'^    conda:\n        "\.\./(envs/[\w.-]+\.yaml)"', body, re.M)
        assert env, f"rule {name} runs software without a conda: environment"
        spec = yaml.safe_load((ROOT / env.group(1)).read_text())
        assert spec["channels"][-1] == "nodefaults"
        for dep in spec["dependencies"]:
            assert re.fullmatch(r"[a-z0-9_.-]+=[0-9][\w.]*", dep), f"{env.group(1)}: {dep!r} is not pinned"


def test_workflow_declares_a_pinned_container_image():
    text = (ROOT / "workflow" / "Snakefile").read_text()
    image = re.search(r'^container: "docker://([^"]+)"', text, re.M)
    assert image and not image.group(1).endswith(":latest") and ":" in image.group(1)
