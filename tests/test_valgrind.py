"""The valgrind wrapper as an instruction-count metric, end to end through
Snakemake with a real program: the count repeats across runs, moves with 1 %
more work, counts the program a shell starts, and feeds summary.csv and a
gate like any metric; what valgrind cannot run is refused in one line."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import compile_c, snakemake, write_campaign
from test_instruments import campaign

from perfsnake.campaign_csv import read_csv
from perfsnake.instruments.base import Context
from perfsnake.instruments.wrappers import Valgrind, cachegrind_metrics, parse_cachegrind

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed (make setup)")

#: N iterations of arithmetic a volatile store keeps from being folded away
PROGRAM = (Path(__file__).parent / "programs" / "fixed_work.c").read_text()

METRICS = ("instructions", "data_refs", "i1_misses", "d1_misses", "ll_misses", "cycles_estimate")


def program(tmp_path: Path) -> Path:
    source = tmp_path / "work.c"
    source.write_text(PROGRAM)
    return compile_c(source, tmp_path / "work")


@pytest.mark.e2e
def test_instructions_repeat_across_runs_and_move_with_one_percent_more_work(tmp_path):
    prog = program(tmp_path)
    # A gate on the instruction count like any metric: 1 % more work is a regression beyond 0.5 %.
    gate = {"metric": "valgrind.instructions", "where": {"n": 1010000}, "baseline": {"n": 1000000},
            "max_regression": "0.5%", "better": "lower"}  # fmt: skip
    data = campaign(f"{prog} {{n}} && echo value={{n}}", {"n": [1000000, 1010000]}, wrappers=["valgrind"],
                    nb_runs=3, references=[gate])  # fmt: skip
    snakemake(tmp_path, write_campaign(tmp_path, data), "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/i/i.csv")
    assert (frame["status"] == "ok").all(), frame
    counts = {n: sorted(group["valgrind.instructions"].astype(int)) for n, group in frame.groupby("n")}
    assert sorted(counts) == [1000000, 1010000] and all(len(c) == 3 for c in counts.values()), counts
    for n, values in counts.items():
        # Identical here; a path of another length (run-9, run-10) can move the shell's count by a few instructions.
        assert (values[-1] - values[0]) / values[0] <= 0.001, (n, values)
    more = counts[1010000][0] / counts[1000000][0] - 1
    assert 0.008 <= more <= 0.012, counts
    for metric in METRICS:
        assert frame[f"valgrind.{metric}"].notna().all(), metric
    assert (frame["valgrind.cycles_estimate"] >= frame["valgrind.instructions"]).all()
    # The shell and the program: two processes counted.
    assert (frame["valgrind.processes"] == 2).all(), frame["valgrind.processes"]
    with (tmp_path / "results/i/summary.csv").open(newline="") as f:
        summarised = {r["metric"] for r in csv.DictReader(f)}
    assert {f"valgrind.{m}" for m in METRICS} <= summarised, summarised
    # A comparison of the two records, as of any metric: 1 % more work, significant.
    with (tmp_path / "results/i/comparisons.csv").open(newline="") as f:
        (compared,) = [r for r in csv.DictReader(f) if r["metric"] == "valgrind.instructions"]
    assert compared["significant"] == "True" and 0.008 <= float(compared["relative_difference"]) <= 0.012, compared
    with (tmp_path / "results/i/gates.csv").open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["metric"] == "valgrind.instructions" and row["verdict"] == "fail", row


@pytest.mark.e2e
def test_a_shell_wrapped_command_counts_the_program_it_starts(tmp_path):
    """The command runs as `/bin/sh -c ...`: valgrind follows the shell into
    the program (--trace-children), and its count is the program's, far
    above a shell that starts only `true`."""
    prog = program(tmp_path)
    command = f"if [ {{what}} = prog ]; then {prog} 1000000; else true; fi; echo value=1"
    data = campaign(command, {"what": ["prog", "true"]}, wrappers=["valgrind"], nb_runs=1)
    snakemake(tmp_path, write_campaign(tmp_path, data), "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/i/i.csv").set_index("what")
    # 1e6 iterations of the loop are about 9e6 instructions; the shell and true together under 1e6.
    assert frame.loc["prog", "valgrind.instructions"] > 8_000_000, frame["valgrind.instructions"]
    assert frame.loc["true", "valgrind.instructions"] < 1_000_000, frame["valgrind.instructions"]


@pytest.mark.e2e
def test_a_program_valgrind_refuses_is_a_failed_run_with_its_reason(tmp_path):
    """valgrind does not execute a set-user-ID program: the run fails and
    its stderr.txt says why, rather than a count of the shell alone."""
    target = tmp_path / "suid-true"
    shutil.copy("/bin/true", target)
    target.chmod(0o4755)
    data = campaign(f"{target} && echo value=1", {"x": [1]}, wrappers=["valgrind"], nb_runs=1)
    snakemake(tmp_path, write_campaign(tmp_path, data), "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/i/i.csv")
    assert (frame["status"] == "failed").all(), frame["status"]
    stderr = (tmp_path / "results/i/runs/x-1/run-1/stderr.txt").read_text()
    assert "Can't execute setuid/setgid/setcap executable" in stderr, stderr


def test_a_setuid_program_inside_valgrind_is_refused_for_the_real_reason(tmp_path):
    """cannot_start says, before any run, what valgrind itself would refuse
    at the run: the program is set-user-ID (valgrind really refuses it)."""
    target = tmp_path / "suid-true"
    shutil.copy("/bin/true", target)
    target.chmod(0o4755)
    wrapper = Valgrind({"type": "valgrind"}, "c.yaml", "wrappers[0]")
    assert wrapper.cannot_start([str(target)]) == f"{target} is set-user-ID, and valgrind does not run such programs"
    ran = subprocess.run([*wrapper.prefix(Context({}, tmp_path)), str(target)], capture_output=True, text=True,
                         check=False)  # fmt: skip
    assert ran.returncode != 0 and "Can't execute setuid/setgid/setcap executable" in ran.stderr, ran.stderr
    target.chmod(0o755)
    assert wrapper.cannot_start([str(target)]) is None
    target.chmod(0o2755)
    assert "is set-group-ID" in (wrapper.cannot_start([str(target)]) or "")


@pytest.mark.skipif(shutil.which("ltrace") is None, reason="ltrace is not installed")
def test_valgrind_around_ltrace_is_refused_in_one_line_for_the_real_reason(tmp_path):
    """Around ltrace, valgrind (following children) makes ltrace fail: its
    child's /proc/PID/exe is valgrind's tool, not the program. validate says
    so in one line, naming the key, and writes nothing."""
    probe = tmp_path / "probe"
    probe.mkdir()
    wrapper = Valgrind({"type": "valgrind"}, "c.yaml", "wrappers[0]")
    ran = subprocess.run([*wrapper.prefix(Context({}, probe)), "ltrace", "-c", "-f", "-o", str(probe / "lt.txt"),
                          "/bin/true"], capture_output=True, text=True, check=False)  # fmt: skip
    assert ran.returncode != 0 and "/exe" in ran.stderr, ran.stderr
    camp = write_campaign(tmp_path, campaign("echo value=1", {"x": [1]}, wrappers=["valgrind", "ltrace"]))
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(camp)], cwd=tmp_path,
                          capture_output=True, text=True, check=False)  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith(f"perfsnake: error: {camp}: wrappers[0]: valgrind cannot start wrappers[1] (ltrace): ")
    assert "/proc/PID/exe" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["campaigns", "probe"]


def test_a_valgrind_that_cannot_run_here_is_refused_in_one_line(tmp_path):
    """validate runs valgrind once with the wrapper's options: one that
    cannot run a program here (here: a build whose tool is missing, as a
    partial install leaves it) is refused in one line with valgrind's words."""
    fake = tmp_path / "bin"
    fake.mkdir()
    # The real valgrind, told to load its tools from an empty directory.
    (fake / "valgrind").write_text(f'#!/bin/sh\nVALGRIND_LIB={tmp_path}/empty exec {shutil.which("valgrind")} "$@"\n')
    (fake / "valgrind").chmod(0o755)
    (tmp_path / "empty").mkdir()
    camp = write_campaign(tmp_path, campaign("echo value=1", {"x": [1]}, wrappers=["valgrind"]))
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(camp)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1, proc.stdout + proc.stderr
    assert lines[0].startswith(
        f"perfsnake: error: {camp}: wrappers[0]: valgrind cannot run a program on this machine: "
    )
    assert "failed to start tool 'cachegrind'" in lines[0], lines[0]


