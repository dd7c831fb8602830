"""Promises of the live display, of the progress lines through a pipe, of
the speedup stack and of a batch's one sync, each through the real
workflow (issue 43: a test per promise that fails when it is broken).

- docs/usage.md, "One live progress line": in a terminal "Failed,
  timed-out and unparsed runs, warnings, errors and the summary scroll
  above it and stay"; the plugin's docstring: "Snakemake's warnings and
  errors (any record at WARNING or above, whatever `quiet` says)". A build
  that fails and a rule's script that raises are on the terminal while the
  live line is drawn: the rule's name and the error's text, on rows of
  their own.
- docs/usage.md: "Not a terminal (CI logs, `| tee`): plain lines, each
  campaign's `run k/N <record> (ETA ...)` at most once a second
  (`--logger-perfsnake-interval`) and its last run's". Counted against the
  invocation's own duration, measured around it: hundreds of run jobs
  cannot stay under that bound with a line each, however loaded the machine
  (a run job would have to take a second).
- docs/instruments.md, the speedup stack: "The workers are found in the
  run's process tree ... among the threads of the application, the name
  whose threads ran the most, shells and the run's tools (perf, taskset,
  psrun, ...) left out, so a program a shell forks is found as well as one
  it `exec`s."
- docs/short-runs.md: "a batch's runs no longer fsync their status.json one
  by one: psrun renames it into place as before (atomic, as the run ends)
  and the batch makes the file system durable with one syncfs before its
  marker". Seen with strace on the whole workflow, its launchers included.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, snakemake, statuses, write_campaign
from test_logger import LIVE, argv, in_terminal, screen

from perfsnake.campaign_csv import read_csv
from perfsnake.instruments import sched
from perfsnake.machine import capabilities
from perfsnake.placement import SHELLS

pytestmark = pytest.mark.e2e

METRICS = {"value": r"value=(\S+)"}


# ---- the live display keeps Snakemake's failures ------------------------------------------
#: the live line as LiveLine.show draws it
DRAWN = re.compile(r"\r(\[perfsnake\] [^\r\n]*?)\x1b\[K\r")
#: the live line before the first run said its campaign's total (test_logger's LIVE after it)
BEFORE_RUNS = re.compile(r"\[perfsnake\] \d+ runs to do\b")


def _is_live(text: str) -> bool:
    return bool(LIVE.match(text) or BEFORE_RUNS.match(text))


def _build_fails(tmp_path: Path) -> tuple[Path, str, list[str]]:
    """A benchmark whose build command fails: the rule `build` (its script, a Python of its own)."""
    camp = write_campaign(tmp_path, {
        "name": "t",
        "benchmark": {"type": "command", "build": "echo the compiler exploded >&2; exit 7",
                      "command": "{build_dir}/x; echo value={x}", "metrics": METRICS},
        "variables": {"x": [1]},
        "nb_runs": 1,
    })  # fmt: skip
    # The build's log, as Snakemake shows it (show-failed-logs).
    return camp, "build", ["the compiler exploded"]


def _script_raises(tmp_path: Path) -> tuple[Path, str, list[str]]:
    """`compare_with:` the result directory of another parameter space: the
    script of the rule compare_with (scripts/compare.py, in the Snakemake
    process) raises CompareError, after the runs."""
    other = tmp_path / "earlier" / "other"
    other.mkdir(parents=True)
    (other / "other.csv").write_text("benchmark,y,run,value,status,wall_s\ncommand,1,1,5,ok,0.1\n")
    camp = write_campaign(tmp_path, {
        "name": "t",
        "benchmark": {"type": "command", "command": "echo value={x}", "metrics": METRICS},
        "variables": {"x": [1]},
        "nb_runs": 1,
        "compare_with": [str(other)],
    })  # fmt: skip
    problem = "side 2 (t) has the variables x, side 1 (other) y: compare results of one parameter space"
    texts = [
        f"compare.py failed: CompareError: {problem} (traceback in results/t/logs/compare_with.log)",
        f"perfsnake.compare.CompareError: {problem}",  # the traceback's last line, from the log Snakemake shows
    ]
    return camp, "compare_with", texts


@pytest.mark.parametrize("make", [_build_fails, _script_raises], ids=["build-error", "script-exception"])
def test_the_live_display_never_hides_snakemakes_own_failures(tmp_path, make):
    camp, rule, texts = make(tmp_path)
    code, raw = in_terminal(argv(camp, tmp_path), tmp_path)
    rows = screen(raw)
    shown = "\n".join(rows)
    assert code != 0, shown  # the job failed, and the invocation with it
    # Snakemake's error, while the display was live: its line drawn before
    # the error and again after it.
    error_at = raw.find(f"Error in rule {rule}:")
    assert error_at >= 0, shown
    live = [m.start() for m in DRAWN.finditer(raw) if _is_live(m.group(1))]
    assert live and live[0] < error_at < live[-1], (live, error_at, raw[-3000:])
    # On the terminal, whole, on rows of their own: the rule's name and the
    # error's text; the live line shares no row with them and is not left
    # in the scroll-back.
    assert f"Error in rule {rule}:" in rows, shown
    for text in texts:
        assert text in rows, (text, shown)
    assert not [r for r in rows if _is_live(r) or ("[perfsnake]" in r and "Error" in r)], shown
    if rule == "build":  # the build script's own line, which it writes to the terminal itself
        assert [r for r in rows if r.startswith("perfsnake: error: build in ") and "failed with exit code 7" in r], (
            shown
        )
    # The end summary comes after it.
    summary = [i for i, r in enumerate(rows) if r.startswith("[perfsnake] summary")]
    assert summary and summary[0] > rows.index(f"Error in rule {rule}:"), shown


# ---- the pipe's progress lines -----------------------------------------------------------
#: the promised rate: a campaign's progress line at most once a second
INTERVAL_S = 1.0
#: beyond that: the first run's line, the last run's, and one left waiting at the end (close)
EXTRA_LINES = 3


def test_a_pipe_gets_at_most_a_progress_line_a_second_whatever_the_speed(tmp_path):
    """200 runs of `echo`, one job each (a batch itself holds its lines to
    five a second): a line per run would be far more than one for each
    second the whole invocation took, measured here around it, start-up
    and analysis included, so a slow or loaded machine only widens the
    bound. Lines are counted, never timed."""
    records, runs = 10, 20
    total = records * runs
    camp = write_campaign(tmp_path, {
        "name": "t",
        "benchmark": {"type": "command", "command": "echo value={x}", "metrics": METRICS},
        "variables": {"x": list(range(1, records + 1))},
        "nb_runs": runs,
        "batch": 1,
    })  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(argv(camp, tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=1800)
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout + proc.stderr
    assert "\r" not in out and "\x1b[" not in out, out[-3000:]  # plain lines
    assert len(statuses(tmp_path, "t")) == total
    progress = [ln for ln in out.splitlines() if re.match(rf"\[perfsnake\] t: run \d+/{total} ", ln)]
    # The lines there are count up, from the first run's to the last run's.
    ks = [int(ln.split()[3].split("/")[0]) for ln in progress]
    assert ks and ks[0] == 1 and ks[-1] == total and ks == sorted(set(ks)), progress
    assert progress[0] == f"[perfsnake] t: run 1/{total} x-1/run-1 (ETA unknown)", progress[:3]
    # At most one a second of the invocation, and the first, the last and one at the end.
    assert len(progress) <= elapsed / INTERVAL_S + EXTRA_LINES, (len(progress), elapsed, progress)


# ---- the speedup stack of a program a shell forks ----------------------------------------
#: workers taking a mutex; argv[1] of them
SCALING = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long c;
static void *w(void *a) { for (int i = 0; i < 400000; i++) { pthread_mutex_lock(&m); for (int k = 0; k < 50; k++) c++; pthread_mutex_unlock(&m); } return a; }
int main(int argc, char **argv) { int n = atoi(argv[1]); pthread_t t[64]; for (int i = 0; i < n; i++) pthread_create(&t[i], 0, w, 0); for (int i = 0; i < n; i++) pthread_join(t[i], 0); printf("c=%ld\n", c); return 0; }
"""
#: after the program, the shell that forked it works longer than all the
#: program's threads together (a wrapper script's own loop): a shell is left
#: out whatever it ran, not because it ran little
SHELL_LOOP = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"


