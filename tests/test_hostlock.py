"""The machine's benchmark lock: one file for every user (perfsnake.hostlock)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import ROOT, snakemake, write_campaign
from users import base_python, ensure_user, is_root

from perfsnake import hostlock

HOLD = (
    "import sys, time; sys.path.insert(0, {root!r}); from perfsnake.hostlock import host_lock\n"
    "with host_lock():\n    print('held', flush=True); sys.stdin.read()\n"
)


@pytest.fixture
def private_lock(monkeypatch, tmp_path):
    monkeypatch.delenv(hostlock.LOCK_ENV, raising=False)
    hostlock.configure(None)
    yield tmp_path
    hostlock.configure(None)


def test_every_user_gets_the_same_default_lock(private_lock, monkeypatch):
    path = hostlock.lock_path()
    assert path.name == "perfsnake-bench.lock"
    shared = next(d for d in hostlock.SHARED_DIRS if d.is_dir() and d.stat().st_mode & 0o1777 == 0o1777)
    assert path.parent == shared  # not per user: no uid, no $XDG_RUNTIME_DIR in it
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(private_lock))
    assert hostlock.lock_path() == path
    hostlock.configure("/shared/locks/{host}.lock")  # one lock per node of a cluster
    assert hostlock.lock_path() == Path(f"/shared/locks/{socket.gethostname()}.lock")
    monkeypatch.setenv(hostlock.LOCK_ENV, "/elsewhere/bench.lock")
    assert hostlock.lock_path() == Path("/elsewhere/bench.lock")


def test_the_lock_file_is_created_for_every_user(private_lock, monkeypatch):
    lock = private_lock / "locks" / "bench.lock"
    monkeypatch.setenv(hostlock.LOCK_ENV, str(lock))
    old = os.umask(0o077)
    try:
        with hostlock.host_lock() as fd:
            assert os.fstat(fd).st_mode & 0o777 == 0o666
            assert hostlock.held_fd() == fd
    finally:
        os.umask(old)
    assert f"(pid {os.getpid()})" in lock.read_text()
    assert hostlock.held_fd() is None


def test_a_second_holder_waits_and_names_the_first(private_lock):
    lock = private_lock / "bench.lock"
    env = {**os.environ, hostlock.LOCK_ENV: str(lock)}
    code = HOLD.format(root=str(ROOT))
    first = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)  # fmt: skip
    second = None
    try:
        assert first.stdout.readline() == "held\n"
        second = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, text=True)  # fmt: skip
        waiting = second.stderr.readline()  # printed before it blocks: nothing is timed
        assert f"waiting for {lock}: another benchmark" in waiting
        assert f"(pid {first.pid})" in waiting
        first.communicate("", timeout=60)
        assert second.stdout.readline() == "held\n"
    finally:
        for proc in (first, second):
            if proc and proc.poll() is None:
                proc.communicate("", timeout=60)


def test_a_holder_that_takes_the_lock_again_at_once_lets_the_waiter_in_first(private_lock, monkeypatch):
    """A batch gives the lock up between two runs and asks for it again at
    once; a process already waiting gets it first (the turnstile), instead of
    losing every race to the batch until its last run."""
    import threading

    lock = private_lock / "bench.lock"
    monkeypatch.setenv(hostlock.LOCK_ENV, str(lock))
    env = {**os.environ, hostlock.LOCK_ENV: str(lock)}
    events: list[str] = []
    holding, queued = threading.Event(), threading.Event()

    def batch() -> None:
        with hostlock.host_lock():  # a run
            holding.set()
            queued.wait(timeout=60)
        with hostlock.host_lock():  # the next one, asked for at once
            events.append("batch")

    runs = threading.Thread(target=batch)
    runs.start()
    waiter = None
    try:
        assert holding.wait(timeout=60)
        waiter = subprocess.Popen([sys.executable, "-c", HOLD.format(root=str(ROOT))], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)  # fmt: skip
        assert "waiting for" in waiter.stderr.readline()  # it queued: printed before it blocks
        queued.set()
        assert waiter.stdout.readline() == "held\n"
        assert events == [], "the batch took the lock back before the waiting process had it"
        waiter.communicate("", timeout=60)
        runs.join(timeout=60)
        assert events == ["batch"]
    finally:
        queued.set()
        if waiter is not None and waiter.poll() is None:
            waiter.communicate("", timeout=60)
        runs.join(timeout=60)


@pytest.mark.skipif(not is_root(), reason="makes a file of another user: needs root")
def test_a_lock_someone_else_made_narrower_still_locks_or_says_why(private_lock, monkeypatch):
    user = ensure_user("alice")
    shared = Path(tempfile.mkdtemp(prefix="perfsnake-lock-", dir="/var/tmp"))  # pytest's tmp_path is root's alone
    shared.chmod(0o755)
    lock = shared / "bench.lock"
    # The module alone (it imports only the standard library): the checkout may not be readable by others.
    shutil.copy(ROOT / "perfsnake" / "hostlock.py", shared / "hostlock.py")
    lock.touch()
    os.chown(lock, user.pw_uid, user.pw_gid)
    monkeypatch.setenv(hostlock.LOCK_ENV, str(lock))
    lock.chmod(0o644)  # readable: flock needs no more than a read-only descriptor
    probe = (
        f"import sys; sys.path.insert(0, {str(shared)!r}); import hostlock\n"
        "print(hostlock.problem())\nwith hostlock.host_lock(): print('held')\n"
    )
    as_bob = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", base_python(), "-c", probe]
    proc = subprocess.run(as_bob, capture_output=True, text=True, env={**os.environ}, check=False)
    assert proc.returncode == 0 and proc.stdout.split() == ["None", "held"], proc.stderr
    lock.chmod(0o600)
    proc = subprocess.run(as_bob, capture_output=True, text=True, env={**os.environ}, check=False)
    first = proc.stdout.splitlines()[0]
    assert f"the benchmark lock {lock} belongs to {user.pw_name}" in first and "chmod 0666" in first
    assert proc.returncode != 0 and "held" not in proc.stdout
    shutil.rmtree(shared)


def test_a_lock_this_user_cannot_create_is_refused_before_anything_runs(tmp_path):
    if is_root():
        # root may create anything: a lock under a regular file cannot be made by anyone
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("")
        lock = blocker / "bench.lock"
    else:
        lock = Path("/proc/perfsnake/bench.lock")
    campaign = write_campaign(
        tmp_path, {"name": "c", "benchmark": {"type": "command", "command": "true"}, "nb_runs": 1}
    )
    proc = snakemake(tmp_path, campaign, "-n", check=False, env={hostlock.LOCK_ENV: str(lock)})
    assert proc.returncode != 0
    error = [line for line in proc.stderr.splitlines() if line.startswith("perfsnake: error:")]
    assert len(error) == 1 and "host_lock" in error[0] and str(lock) in error[0], proc.stderr
    assert not (tmp_path / "results").exists()


def test_the_holder_line_is_written_once_per_holder(private_lock, monkeypatch):
    # A batch takes the lock once per run: the holder's line, already there
    # from its previous run, is not truncated and written again.
    monkeypatch.setenv(hostlock.LOCK_ENV, str(private_lock / "bench.lock"))
    (private_lock / "bench.lock").write_text("someone else (pid 1)\n")
    writes = []
    real = os.ftruncate
    monkeypatch.setattr(os, "ftruncate", lambda fd, n: (writes.append(fd), real(fd, n))[1])
    for _ in range(3):
        with hostlock.host_lock() as fd:
            assert hostlock._holder(fd).endswith(f"(pid {os.getpid()})")
    assert len(writes) == 1