def test_counts_are_read_by_event_name_and_summed_over_processes():
    text = "desc: x\ncmd: ./p\nevents: Dr Ir I1mr ILmr D1mr DLmr Dw D1mw DLmw\nfl=a.c\n1 2 3\nsummary: 30 100 4 2 6 3 20 5 1\n"
    one = parse_cachegrind(text)
    assert one == {"Ir": 100, "Dr": 30, "Dw": 20, "I1mr": 4, "ILmr": 2, "D1mr": 6, "DLmr": 3, "D1mw": 5, "DLmw": 1}
    got = cachegrind_metrics([one, one])
    # per process: L1 accesses 150, L1 misses 15, RAM 6, LL hits 9: 135 + 5 x 9 + 35 x 6 = 390
    assert got == {"instructions": 200, "data_refs": 100, "i1_misses": 8, "d1_misses": 22, "ll_misses": 12,
                   "cycles_estimate": 780, "processes": 2}  # fmt: skip
    # Without the cache simulation only the instructions are known.
    assert cachegrind_metrics([{"Ir": 7}])["instructions"] == 7
    assert cachegrind_metrics([{"Ir": 7}])["cycles_estimate"] is None
    assert parse_cachegrind("events: Ir\n") == {} and cachegrind_metrics([])["instructions"] is None


def test_an_earlier_attempts_files_are_not_counted(tmp_path):
    """A re-run's run directory may hold the files of the attempt before:
    only those written after this attempt's command.sh count."""
    old = tmp_path / "cachegrind.11.out"
    old.write_text("events: Ir\nsummary: 5\n")
    os.utime(old, ns=(1, 1))
    (tmp_path / "command.sh").write_text("exec true\n")
    (tmp_path / "cachegrind.12.out").write_text("events: Ir\nsummary: 7\n")
    metrics = Valgrind({"type": "valgrind"}, "c.yaml", "wrappers[0]").metrics(tmp_path)
    assert metrics["valgrind.instructions"] == 7 and metrics["valgrind.processes"] == 1
