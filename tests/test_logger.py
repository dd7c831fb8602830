"""The perfsnake logger plugin (plugins/snakemake_logger_plugin_perfsnake), as
profiles/default sets it: in a terminal one live progress line instead of
Snakemake's per-job lines, with failed runs, warnings and errors kept in the
scroll-back; through a pipe plain lines at a bounded rate; and Snakemake's
default logger still printing perfsnake's old progress lines.

The workflow runs for real: in a pseudo-terminal (a pty pair whose slave is
the workflow's stdin, stdout and stderr), through a pipe, and with the
profile's logger line removed. What a terminal would show is worked out from
the bytes (carriage return, newline, erase to end of line)."""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from helpers import ROOT, SNAKEMAKE, statuses, write_campaign

pytestmark = pytest.mark.e2e

FAILING = "if [ {x} = 2 ]; then echo broken >&2; exit 3; fi; echo value={x}"
#: x=2 fails, and x=3 prints no `other` (unparsed, said by collect)
FAILING_AND_UNPARSED = FAILING + "; [ {x} = 3 ] || echo other=1"
#: the live line: "[perfsnake] t: 3 of 6 runs, 1 failed | ETA ... | now t x-1/run-2 | ..."
LIVE = re.compile(r"\[perfsnake\] t: \d+ of \d+ runs\b")
#: Snakemake's lines about single jobs, which the plugin leaves out
PER_JOB = ("rule run:", "localrule run:", "Select jobs to execute", "Finished jobid", "steps (")


def campaign(
    tmp_path: Path,
    runs: int,
    command: str = FAILING,
    xs: tuple[int, ...] = (1, 2, 3),
    metrics: tuple[str, ...] = ("value",),
) -> Path:
    return write_campaign(
        tmp_path,
        {
            "name": "t",
            "benchmark": {"type": "command", "command": command, "metrics": {m: rf"{m}=(\S+)" for m in metrics}},
            "variables": {"x": list(xs)},
            "nb_runs": runs,
        },
    )


def argv(camp: Path, workdir: Path, *extra: str, profile: Path = ROOT / "profiles" / "default") -> list[str]:
    """The documented invocation with the workflow profile (its quiet settings
    as they are: no `--quiet host`, which would bring the job blocks back)."""
    return [SNAKEMAKE, "-s", str(ROOT / "workflow" / "Snakefile"), "--workflow-profile", str(profile),
            "--directory", str(workdir), "--configfile", str(ROOT / "config" / "config.yaml"),
            "--cores", "1", "all", *extra, "--config", f"campaign={camp}"]  # fmt: skip


