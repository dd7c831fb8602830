"""The C launcher that spans the timed interval (real processes)."""

import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from helpers import alive, compile_c

from perfsnake.layout import c_source


@pytest.fixture(scope="module")
def psrun(tmp_path_factory):
    return compile_c(c_source("psrun", "psrun.c"), tmp_path_factory.mktemp("bin") / "psrun")


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
    before, before_epoch = time.monotonic(), time.time()
    proc = launch(psrun, tmp_path, "/bin/sh", "-c", "echo out; echo err >&2; sleep 0.2")
    elapsed, after_epoch = time.monotonic() - before, time.time()
    assert proc.returncode == 0
    s = status(tmp_path)
    assert s["status"] == "ok" and s["exit_code"] == 0
    # The timed interval holds the benchmark (its 0.2 s sleep at least) and
    # lies within the launch: a bound by construction, not by the machine's speed.
    assert 0.2 <= s["wall_s"] <= elapsed
    assert before_epoch <= s["start_epoch"] <= s["end_epoch"] <= after_epoch
    assert s["end_epoch"] - s["start_epoch"] == pytest.approx(s["wall_s"], abs=0.01)
    assert (tmp_path / "stdout.txt").read_text() == "out\n"
    assert (tmp_path / "stderr.txt").read_text() == "err\n"