def test_the_speedup_stack_of_a_program_a_shell_forks_is_the_programs(tmp_path):
    if shutil.which("perf") is None or (problem := capabilities.recording_problem(sched.EVENTS)):
        pytest.skip(f"needs perf and sched tracepoints: {problem or 'no perf'}")
    prog = tmp_path / "scaling"
    (tmp_path / "scaling.c").write_text(SCALING)
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(prog), str(tmp_path / "scaling.c")], check=True)
    # Never exec'd: `sh -c` runs the program as its child (then its loop), or
    # the run's shell forks it into a pipeline.
    forked = f"sh -c '{prog} \"$1\"; {SHELL_LOOP}' sh {{threads}}"
    piped = f"{prog} {{threads}} | cat"
    camp = write_campaign(tmp_path, {
        "name": "ss",
        "benchmark": {"type": "command", "metrics": {"c": r"c=(\d+)"},
                      "command": f"if [ {{how}} = fork ]; then {forked}; else {piped}; fi"},
        "variables": {"how": ["fork", "pipe"], "threads": [1, 2]},
        "nb_runs": 1,
        "wrappers": ["sched_timeline"],
        "plots": [{"kind": "speedup_stack", "x": "threads", "column": "how", "name": "stack",
                   "speedup_of": {"metric": "wall_s", "better": "lower"}}],
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_csv(tmp_path / "results/ss/ss.csv")
    assert (frame["status"] == "ok").all() and len(frame) == 4, frame
    assert sorted(frame["c"]) == [20_000_000, 20_000_000, 40_000_000, 40_000_000]  # the program ran, whole
    for how in ("fork", "pipe"):
        for threads in (1, 2):
            timeline = sched.load(tmp_path / f"results/ss/runs/how-{how}/threads-{threads}/run-1")
            assert timeline is not None, (how, threads)
            names = {int(t["tid"]): t["name"] for t in timeline["threads"]}
            shell_ms = sum(float(t["runtime_ms"]) for t in timeline["threads"] if t["name"] in SHELLS)
            prog_ms = sum(float(t["runtime_ms"]) for t in timeline["threads"] if t["name"] == "scaling")
            seen = (how, threads, timeline["app"], shell_ms, prog_ms)
            if how == "fork":  # what the rule is for: the shell ran more than the program
                assert shell_ms > prog_ms, seen
            # The application is the program, its main thread and workers, not the shell.
            assert timeline["app"] == "scaling", seen
            assert timeline["totals"]["sched.app.threads"] == threads + 1, seen
            # The stack's parallel region is the program's: its workers.
            region = timeline["region"]
            assert len(region["participants"]) == threads and region["region_ms"] > 0, (seen, region)
            assert {names[t] for t in region["participants"]} == {"scaling"}, (seen, region)
    by = frame.set_index(["how", "threads"])
    assert [by.loc[(how, n), "sched.par.threads"] for how in ("fork", "pipe") for n in (1, 2)] == [1, 2, 1, 2]
    assert "unexplained (remainder)" in (tmp_path / "results/ss/plots/stack.svg").read_text()


# ---- a batch's one sync ------------------------------------------------------------------
#: every way to make a file or a file system durable
SYNCS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync")
RENAMES = ("rename", "renameat", "renameat2")


def _calls(trace: str) -> list[tuple[str, str]]:
    """(system call, its line) of `strace -f` output, in the order they were
    entered. A call another process's interrupted (`PID syncfs(10</dir>
    <unfinished ...>`, later `PID <... syncfs resumed>) = 0`) is one line
    where it began, joined with its resumption's result."""
    calls: list[tuple[str, str]] = []
    pending: dict[tuple[str, str], int] = {}  # (pid, call) -> its index in calls
    for line in trace.splitlines():
        if m := re.match(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$", line):
            at = pending.pop((m.group(1), m.group(2)), None)
            if at is not None:
                # (strace pads a resumed call's result to its column: one space, as in a whole line)
                calls[at] = (m.group(2), calls[at][1] + re.sub(r"\s+(= .*)$", r" \1", m.group(3)))
        elif m := re.match(r"^(\d+)\s+(\w+)\(", line):
            if line.endswith(" <unfinished ...>"):
                pending[(m.group(1), m.group(2))] = len(calls)
                line = line.removesuffix(" <unfinished ...>")
            calls.append((m.group(2), line))
    return calls


def test_a_batch_makes_its_runs_durable_with_one_sync_before_its_marker(tmp_path):
    if shutil.which("strace") is None:
        pytest.skip("needs strace")
    records, runs, size = 3, 4, 4
    camp = write_campaign(tmp_path, {
        "name": "c",
        "benchmark": {"type": "command", "command": "echo value={x}", "metrics": METRICS},
        "variables": {"x": list(range(1, records + 1))},
        "nb_runs": runs,
        "batch": size,
    })  # fmt: skip
    trace = tmp_path / "strace.txt"
    cmd = ["strace", "-f", "-qq", "-y", "-e", f"trace={','.join(SYNCS + RENAMES)}", "-o", str(trace), "--",
           SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--directory", str(tmp_path), "--configfile", str(ROOT / "config/config.yaml"), "--quiet", "host",
           "--cores", "1", "all", "--config", f"campaign={camp}"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert {k: s["status"] for k, s in statuses(tmp_path, "c").items()} == {
        f"x-{x}/run-{r}": "ok" for x in range(1, records + 1) for r in range(1, runs + 1)
    }
    markers = sorted((tmp_path / "results/c/runs/batches").glob("*.json"))
    assert len(markers) == records * runs // size, markers
    calls = _calls(trace.read_text())
    # No run's file synced on its own: its status.json, or anything else under runs/.
    runs_dir = f"{tmp_path}/results/c/runs/"
    one_by_one = [line for name, line in calls if name in SYNCS[:3] and runs_dir in line]
    assert one_by_one == [], one_by_one
    # A syncfs of the campaign's file system per batch, and no sync of every file system.
    syncs = [(i, line) for i, (name, line) in enumerate(calls) if name in ("syncfs", "sync")]
    campaign_fs = re.compile(rf"^\d+\s+syncfs\(\d+<{re.escape(str(tmp_path))}/results/c>\) = 0$")
    assert len(syncs) == len(markers) and all(campaign_fs.match(line) for _, line in syncs), syncs
    # Each after its batch's runs' status.json were renamed into place, before its marker.
    renames = [(i, line) for i, (name, line) in enumerate(calls) if name in RENAMES]
    used = set()
    for marker in markers:
        (marker_at,) = [i for i, line in renames if f'/batches/{marker.name}"' in line]
        held = json.loads(marker.read_text())["runs"]  # results/c/runs/<record>/run-<i>/status.json
        assert len(held) == size, held
        status_at = [i for i, line in renames for path in held if line.endswith(f'/{path}") = 0')]
        sync_at = max((i for i, _ in syncs if i < marker_at), default=-1)
        assert len(status_at) == size and max(status_at) < sync_at, (marker.name, status_at, sync_at, marker_at)
        used.add(sync_at)
    assert len(used) == len(markers), used  # one sync each, not one for all
