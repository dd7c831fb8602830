"""perfsnake compare: one campaign's results from several runs or machines."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pandas as pd
import pytest
from helpers import ROOT, snakemake, write_campaign

from perfsnake.compare import CompareError, load_side

pytestmark = pytest.mark.e2e


def run_side(workdir, base: int, env_path: str | None = None, **extra: object) -> None:
    counter = workdir / "counter"
    command = f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; echo value=$(({base} + n % 3))"
    camp = write_campaign(workdir, {
        "name": "cmp",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1]},
        "nb_runs": 6,
        **extra,
    })  # fmt: skip
    env = None if env_path is None else {"PATH": env_path}
    snakemake(workdir, camp, "--cores", "1", "all", env=env)


def test_two_result_directories_with_different_machines_and_results(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    run_side(a, 10)
    # Side b on purpose with another compiler in the metadata (a cc that says so).
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "cc").write_text(
        '#!/bin/sh\n[ "$1" = --version ] && { echo "cc (Other) 99.1"; exit 0; }\nexec /usr/bin/cc "$@"\n'
    )
    (fake / "cc").chmod(0o755)
    run_side(b, 12, f"{fake}:{os.environ['PATH']}")
    out = tmp_path / "cmp-out"
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "compare", str(a / "results/cmp"), str(b / "results/cmp"),
                           "--output", str(out)], cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "| compiler | cc (Debian" in proc.stdout and "| cc (Other) 99.1 |" in proc.stdout
    table = pd.read_csv(out / "compare.csv")
    row = table[(table["metric"] == "value") & (table["side"] == 2)].iloc[0]
    # 10, 11, 12 against 12, 13, 14: the ratio is 13/11, its interval around it, the difference real.
    assert row["ratio"] == pytest.approx(13 / 11) and row["ratio_ci_low"] < 13 / 11 < row["ratio_ci_high"]
    assert bool(row["significant"])
    assert (out / "compare.md").read_text() == proc.stdout
    # The A/A check: another compiler is another machine state, and the difference says so.
    assert "DIFFERS: compiler" in proc.stdout and row["note"] == "machine state differs"


def test_a_result_set_compared_with_itself_has_the_same_machine_state(tmp_path):
    run_side(tmp_path, 10)
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "compare", str(tmp_path / "results/cmp"),
                           str(tmp_path / "results/cmp")], cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (
        "The same on every side (cpu_model, microcode, uname" in proc.stdout
        and "machine state differs" not in proc.stdout
    )


def test_artifact_zips_and_bad_sides(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    run_side(a, 10)
    archive = tmp_path / "cmp-artifact.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(a / "results/cmp/cmp.csv", "cmp-artifact/results/cmp/cmp.csv")
    side = load_side(archive)
    assert side.campaign == "cmp" and len(side.runs) == 6
    with pytest.raises(CompareError, match="neither a result directory nor an artifact zip"):
        load_side(tmp_path / "a/results/cmp/cmp.csv")
    other = tmp_path / "other"
    (other / "results/zzz").mkdir(parents=True)
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "compare", str(a / "results/cmp"), str(other / "results/zzz")],
                          cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "no zzz.csv" in proc.stderr


def test_compare_with_earlier_results_makes_a_table_and_a_report_page(tmp_path):
    earlier, now = tmp_path / "earlier", tmp_path / "now"
    earlier.mkdir()
    now.mkdir()
    run_side(earlier, 10)
    # A path that is neither a result directory nor a zip: one line, before anything runs.
    bad = write_campaign(now, {"name": "cmp", "benchmark": {"type": "command", "command": "echo value=1",
                                "metrics": {"value": r"value=(\d+)"}}, "compare_with": [str(now / "nope")]})  # fmt: skip
    proc = snakemake(now, bad, "--cores", "1", "all", check=False)
    assert proc.returncode != 0 and "compare_with[0]: " in proc.stderr and "no such result directory" in proc.stderr
    assert not (now / "results").exists()
    run_side(now, 20, compare_with=[str(earlier / "results/cmp")])
    table = pd.read_csv(now / "results/cmp/compare/compare.csv")
    later = table[(table["side"] == 2) & (table["metric"] == "value")].iloc[0]
    assert later["mean"] == pytest.approx(21) and later["ratio"] == pytest.approx(21 / 11)
    page = (now / "results/cmp/report/compare.html").read_text()
    assert "compared with earlier results" in page and "What differs between the sides" in page
    assert str(earlier / "results/cmp") in page