def test_status_holds_the_machine_just_before_and_after_the_run(psrun, tmp_path):
    """Load, busy time, memory and frequency, read by the launcher around its
    clock (not the wait for the lock, not the hooks): the machine's busy time
    across the run holds at least the run's own CPU time."""
    launch(psrun, tmp_path, "/bin/sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
    s = status(tmp_path)
    before, after = s["machine"]["before"], s["machine"]["after"]
    assert set(before) == set(after) == {"load1", "busy_s", "steal_s", "mem_available_mb", "cpu_mhz"}
    assert before["load1"] >= 0 and after["mem_available_mb"] > 0
    # The hypervisor's steal is a count that only grows (0 on bare metal).
    assert 0 <= before["steal_s"] <= after["steal_s"]
    # What the run used and waited for, read before its cgroup went (machine.usage).
    usage = s["usage"]
    assert set(usage) == {"peak_memory_bytes", "cpu_stall_us", "memory_stall_us", "io_stall_us", "stall_source"}
    psi = Path("/proc/pressure/cpu").exists()
    assert usage["stall_source"] == ("cgroup" if s["containment"].startswith("cgroup2:") else "machine" if psi else "")
    own = s["utime_s"] + s["stime_s"]
    # /proc/stat counts whole clock ticks (1/100 s) per CPU: a tick or two of rounding.
    assert after["busy_s"] - before["busy_s"] >= own - 0.05
    has_cpufreq = any(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
    assert (after["cpu_mhz"] is not None) == has_cpufreq


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


# A time-out must come after the benchmark started what the test looks at
# (a shell's start-up and one fork): what a test with a time-out asserts is
# what the time-out does, not how soon.
TIMEOUT_S = 2.0


def test_timeout_kills_the_whole_process_group(psrun, tmp_path):
    # The benchmark ignores SIGTERM and leaves a background grandchild; neither
    # ever ends by itself, so a status at all means the launcher ended them.
    script = "trap '' TERM; sleep 1000 & echo $! > child.pid; while :; do sleep 0.05; done"
    launch(psrun, tmp_path, "/bin/sh", "-c", f"cd {tmp_path} && {script}", timeout=TIMEOUT_S, grace=0.3)
    s = status(tmp_path)
    assert s["status"] == "timeout"
    assert_gone(read_pid(tmp_path / "child.pid"))


def test_leftover_background_processes_are_killed(psrun, tmp_path):
    launch(psrun, tmp_path, "/bin/sh", "-c", f"sleep 1000 & echo $! > {tmp_path}/bg.pid; exit 0")
    assert status(tmp_path)["status"] == "ok"
    assert_gone(read_pid(tmp_path / "bg.pid"))


def test_abort_leaves_no_status_and_stops_the_benchmark(psrun, tmp_path):
    proc = subprocess.Popen(
        [
            str(psrun),
            "--dir",
            str(tmp_path),
            "--grace",
            "0.3",
            "--",
            "/bin/sh",
            "-c",
            f"echo $$ > {tmp_path}/pid; exec sleep 30",
        ]
    )
    bench = read_pid(tmp_path / "pid")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    # The launcher has returned: whatever it would write is written.
    assert not (tmp_path / "status.json").exists()
    # It reaps its benchmark before it returns.
    assert not alive(bench)


def test_a_second_abort_does_not_cut_the_grace_short(psrun, tmp_path):
    # A dead workflow sends several aborts (its group's signal, then the
    # parent's death signal): the benchmark's own clean-up must still finish.
    script = (f"cd {tmp_path}; trap 'touch trapped; while [ ! -e go ]; do sleep 0.01; done; touch cleaned; exit 0' TERM; "
              "echo $$ > pid; sleep 60 & wait")  # fmt: skip
    proc = subprocess.Popen([str(psrun), "--dir", str(tmp_path), "--grace", "60", "--", "/bin/sh", "-c", script])
    read_pid(tmp_path / "pid")
    proc.send_signal(signal.SIGTERM)
    wait_for(lambda: (tmp_path / "trapped").exists(), what="the benchmark's trap")
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGTERM)
    (tmp_path / "go").touch()
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    assert (tmp_path / "cleaned").exists()


def test_parent_death_stops_the_benchmark(psrun, tmp_path):
    # sh starts psrun in the background and, once the benchmark runs, dies: psrun must notice.
    holder = subprocess.Popen(
        [
            "/bin/sh",
            "-c",
            f"{psrun} --dir {tmp_path} --grace 0.2 -- /bin/sh -c 'echo $$ > {tmp_path}/pid; exec sleep 1000' & "
            f"echo $! > {tmp_path}/psrun.pid; while [ ! -s {tmp_path}/pid ]; do sleep 0.01; done; kill -9 $$",
        ]
    )
    holder.wait(timeout=60)
    launcher, bench = read_pid(tmp_path / "psrun.pid"), read_pid(tmp_path / "pid")
    assert_gone(bench)
    # Once the launcher is gone too, nothing can write a status any more.
    assert_gone(launcher)
    assert not (tmp_path / "status.json").exists()


def test_usage_error(psrun, tmp_path):
    assert launch(psrun, tmp_path).returncode == 2
    # A negative grace would make a stopping launcher deaf to every signal.
    refused = launch(psrun, tmp_path, "/bin/true", grace=-1)
    assert refused.returncode == 2 and "usage" in refused.stderr


# ---- containment (issue 20) -------------------------------------------------

CONTAINMENTS = ["cgroup", "subreaper"]


def cgroup_available() -> bool:
    return os.geteuid() == 0 and "cgroup2" in Path("/proc/self/mountinfo").read_text()


@pytest.fixture(params=CONTAINMENTS)
def containment(request, monkeypatch):
    """Both kinds of containment: a run cgroup where the machine allows it, the subreaper otherwise."""
    if request.param == "cgroup":
        if not cgroup_available():
            pytest.skip("no writable cgroup v2 here")
        monkeypatch.delenv("PERFSNAKE_CGROUP", raising=False)
    else:
        monkeypatch.setenv("PERFSNAKE_CGROUP", "none")
    return request.param


def wait_for(predicate, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def read_pid(path: Path) -> int:
    wait_for(lambda: path.exists() and path.read_text().strip(), what=str(path))
    return int(path.read_text())


def assert_gone(pid: int, within: float = 60.0) -> None:
    # A deadline that says the process ends, not how fast: loaded machines are slow.
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} outlived its run"
        time.sleep(0.02)


def until_written(path: Path) -> str:
    """Shell: wait until the file at `path` holds something (a pid another process writes)."""
    return f"while [ ! -s {path} ]; do sleep 0.01; done"


@pytest.mark.parametrize("timeout", [None, TIMEOUT_S])
def test_setsid_grandchild_ends_with_the_run(psrun, tmp_path, containment, timeout):
    # A grandchild in a session of its own escapes any process-group kill.
    # The benchmark ends (or waits for its time-out) once the grandchild runs.
    script = f"cd {tmp_path} && setsid sh -c 'echo $$ > gc.pid; exec sleep 1000' & {until_written(tmp_path / 'gc.pid')}"
    if timeout:
        script += "; exec sleep 1000"
    launch(psrun, tmp_path, "/bin/sh", "-c", script, timeout=timeout, grace=0.2)
    s = status(tmp_path)
    assert s["status"] == ("timeout" if timeout else "ok")
    assert s["containment"] == "subreaper" if containment == "subreaper" else s["containment"].startswith("cgroup2:/")
    assert not alive(read_pid(tmp_path / "gc.pid"))
    if not timeout:  # (on a time-out, a cgroup's members already got SIGTERM)
        assert s["leftovers_killed"] >= 1
    if containment == "cgroup":
        assert not Path(s["containment"].split(":", 1)[1]).exists()


def test_double_fork_daemon_ends_with_the_run(psrun, tmp_path, containment):
    # What `server --daemonize` does: fork, setsid, fork again, the parents exit.
    daemon = tmp_path / "daemon.sh"
    daemon.write_text(f"echo $$ > {tmp_path}/d.pid\nexec sleep 1000\n")
    launch(
        psrun, tmp_path, "/bin/sh", "-c", f"setsid sh -c 'sh {daemon} &' & wait; {until_written(tmp_path / 'd.pid')}"
    )
    assert status(tmp_path)["status"] == "ok"
    pid = read_pid(tmp_path / "d.pid")
    assert_gone(pid)


def _group_kill_case(psrun, tmp_path, how):
    """A shell in a process group of its own starts psrun (like Snakemake does), then is killed `how`."""
    holder = subprocess.Popen(
        [
            "/bin/sh",
            "-c",
            f"{psrun} --dir {tmp_path} -- /bin/sh -c 'echo $$ > {tmp_path}/pid; setsid sleep 1000 & echo $! > {tmp_path}/gc.pid; exec sleep 1000'; sleep 1000",
        ],
        start_new_session=True,
    )
    bench = read_pid(tmp_path / "pid")
    grandchild = read_pid(tmp_path / "gc.pid")
    launcher = int(state_of(tmp_path)["pid"])
    if how == "group":
        os.killpg(holder.pid, signal.SIGKILL)
    elif how == "interrupt":  # Ctrl-C: SIGINT to the foreground process group
        os.killpg(holder.pid, signal.SIGINT)
    else:
        os.kill(holder.pid, signal.SIGKILL)
    return holder, bench, grandchild, launcher


@pytest.mark.parametrize("how", ["group", "parent", "interrupt"])
def test_killed_caller_ends_the_run(psrun, tmp_path, containment, how):
    # psrun leaves the caller's process group (so that a group kill cannot
    # take it before it stopped the benchmark), yet a signal to that group
    # still ends the run.
    holder, bench, grandchild, launcher = _group_kill_case(psrun, tmp_path, how)
    for pid in (bench, grandchild):
        assert_gone(pid)
    # Once the launcher is gone too, nothing can write a status any more.
    assert_gone(launcher)
    assert not (tmp_path / "status.json").exists()
    if holder.poll() is None:
        os.killpg(holder.pid, signal.SIGKILL)
    holder.wait(timeout=5)


def state_of(run_dir: Path) -> dict[str, str]:
    """The launcher's state file: its pid, containment and guardian."""
    wait_for(lambda: "guardian" in (run_dir / ".psrun.state").read_text(), what="the state file")
    return dict(line.split(" ", 1) for line in (run_dir / ".psrun.state").read_text().splitlines())


def guardian_of(run_dir: Path) -> int:
    return int(state_of(run_dir)["guardian"])


def test_guardian_ends_the_run_of_a_launcher_killed_outright(psrun, tmp_path, containment):
    # kill -9 of every process of the workflow's session takes the launcher
    # and the benchmark, not what the benchmark detached into a session of
    # its own: the launcher's guardian (a session of its own too) ends it.
    script = (
        f"cd {tmp_path}; setsid sh -c 'echo $$ > {tmp_path}/gc.pid; exec sleep 1000' & echo $$ > pid; exec sleep 1000"
    )
    proc = subprocess.Popen([str(psrun), "--dir", str(tmp_path), "--", "/bin/sh", "-c", script])
    bench, grandchild = read_pid(tmp_path / "pid"), read_pid(tmp_path / "gc.pid")
    guardian = guardian_of(tmp_path)
    assert os.getsid(guardian) == guardian != os.getsid(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for pid in (bench, grandchild, guardian):
        assert_gone(pid)


def test_guardian_leaves_with_the_run(psrun, tmp_path):
    launch(psrun, tmp_path, "/bin/sh", "-c", f"cp {tmp_path}/.psrun.state {tmp_path}/state.copy")
    assert status(tmp_path)["status"] == "ok" and not (tmp_path / ".psrun.state").exists()
    state = dict(line.split(" ", 1) for line in (tmp_path / "state.copy").read_text().splitlines())
    # psrun waited for it: gone when the launcher returns.
    assert not alive(int(state["guardian"]))


def test_next_attempt_sweeps_what_a_killed_launcher_left(psrun, tmp_path, containment):
    # Working in its run directory, as command.sh makes every benchmark do.
    proc = subprocess.Popen(
        [str(psrun), "--dir", str(tmp_path), "--", "/bin/sh", "-c", f"cd {tmp_path}; echo $$ > pid; exec sleep 1000"]
    )
    bench = read_pid(tmp_path / "pid")
    (tmp_path / "pid").unlink()
    # The launcher and its guardian die outright: nobody stops the benchmark now...
    os.kill(guardian_of(tmp_path), signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert alive(bench)
    # ...until the next attempt of the same run clears it before it starts.
    launch(psrun, tmp_path, "/bin/sh", "-c", f"echo $$ > {tmp_path}/pid")
    assert status(tmp_path)["status"] == "ok"
    assert_gone(bench)
    assert not (tmp_path / ".psrun.state").exists()


def test_lock_descriptor_is_held_until_the_run_is_gone(psrun, tmp_path):
    import fcntl

    lock = tmp_path / "bench.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    proc = subprocess.Popen([str(psrun), "--dir", str(tmp_path), "--lock-fd", str(fd), "--", "/bin/sh", "-c",
                             f"ls -l /proc/$$/fd > {tmp_path}/fds; echo $$ > {tmp_path}/pid; exec sleep 60"], pass_fds=[fd])  # fmt: skip
    read_pid(tmp_path / "pid")
    os.close(fd)  # the workflow's own copy is gone (it died): psrun's keeps the lock
    other = os.open(lock, os.O_RDWR)
    with pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert "bench.lock" not in (tmp_path / "fds").read_text()  # the benchmark does not hold it
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(other)


def test_planted_links_are_not_followed_and_are_reported(psrun, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "stdout.txt").symlink_to(outside)  # left by an earlier attempt
    launch(
        psrun,
        run,
        "/bin/sh",
        "-c",
        f"cd {run} && echo out; ln -s {outside} .status.json.tmp; ln -s {outside} result.json.tmp",
    )
    assert outside.read_text() == "precious\n"
    assert not (run / "stdout.txt").is_symlink() and (run / "stdout.txt").read_text() == "out\n"
    s = status(run)
    assert not (run / "status.json").is_symlink()
    assert sorted(s["links"]) == [".status.json.tmp", "result.json.tmp"]


NOBODY = 65534


def remove_cgroup_tree(root: Path, within: float = 30.0) -> None:
    """Remove a cgroup and its children, deepest first, once their last
    members are gone (an exiting process keeps its cgroup busy a moment)."""
    if not root.exists():
        return
    (root / "cgroup.kill").write_text("1")
    deadline = time.monotonic() + within
    for cg in sorted(root.glob("**/"), key=lambda p: len(p.parts), reverse=True):
        while True:
            try:
                cg.rmdir()
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


@pytest.mark.skipif(not cgroup_available() or not shutil.which("setpriv"), reason="needs root, cgroup v2, setpriv")
@pytest.mark.parametrize("delegated", [True, False])
def test_another_user_is_contained_in_a_delegated_cgroup_or_as_a_subreaper(psrun, delegated):
    # What `systemd-run --user --scope -p Delegate=yes` gives a user: a cgroup
    # subtree they own, with the launcher started inside it. Without one, the
    # same user gets the subreaper.
    mount = next(line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                 if " - cgroup2 " in line)  # fmt: skip
    base = Path(tempfile.mkdtemp(prefix="psrun-user-"))
    delegation = Path(mount) / f"perfsnake-test-user-{os.getpid()}-{base.name}"
    try:
        base.chmod(0o755)
        run_dir = base / "run"
        run_dir.mkdir()
        os.chown(run_dir, NOBODY, NOBODY)
        binary = base / "psrun"
        shutil.copy(psrun, binary)
        enter = ""
        if delegated:
            delegation.mkdir()
            for name in ("", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
                os.chown(delegation / name, NOBODY, NOBODY)
            enter = f"echo $$ > {delegation}/cgroup.procs && "
        script = (
            f"cd {run_dir} && setsid sh -c 'echo $$ > gc.pid; exec sleep 1000' & {until_written(run_dir / 'gc.pid')}"
        )
        env = {k: v for k, v in os.environ.items() if k != "PERFSNAKE_CGROUP"}
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
        launcher = [str(binary), "--dir", str(run_dir), "--", "/bin/sh", "-c", script]
        proc = subprocess.run(["/bin/sh", "-c", enter + 'exec "$@"', "sh", *drop, *launcher],
                              capture_output=True, text=True, env=env, check=False)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        s = status(run_dir)
        assert s["status"] == "ok" and s["leftovers_killed"] >= 1
        if delegated:
            assert s["containment"].startswith(f"cgroup2:{delegation}/"), s["containment"]
        else:
            assert s["containment"] == "subreaper"
        assert not alive(read_pid(run_dir / "gc.pid"))
    finally:
        shutil.rmtree(base, ignore_errors=True)
        remove_cgroup_tree(delegation)


def test_guardian_keeps_only_its_pipe_and_the_lock(psrun, tmp_path):
    # It closes every other descriptor (close_range around the two it keeps),
    # so a pipe of the caller's, say, is not held open by it.
    lock = tmp_path / "bench.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    extra_r, extra_w = os.pipe()
    proc = subprocess.Popen([str(psrun), "--dir", str(tmp_path), "--lock-fd", str(fd), "--", "/bin/sh", "-c",
                             f"echo $$ > {tmp_path}/pid; exec sleep 60"], pass_fds=[fd, extra_w])  # fmt: skip
    try:
        read_pid(tmp_path / "pid")
        guardian = guardian_of(tmp_path)
        held = {int(n): os.readlink(f"/proc/{guardian}/fd/{n}") for n in os.listdir(f"/proc/{guardian}/fd")}
        assert held.get(fd) == str(lock)
        assert len(held) == 2 and all(t.startswith("pipe:") for n, t in held.items() if n != fd), held
        assert f"pipe:[{os.fstat(extra_w).st_ino}]" not in held.values()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        for d in (fd, extra_r, extra_w):
            os.close(d)


def test_status_times_are_utc_iso_of_the_epochs(psrun, tmp_path):
    from datetime import UTC, datetime

    launch(psrun, tmp_path, "/bin/true")
    st = status(tmp_path)
    for key in ("start", "end"):
        stamp = datetime.strptime(st[key], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert abs(stamp.timestamp() - st[f"{key}_epoch"]) < 2e-6, (st[key], st[f"{key}_epoch"])


@pytest.mark.parametrize("no_fsync", [False, True])
def test_status_fsync_can_be_left_to_the_caller(psrun, tmp_path, no_fsync):
    # --no-fsync (a batch, which syncs once before its marker): status.json
    # is renamed into place without an fsync.
    argv = [str(psrun), "--dir", str(tmp_path), *(["--no-fsync"] if no_fsync else []), "--", "/bin/true"]
    strace = shutil.which("strace")
    if strace:
        argv = [strace, "-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(tmp_path / "trace"), *argv]
    subprocess.run(argv, check=True, capture_output=True)
    assert status(tmp_path)["status"] == "ok"
    if strace:
        synced = "fsync(" in (tmp_path / "trace").read_text()
        assert synced == (not no_fsync)


# ---- --serve: one launcher for a batch's runs (issue 35) ----------------------


def serve(psrun):
    """A serving psrun and our end of its request socket."""
    import socket

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen([str(psrun), "--serve"], stdin=theirs.fileno(), stderr=subprocess.PIPE, text=True)
    theirs.close()
    return proc, ours


def request(sock, run_dir, *cmd, timeout=None, fd=None):
    import socket

    fields = ["-" if timeout is None else str(timeout), str(run_dir), *cmd]
    socket.send_fds(sock, [b"\0".join(os.fsencode(f) for f in fields) + b"\0"], [] if fd is None else [fd])


def state_copy(run_dir: Path) -> str:
    """Shell: keep the launcher's state file as the benchmark sees it."""
    return f"cp {run_dir}/.psrun.state {run_dir}/state.copy"


def test_serve_runs_each_request_as_the_single_launcher_does(psrun, tmp_path):
    proc, sock = serve(psrun)
    runs = {name: tmp_path / name for name in ("ok", "failed", "timeout", "after")}
    for d in runs.values():
        d.mkdir()
    # Each answer is how the run ended, as its status.json says.
    request(sock, runs["ok"], "/bin/sh", "-c", f"{state_copy(runs['ok'])}; echo out; echo err >&2")
    assert sock.recv(16) == b"ok"
    request(sock, runs["failed"], "/bin/sh", "-c", f"{state_copy(runs['failed'])}; exit 3")
    assert sock.recv(16) == b"failed"
    request(sock, runs["timeout"], "/bin/sh", "-c", "exec sleep 60", timeout=0.3)
    assert sock.recv(16) == b"timeout"
    # After a time-out's stop, the next run is watched as the first was.
    request(sock, runs["after"], "/bin/sh", "-c", state_copy(runs["after"]))
    assert sock.recv(16) == b"ok"
    sock.close()
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    got = {name: status(d) for name, d in runs.items()}
    assert [got[n]["status"] for n in runs] == ["ok", "failed", "timeout", "ok"]
    assert got["failed"]["exit_code"] == 3
    assert (runs["ok"] / "stdout.txt").read_text() == "out\n" and (runs["ok"] / "stderr.txt").read_text() == "err\n"
    # One psrun and one guardian served them all; nothing of either is left.
    states = [dict(line.split(" ", 1) for line in (runs[n] / "state.copy").read_text().splitlines())
              for n in ("ok", "failed", "after")]  # fmt: skip
    assert {s["pid"] for s in states} == {str(proc.pid)} and len({s["guardian"] for s in states}) == 1
    assert not alive(int(states[0]["guardian"]))
    assert not any((d / ".psrun.state").exists() for d in runs.values())


def test_serve_moves_its_state_file_from_run_to_run_and_never_writes_through_a_planted_one(psrun, tmp_path):
    """Serving, the state file is not deleted and created again for each run
    (a freed inode slows file creation on an ext4 without a journal): the
    same file moves into the next run's directory. What a benchmark put in
    its place is not reused, nor written through."""
    proc, sock = serve(psrun)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    runs = [tmp_path / f"r{k}" for k in range(3)]
    plant = f"rm .psrun.state; ln -s {victim} .psrun.state"
    for k, run_dir in enumerate(runs):
        run_dir.mkdir()
        then = f"; {plant}" if k == 1 else ""
        request(
            sock,
            run_dir,
            "/bin/sh",
            "-c",
            f"cd {run_dir}; stat -c %i .psrun.state > inode; {state_copy(run_dir)}{then}",
        )
        assert sock.recv(16) == b"ok"
        assert status(run_dir)["status"] == "ok"
    inodes = [(d / "inode").read_text().strip() for d in runs]
    assert inodes[0] == inodes[1]  # moved, not made again
    assert victim.read_text() == "untouched\n" and victim.stat().st_nlink == 1
    assert not (runs[2] / "state.copy").is_symlink()
    assert (runs[2] / "state.copy").read_text().startswith(f"pid {proc.pid}\n")
    sock.close()
    assert proc.wait(timeout=60) == 0
    # Nothing of it left: not the moved file, not the planted link.
    assert not any(os.path.lexists(d / ".psrun.state") for d in runs)


def test_serve_contains_each_run(psrun, tmp_path, containment):
    proc, sock = serve(psrun)
    for k in range(2):
        run_dir = tmp_path / f"r{k}"
        run_dir.mkdir()
        request(sock, run_dir, "/bin/sh", "-c", f"setsid sh -c 'echo $$ > {run_dir}/gc.pid; exec sleep 1000' & "
                                                f"{until_written(run_dir / 'gc.pid')}")  # fmt: skip
        assert sock.recv(16) == b"ok"
        assert status(run_dir)["leftovers_killed"] >= 1
        assert_gone(read_pid(run_dir / "gc.pid"))
        assert status(run_dir)["containment"].startswith("cgroup2:" if containment == "cgroup" else "subreaper")
    sock.close()
    assert proc.wait(timeout=60) == 0


def test_serve_holds_each_run_lock_until_it_is_recorded(psrun, tmp_path):
    import fcntl

    lock = tmp_path / "bench.lock"
    proc, sock = serve(psrun)
    other = os.open(lock, os.O_RDWR | os.O_CREAT)
    for k in range(2):
        run_dir = tmp_path / f"r{k}"
        run_dir.mkdir()
        fd = os.open(lock, os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        request(sock, run_dir, "/bin/sh", "-c", f"cd {run_dir}; ls -l /proc/$$/fd > fds; echo $$ > pid; "
                                                f"{until_written(run_dir / 'go')}", fd=fd)  # fmt: skip
        os.close(fd)  # the caller's copy: psrun's and its guardian's keep the lock
        read_pid(run_dir / "pid")
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (run_dir / "go").write_text("1")
        assert sock.recv(16) == b"ok"
        # Recorded: free at once (the guardian gave it up before the answer).
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(other, fcntl.LOCK_UN)
        assert "bench.lock" not in (run_dir / "fds").read_text()  # the benchmark does not hold it
    sock.close()
    assert proc.wait(timeout=60) == 0
    os.close(other)


def test_serve_guardian_ends_the_run_of_a_launcher_killed_outright(psrun, tmp_path, containment):
    import fcntl

    lock = tmp_path / "bench.lock"
    proc, sock = serve(psrun)
    first = tmp_path / "first"
    first.mkdir()
    request(sock, first, "/bin/true")
    assert sock.recv(16) == b"ok"
    run_dir = tmp_path / "second"
    run_dir.mkdir()
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    script = (
        f"cd {run_dir}; setsid sh -c 'echo $$ > {run_dir}/gc.pid; exec sleep 1000' & echo $$ > pid; exec sleep 1000"
    )
    request(sock, run_dir, "/bin/sh", "-c", script, fd=fd)
    os.close(fd)
    bench, grandchild = read_pid(run_dir / "pid"), read_pid(run_dir / "gc.pid")
    guardian = guardian_of(run_dir)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for pid in (bench, grandchild, guardian):
        assert_gone(pid)
    assert sock.recv(16) == b""  # no answer: the run is not recorded
    assert not (run_dir / "status.json").exists()
    other = os.open(lock, os.O_RDWR)
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the guardian released it as it left
    os.close(other)


def test_serve_aborted_run_ends_the_launcher_and_a_new_one_serves_on(psrun, tmp_path):
    from perfsnake.platforms.local import LaunchServer

    server = LaunchServer([str(psrun), "--serve"])
    try:
        a, b = tmp_path / "a", tmp_path / "b"
        a.mkdir()
        b.mkdir()
        # SIGTERM to the launcher (as the daemon watcher sends): the run is aborted, unrecorded.
        stop = f"kill -TERM $(sed -n 's/^pid //p' {a}/.psrun.state); exec sleep 60"
        code = server.run(a, None, ["/bin/sh", "-c", stop])
        assert code == 128 + signal.SIGTERM and not (a / "status.json").exists()
        assert server.run(b, None, ["/bin/sh", "-c", "echo again"]) == 0
        assert status(b)["status"] == "ok" and (b / "stdout.txt").read_text() == "again\n"
    finally:
        server.close()


def test_serve_refuses_a_bad_request_and_bad_options(psrun, tmp_path):
    proc, sock = serve(psrun)
    request(sock, tmp_path)  # no program
    assert sock.recv(16) == b""
    assert proc.wait(timeout=60) == 2
    assert proc.stderr.read() == "psrun: --serve: a request needs TIMEOUT, RUN_DIR and PROG\n"
    with open(os.devnull) as nothing:  # not a socket
        bad = subprocess.run([str(psrun), "--serve"], stdin=nothing, capture_output=True, text=True, check=False)
    assert bad.returncode == 2
    assert bad.stderr == "psrun: --serve: a request on standard input: Socket operation on non-socket\n"
    for extra in (["--dir", str(tmp_path)], ["--", "/bin/true"], ["--timeout", "1"]):
        bad = subprocess.run([str(psrun), "--serve", *extra], capture_output=True, text=True, check=False)
        assert bad.returncode == 2 and bad.stderr.startswith("usage: psrun"), extra


def test_serve_a_stop_meant_for_the_run_before_does_not_abort_the_next(psrun, tmp_path):
    # The daemon watcher's SIGTERM may reach the launcher just after its run
    # ended (psrun blocks it while it waits for the next request): the next
    # run runs.
    proc, sock = serve(psrun)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    request(sock, first, "/bin/true")
    assert sock.recv(16) == b"ok"
    os.kill(proc.pid, signal.SIGTERM)
    wait_for(lambda: _pending_term(proc.pid), what="the signal to be pending")
    request(sock, second, "/bin/sh", "-c", "echo ran")
    assert sock.recv(16) == b"ok"
    assert status(second)["status"] == "ok" and (second / "stdout.txt").read_text() == "ran\n"
    sock.close()
    assert proc.wait(timeout=60) == 0


def _pending_term(pid: int) -> bool:
    """SIGTERM pending for the process (blocked, not yet taken)."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    pending = int(fields["ShdPnd"].strip(), 16) | int(fields["SigPnd"].strip(), 16)
    return bool(pending & (1 << (signal.SIGTERM - 1)))
