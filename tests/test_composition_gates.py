"""Gates composed with earlier directories (issue 44): a gate against an
earlier result directory measured in another machine state (another
kernel) says so in gates.csv, significant.md, the end-of-invocation summary
and `perfsnake check`, as compare.md does, instead of passing without a word."""

from __future__ import annotations

import csv
import re
import shutil

import pytest
from helpers import snakemake, write_campaign
from test_gates import campaign, check

pytestmark = pytest.mark.e2e


def test_a_gate_against_a_directory_measured_under_another_kernel_says_so(tmp_path):
    camp = write_campaign(tmp_path, campaign())
    snakemake(tmp_path, camp, "--cores", "1", "all")
    old = tmp_path / "old" / "results"
    shutil.copytree(tmp_path / "results", old)
    csv_file = old / "g" / "g.csv"
    text, count = re.subn(
        r"^# uname: .*$", "# uname: Linux 5.10.0-an-older-kernel x86_64", csv_file.read_text(), flags=re.M
    )
    assert count == 1
    csv_file.write_text(text)
    refs = [{"metric": "cost", "baseline": "old/results", "max_regression": "5%", "better": "lower"}]
    write_campaign(tmp_path, campaign(references=refs))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    with (tmp_path / "results/g/gates.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and all(r["verdict"] == "pass" and r["state_differs"] == "uname" for r in rows), rows
    assert all("machine state differs from the baseline's: uname" in r["reason"] for r in rows)
    assert "2 against a baseline measured in another machine state (uname)" in proc.stdout + proc.stderr
    assert "machine state differs from the baseline's: uname" in (tmp_path / "results/g/significant.md").read_text()
    out = check(tmp_path, camp)
    assert out.returncode == 0 and out.stdout.count("PASS, machine state differs") == 2, out.stdout + out.stderr
    # The same directory in the same state: no word of it.
    shutil.rmtree(old)
    shutil.copytree(tmp_path / "results", old)
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", "--forcerun", "analyse")
    with (tmp_path / "results/g/gates.csv").open() as f:
        assert all(not r.get("state_differs") for r in csv.DictReader(f))
    assert "another machine state" not in proc.stdout + proc.stderr