def in_terminal(cmd: list[str], cwd: Path, columns: int = 160, timeout: float = 600) -> tuple[int, str]:
    """Run `cmd` with a pseudo-terminal as its stdin, stdout and stderr;
    its exit status and everything it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm"}
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not data:
                break
            chunks.append(data)
        else:
            proc.kill()
            raise AssertionError("the workflow did not end in time")
    finally:
        os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def screen(raw: str) -> list[str]:
    """The rows a terminal shows after `raw` (scroll-back included): "\\r" goes
    to the first column, "\\n" to a new row, ESC[K erases to the end of the
    row, other escape sequences (colours) draw nothing."""
    rows: list[list[str]] = [[]]
    col = 0
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\x1b":
            m = re.match(r"\x1b\[([0-9;?]*)([A-Za-z])", raw[i:])
            if m:
                if m.group(2) == "K":
                    del rows[-1][col:]
                i += m.end()
                continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            rows.append([])
            col = 0
        else:
            row = rows[-1]
            row.extend(" " * (col - len(row)))
            if col < len(row):
                row[col] = ch
            else:
                row.append(ch)
            col += 1
        i += 1
    return ["".join(r) for r in rows]


def test_a_terminal_gets_one_live_line_and_keeps_the_failures(tmp_path):
    camp = campaign(tmp_path, runs=2, command=FAILING_AND_UNPARSED, metrics=("value", "other"))
    code, raw = in_terminal(argv(camp, tmp_path), tmp_path)
    rows = screen(raw)
    assert code == 0, raw[-4000:]
    assert {k: v["status"] for k, v in statuses(tmp_path, "t").items()} == {
        f"x-{x}/run-{r}": "failed" if x == 2 else "ok" for x in (1, 2, 3) for r in (1, 2)
    }
    # Redrawn in place: a carriage return, the line, "erase to end of line".
    drawn = re.findall(r"\r(\[perfsnake\] [^\r\n]*?)\x1b\[K", raw)
    live = [d for d in drawn if LIVE.match(d)]
    assert live, raw[-4000:]
    assert any(d.startswith("[perfsnake] t: 6 of 6 runs, 2 failed") for d in live), live[-5:]
    assert any(" | now t x-" in d for d in live), live[-5:]
    assert any("ETA" in d for d in live), live[-5:]
    # Snakemake's per-job blocks are not there; the live line never stays in
    # the scroll-back (it is erased before anything else is written, and at the end).
    assert not [r for r in rows if any(job in r for job in PER_JOB)], "\n".join(rows)
    assert not [r for r in rows if LIVE.match(r)], "\n".join(rows)
    # Each failed run (said by the run stage) and each unparsed one (printed
    # by collect): one line of its own, whole, kept.
    for run in (1, 2):
        failed = [r for r in rows if f"t: run x-2/run-{run} FAILED" in r]
        assert failed == [f"[perfsnake] t: run x-2/run-{run} FAILED: exit code 3: broken"], "\n".join(rows)
        unparsed = [r for r in rows if f"t: run x-3/run-{run} UNPARSED" in r]
        assert unparsed == [
            f"[perfsnake] t: run x-3/run-{run} UNPARSED: no match for other (the cell stays empty; "
            "fix the regex and re-run: only collect re-runs)"
        ], "\n".join(rows)
    # What Python printed (the summary) and Snakemake's last words are there, whole.
    assert "[perfsnake] summary" in rows and "  t: 2 ok, 2 failed, 2 unparsed" in rows, "\n".join(rows)
    assert any(r.startswith("Complete log(s): ") for r in rows), "\n".join(rows)


def test_a_pipe_gets_plain_lines_at_a_bounded_rate(tmp_path):
    xs = tuple(range(1, 9))
    camp = campaign(tmp_path, runs=3, xs=xs)
    proc = subprocess.run(argv(camp, tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout + proc.stderr
    assert "\r" not in out and "\x1b[" not in out, out[-3000:]
    lines = out.splitlines()
    assert not [ln for ln in lines if any(job in ln for job in PER_JOB)], out
    progress = [ln for ln in lines if re.match(r"\[perfsnake\] t: run \d+/24 ", ln)]
    # At most one progress line per second (the interval), plus the first and the last run's:
    # bounded by the runs' own span, taken from their status files (under any load).
    runs = statuses(tmp_path, "t").values()
    span = max(s["end_epoch"] for s in runs) - min(s["start_epoch"] for s in runs)
    assert 2 <= len(progress) <= 2 * (span + 1) + 2, (span, progress)
    assert progress[0].startswith("[perfsnake] t: run 1/24 x-1/run-1 (ETA unknown)"), progress
    assert progress[-1].startswith("[perfsnake] t: run 24/24 "), progress
    # Every failed run, once each, as it ended.
    failed = [ln for ln in lines if " FAILED: " in ln]
    assert failed == [f"[perfsnake] t: run x-2/run-{r} FAILED: exit code 3: broken" for r in (1, 2, 3)], failed
    assert "Complete log(s): " in out


@pytest.mark.parametrize("how", ["no logger in the profile", "--logger-perfsnake-display snakemake"])
def test_snakemakes_default_logger_prints_the_old_progress_lines(tmp_path, how):
    profile = ROOT / "profiles" / "default"
    extra: list[str] = []
    if how.startswith("no logger"):
        profile = tmp_path / "profile"
        profile.mkdir()
        text = (ROOT / "profiles" / "default" / "config.yaml").read_text()
        assert re.search(r"(?m)^logger:", text)
        (profile / "config.yaml").write_text(re.sub(r"(?m)^logger:.*\n", "", text))
    else:
        extra = how.split()
    work = tmp_path / "work"
    work.mkdir()
    camp = campaign(work, runs=2)
    proc = subprocess.run(
        argv(camp, work, *extra, profile=profile), cwd=work, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stderr.splitlines()
    # One line per run as it starts, k counting up, and every failure.
    progress = [ln for ln in lines if re.match(r"\[perfsnake\] t: run \d+/6 x-\d/run-\d \(ETA ", ln)]
    assert [int(ln.split("run ")[1].split("/")[0]) for ln in progress] == [1, 2, 3, 4, 5, 6], proc.stderr
    assert progress[0].endswith("(ETA unknown)")
    assert [ln for ln in lines if " FAILED: " in ln] == [
        f"[perfsnake] t: run x-2/run-{r} FAILED: exit code 3: broken" for r in (1, 2)
    ]
    # Snakemake's own progress, which the plugin would leave out.
    assert "Finished jobid" in proc.stderr and "steps (" in proc.stderr
    assert not [ln for ln in lines if LIVE.match(ln)]


# ---- the ETA, without a workflow ------------------------------------------------------
def test_the_eta_counts_builds_and_every_campaign():
    from snakemake_logger_plugin_perfsnake.progress import Progress

    p = Progress()
    p.planned({"build": 2, "fetch": 1, "run": 30, "total": 40})
    p.job_started(1, "fetch", {"source": "src"}, 0.0)
    p.job_ended(1, 10.0, ok=True)  # a preparation job takes 10 s
    p.job_started(2, "build", {"bench": "b", "bkey": "k"}, 10.0)
    p.job_ended(2, 40.0, ok=True)  # and a build 30 s: 20 s each on average
    p.plan({"a": {"total": 10, "done": 0}, "b": {"total": 20, "done": 5}, "c": {"total": 4, "done": 4}})
    for i in range(4):  # campaign a: runs of 2 s
        p.job_started(10 + i, "run", {"campaign": "a", "record": "x-1", "run": i + 1}, 100.0 + 2 * i)
        p.job_ended(10 + i, 102.0 + 2 * i, ok=True)
    p.run_failed("a")
    # 1 build left at 20 s, a's 6 runs at 2 s, b's 15 at the mean of all runs (2 s).
    est = p.estimate(110.0)
    assert est is not None and est.seconds == pytest.approx(20 + 6 * 2 + 15 * 2) and not est.partial
    assert p.eta_text(110.0) == "ETA 0:01:02"
    # A run of b in progress for 1.5 s: that much less.
    p.job_started(20, "run", {"campaign": "b", "record": "y-1", "run": 1}, 110.0)
    assert p.estimate(111.5).seconds == pytest.approx(62 - 1.5)  # type: ignore[union-attr]
    line = p.line(111.5, 200)
    assert line == (
        "[perfsnake] a: 4 of 10 runs, 1 failed | b: 5 of 20 runs | c: 4 of 4 runs | builds 2 of 3 | ETA 0:01:00"
        " | now b y-1/run-1"
    )
    # Narrow: the campaigns but the current one summed up, then cut.
    narrow = p.line(111.5, 100)
    assert narrow.startswith("[perfsnake] b: 5 of 20 runs | 2 other campaigns: 8 of 14 runs, 1 failed | builds 2 of 3")
    assert len(narrow) == 100 and narrow.endswith("...")
    assert len(p.line(111.5, 40)) == 40


def test_nothing_measured_yet_and_adaptive_campaigns():
    from snakemake_logger_plugin_perfsnake.progress import Progress

    p = Progress()
    p.planned({"run": 6, "total": 10})
    assert p.eta_text(0.0) == "ETA unknown"
    assert p.line(0.0, 200) == "[perfsnake] 6 runs to do | ETA unknown"
    p.plan({"d": {"total": 40, "done": 0, "adaptive": True}})
    p.job_started(1, "run", {"campaign": "d", "record": "v-a", "run": 1}, 0.0)
    p.job_ended(1, 3.0, ok=True)
    assert p.eta_text(3.0) == "ETA at most 0:01:57"
    assert p.campaign_text("d") == "d: 1 runs (at most 40)"


def test_the_run_stage_and_the_plugin_agree_on_the_field_name():
    from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry
    from snakemake_logger_plugin_perfsnake import FIELDS

    from perfsnake.stages import run

    assert FIELDS == run.FIELDS
    assert LoggerPluginRegistry().get_plugin("perfsnake").name == "perfsnake"


def test_outside_snakemake_the_lines_are_printed(capsys):
    """No handler on Snakemake's logger (a script, a unit test): stderr, as before."""
    from perfsnake.stages import run

    assert not logging.getLogger(run.SNAKEMAKE_LOGGER).handlers
    run.say("[perfsnake] c: run 1/2 x-1/run-1 (ETA unknown)", {"kind": "run"})
    assert capsys.readouterr().err == "[perfsnake] c: run 1/2 x-1/run-1 (ETA unknown)\n"
