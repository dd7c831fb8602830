"""The workflow as users deploy it: a moved checkout, a Snakemake module, the
.test smoke configuration. Real Snakemake runs of a short heater campaign."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, env_without_snakemake

pytestmark = pytest.mark.e2e

SMOKE = ROOT / ".test" / "config" / "campaigns" / "smoke.yaml"


def _sm(workdir: Path, *args: str, snakefile: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, "--directory", str(workdir), "--quiet", "host", *args]
    if snakefile is not None:
        cmd[1:1] = ["-s", str(snakefile)]
    proc = subprocess.run(
        cmd, cwd=workdir, capture_output=True, text=True, timeout=600, env=env_without_snakemake(), check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}")
    return proc


def _checkout_copy(dest: Path) -> Path:
    """The tracked files of this checkout (what a clone holds), in `dest`."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in files:
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("tests/", "bench/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_a_moved_checkout_plans_nothing(tmp_path):
    first = _checkout_copy(tmp_path / "first")
    args = [
        "--workflow-profile",
        "profiles/default",
        "--cores",
        "1",
        "all",
        "--config",
        "campaign=.test/config/campaigns/smoke.yaml",
    ]
    _sm(first, *args, snakefile=first / "workflow" / "Snakefile")
    assert (first / "results/smoke/smoke.csv").exists()
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.copytree(first, moved, symlinks=True)  # keeps modification times, as cp -a does
    shutil.rmtree(first)  # nothing may still point at the old place
    proc = _sm(moved, "-n", *args, snakefile=moved / "workflow" / "Snakefile")
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    # And a real invocation there runs no job either.
    proc = _sm(moved, *args, snakefile=moved / "workflow" / "Snakefile")
    assert "rule run:" not in proc.stdout + proc.stderr and "rule build:" not in proc.stdout + proc.stderr


def _module_workflow(workdir: Path, prefix: bool) -> None:
    (workdir / "campaigns").mkdir(parents=True)
    shutil.copy(SMOKE, workdir / "campaigns" / "smoke.yaml")
    (workdir / "config.yaml").write_text("campaigns:\n  - campaigns/smoke.yaml\n")
    use = "use rule * from perfsnake as ps_*" if prefix else "use rule * from perfsnake"
    (workdir / "Snakefile").write_text(
        f'configfile: "config.yaml"\n\n\nmodule perfsnake:\n    snakefile:\n        "{ROOT / "workflow" / "Snakefile"}"\n'
        f"    config:\n        config\n\n\n{use}\n"
    )


def test_used_as_a_module_with_a_prefix(tmp_path):
    _module_workflow(tmp_path, prefix=True)
    refused = _sm(tmp_path, "--cores", "1", check=False)
    assert refused.returncode != 0 and "bench_lock is not a global resource" in refused.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "resources").exists()
    proc = _sm(tmp_path, "--cores", "1", "--resources", "bench_lock=1")
    out = proc.stdout + proc.stderr
    assert "localrules directive specifies rules that are not present" not in out
    assert "localrule ps_collect:" in out and "rule ps_run:" in out or "localrule ps_run:" in out
    text = (tmp_path / "results/smoke/smoke.csv").read_text()
    assert text.count("\nsmoke,heater,") == 4 and ",ok," in text


def test_the_smoke_configuration_runs(tmp_path):
    work = tmp_path / ".test"
    shutil.copytree(ROOT / ".test" / "config", work / "config")
    _sm(
        work,
        "--workflow-profile",
        str(ROOT / "profiles" / "default"),
        "--cores",
        "1",
        "all",
        snakefile=ROOT / "workflow" / "Snakefile",
    )
    assert (work / "results/smoke/summary.csv").exists() and list((work / "results/smoke/plots").glob("*.png"))


def test_an_installed_package_carries_its_c_sources(tmp_path):
    # A regular (not editable) install: the C sources are package data, and
    # the layout finds them beside the installed package, not in a checkout.
    import sys

    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "perfsnake", tree / "perfsnake", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tree)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--target", str(target), str(tree)], check=True, timeout=300)  # fmt: skip
    probe = "from perfsnake.layout import CSRC, c_source; print(CSRC); print(c_source('psrun', 'psrun.c').read_text())"
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target)},
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    where, text = out.split("\n", 1)
    assert Path(where) == target / "perfsnake" / "csrc"
    assert text.rstrip("\n") == (ROOT / "perfsnake/csrc/psrun/psrun.c").read_text().rstrip("\n")
    shipped = {p.relative_to(ROOT / "perfsnake/csrc") for p in (ROOT / "perfsnake/csrc").rglob("*") if p.is_file()}
    installed = {p.relative_to(Path(where)) for p in Path(where).rglob("*") if p.is_file()}
    assert shipped and shipped <= installed
    assert not list(target.glob("perfsnake/csrc/**/__init__.py"))
