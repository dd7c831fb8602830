"""Placement composed with observer wrappers (issue 44): under perf stat,
time or a shell that forks the program, the placement daemon places the
program's threads, never the wrapper's: thread 0 is the program's main
thread, so `close`, `far` and `round_robin` keep their promise."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from helpers import snakemake, write_campaign

from perfsnake.machine.sysinfo import online_cpus

pytestmark = pytest.mark.e2e

PROGRAM = Path(__file__).parent / "data" / "threads_report.c"


@pytest.mark.parametrize(
    ("wrappers", "command"),
    [
        ([{"type": "perf_stat", "events": ["task-clock"]}], "{build_dir}/threads 4"),
        (["time"], "{build_dir}/threads 4"),
        ([], "{build_dir}/threads 4; true"),  # a shell that forks the program and waits for it
    ],
    ids=["perf_stat", "time", "sh-forks"],
)
def test_placement_under_an_observer_places_the_programs_threads(tmp_path, wrappers, command):
    camp = write_campaign(tmp_path, {
        "name": "place",
        "benchmark": {"type": "command", "build": f"cc -O2 -pthread -o {{build_dir}}/threads {shlex.quote(str(PROGRAM))}",
                      "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": {"placement": ["round_robin"]},
        "pre_run_hooks": ["placement"], "wrappers": wrappers, "nb_runs": 1, "timeout_s": 60,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    rdir = tmp_path / "results/place/runs/placement-round_robin/run-1"
    log = (rdir / "daemon-placement" / "stdout.txt").read_text()
    placed = [(int(t), int(k), int(c), int(p)) for t, k, c, p in
              re.findall(r"^tid (\d+) thread (\d+) policy round_robin cpu (\d+) pid (\d+)", log, re.M)]  # fmt: skip
    # One process placed, the program's: its main thread is thread 0, then its four workers.
    assert len({p for *_, p in placed}) == 1, log
    assert [k for _, k, _, _ in placed] == list(range(5)), log
    assert placed[0][0] == placed[0][3], log  # thread 0 is the process's main thread (tid = pid)
    assert "observer not placed" in log, log  # the shell (and the wrapper) were seen and left alone
    cpus = online_cpus()
    allowed = dict(re.findall(r"^thread (\d+) allowed (\S+)", (rdir / "stdout.txt").read_text(), re.M))
    # round_robin: thread k on the k-th online CPU; worker i is thread i + 1.
    assert allowed == {str(i): str(cpus[(i + 1) % len(cpus)]) for i in range(4)}, allowed
