"""The C launcher that spans the timed interval (real processes)."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import ROOT, compile_c


@pytest.fixture(scope="module")
def psrun(tmp_path_factory):
    return compile_c(ROOT / "src" / "psrun" / "psrun.c", tmp_path_factory.mktemp("bin") / "psrun")


def launch(psrun, run_dir, *cmd, timeout=None, grace=None):
    argv = [str(psrun), "--dir", str(run_dir)]
    if timeout is not None:
        argv += ["--timeout", str(timeout)]
    if grace is not None:
        argv += ["--grace", str(grace)]
    proc = subprocess.run([*argv, "--", *cmd], capture_output=True, text=True, check=False)
    return proc


def status(run_dir):
    return json.loads((run_dir / "status.json").read_text())


def test_ok_run_captures_output_and_time(psrun, tmp_path):
    proc = launch(psrun, tmp_path, "/bin/sh", "-c", "echo out; echo err >&2; sleep 0.2")
    assert proc.returncode == 0
    s = status(tmp_path)
    assert s["status"] == "ok" and s["exit_code"] == 0
    assert 0.2 <= s["wall_s"] < 2.0
    assert s["end_epoch"] - s["start_epoch"] == pytest.approx(s["wall_s"], abs=0.01)
    assert (tmp_path / "stdout.txt").read_text() == "out\n"
    assert (tmp_path / "stderr.txt").read_text() == "err\n"


def test_failure_is_recorded_not_raised(psrun, tmp_path):
    proc = launch(psrun, tmp_path, "/bin/sh", "-c", "echo boom >&2; exit 3")
    assert proc.returncode == 0
    s = status(tmp_path)
    assert s["status"] == "failed" and s["exit_code"] == 3
    assert "boom" in (tmp_path / "stderr.txt").read_text()


def test_crash_by_signal(psrun, tmp_path):
    launch(psrun, tmp_path, "/bin/sh", "-c", "kill -SEGV $$")
    s = status(tmp_path)
    assert s["status"] == "failed" and s["signal"] == signal.SIGSEGV and s["exit_code"] == 128 + signal.SIGSEGV


def test_missing_program(psrun, tmp_path):
    launch(psrun, tmp_path, str(tmp_path / "does-not-exist"))
    s = status(tmp_path)
    assert s["status"] == "failed" and s["exit_code"] == 127
    assert "does-not-exist" in (tmp_path / "stderr.txt").read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_timeout_kills_the_whole_process_group(psrun, tmp_path):
    # The benchmark ignores SIGTERM and leaves a background grandchild.
    script = "trap '' TERM; sleep 30 & echo $! > child.pid; while :; do sleep 0.05; done"
    start = time.monotonic()
    launch(psrun, tmp_path, "/bin/sh", "-c", f"cd {tmp_path} && {script}", timeout=0.5, grace=0.3)
    assert time.monotonic() - start < 5
    s = status(tmp_path)
    assert s["status"] == "timeout"
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.1)
    assert not _alive(child)


def test_leftover_background_processes_are_killed(psrun, tmp_path):
    launch(psrun, tmp_path, "/bin/sh", "-c", f"sleep 30 & echo $! > {tmp_path}/bg.pid; exit 0")
    assert status(tmp_path)["status"] == "ok"
    time.sleep(0.1)
    assert not _alive(int((tmp_path / "bg.pid").read_text()))


def test_abort_leaves_no_status_and_stops_the_benchmark(psrun, tmp_path):
    proc = subprocess.Popen([str(psrun), "--dir", str(tmp_path), "--grace", "0.3", "--", "/bin/sh", "-c", f"echo $$ > {tmp_path}/pid; exec sleep 30"])
    for _ in range(100):
        if (tmp_path / "pid").exists() and (tmp_path / "pid").read_text().strip():
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 128 + signal.SIGTERM
    assert not (tmp_path / "status.json").exists()
    time.sleep(0.1)
    assert not _alive(int((tmp_path / "pid").read_text()))


def test_parent_death_stops_the_benchmark(psrun, tmp_path):
    # sh starts psrun in the background and dies at once: psrun must notice.
    holder = subprocess.Popen(["/bin/sh", "-c", f"{psrun} --dir {tmp_path} --grace 0.2 -- /bin/sh -c 'echo $$ > {tmp_path}/pid; exec sleep 30' & sleep 0.3; kill -9 $$"])
    holder.wait(timeout=5)
    pid = int((tmp_path / "pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)
    assert not (tmp_path / "status.json").exists()


def test_usage_error(psrun, tmp_path):
    assert launch(psrun, tmp_path).returncode == 2
