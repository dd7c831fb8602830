"""The workflow from a checkout and a virtual environment whose paths hold a
space (`~/My Projects/perfsnake`): every rule kind runs (a tool compiled,
a build, a run, the scripts in and out of the Snakemake process)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from helpers import statuses
from users import copy_checkout

pytestmark = pytest.mark.e2e


def _venv_with_our_packages(where: Path) -> Path:
    """A venv at `where` that sees this suite's packages (the plugins' .pth included)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    ours = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "perfsnake-suite.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python


#: scripts in the Snakemake process or each its own Python; without our
#: workflow profile (as a module is used) no --force-use-threads: the local
#: executor starts each `run:` job as `python -m snakemake`
CASES = [("true", []), ("false", []), ("true", ["--workflow-profile", "none", "--resources", "bench_lock=1"])]


@pytest.mark.parametrize(("in_process", "profile"), CASES, ids=["in-process", "script-python", "spawned-jobs"])
def test_a_checkout_under_a_path_with_a_space_runs(tmp_path, in_process, profile):
    base = tmp_path / "My Projects"
    checkout = copy_checkout(base / "perfsnake")
    python = _venv_with_our_packages(base / "a venv")
    campaign = base / "campaigns" / "c.yaml"
    campaign.parent.mkdir()
    campaign.write_text(yaml.safe_dump({
        "name": "sp",
        "benchmark": {"type": "command", "build": "printf '#!/bin/sh\\necho value=$1\\n' > {build_dir}/v; chmod +x {build_dir}/v",
                      "command": "{build_dir}/v {x}", "metrics": {"value": r"value=(\S+)"}},
        "variables": {"x": [1, 2]}, "nb_runs": 2,
    }))  # fmt: skip
    proc = subprocess.run([str(python), "-m", "snakemake", "--cores", "1", "all", *profile, "--config",
                           f"campaign={campaign}", f"scripts_in_process={in_process}"], cwd=checkout, capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert sorted(s["status"] for s in statuses(checkout, "sp").values()) == ["ok"] * 4
    assert (checkout / "results/sp/summary.csv").is_file()
