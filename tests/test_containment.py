"""Nothing escapes, nothing overlaps (issue 20): the real workflow, real processes.

Every process of a run ends with it, whatever it did with sessions; a killed
workflow takes its benchmark with it; two invocations never measure at once;
every value either runs or is refused in one line; nothing is written through
a link a benchmark planted.
"""

import errno
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import (
    ROOT,
    SNAKEMAKE,
    alive,
    cgroup2_mount,
    cgroup_of,
    jobs_run,
    mtimes,
    processes_under,
    snakemake,
    statuses,
    write_campaign,
)

from perfsnake.campaign_csv import read_csv

pytestmark = pytest.mark.e2e


def campaign(name="c", command="echo value={x}", variables=None, **extra):
    data = {
        "name": name,
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": variables if variables is not None else {"x": [1]},
        "nb_runs": 1,
    }
    data.update(extra)
    return data


def snakemake_argv(camp: Path, *args: str) -> list[str]:
    return [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
            "--configfile", str(ROOT / "config/config.yaml"), *args, "--config", f"campaign={camp}"]  # fmt: skip


def wait_for(predicate, timeout=120.0, what="condition", proc=None):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        assert proc is None or proc.poll() is None, f"snakemake ended while waiting for {what}"
        time.sleep(0.05)


def expected_containment() -> str:
    """How psrun must contain a run on this machine, computed from the machine:
    the prefix of status.json's "containment". A cgroup v2 hierarchy this
    user may write (root, or a delegated subtree) on a kernel that forks into
    a cgroup (clone3 CLONE_INTO_CGROUP, Linux 5.7) means a run cgroup under it;
    otherwise the subreaper. So a silent fallback fails where cgroups work."""
    forced = os.environ.get("PERFSNAKE_CGROUP")
    if forced == "none":
        return "subreaper"
    if forced:
        return f"cgroup2:{forced}/"
    release = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2])
    mount = cgroup2_mount()
    if mount is None or release < (5, 7):
        return "subreaper"
    if os.access(mount, os.W_OK):
        return f"cgroup2:{mount}/perfsnake/"
    own = cgroup_of(os.getpid())
    if own != "/" and os.access(mount + own, os.W_OK):  # a delegated subtree
        return f"cgroup2:{mount}{own}/perfsnake/"
    return "subreaper"


@contextmanager
def frozen(pid: int) -> Iterator[None]:
    """`pid` held still by the cgroup v2 freezer for the block. Not by SIGSTOP:
    a launcher's process group is orphaned when its workflow dies, and the
    kernel wakes an orphaned group's stopped members (SIGHUP, then SIGCONT)."""
    mount = cgroup2_mount()
    assert mount is not None
    home = Path(mount + cgroup_of(pid))
    hold = Path(mount) / f"perfsnake-test-hold-{pid}"
    hold.mkdir()
    try:
        (hold / "cgroup.procs").write_text(str(pid))
        (hold / "cgroup.freeze").write_text("1")
        wait_for(
            lambda: "frozen 1" in (hold / "cgroup.events").read_text().splitlines(), timeout=60.0, what="the freeze"
        )
        yield
    finally:
        (hold / "cgroup.freeze").write_text("0")
        try:
            (home / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            pass  # it ended meanwhile
        deadline = time.monotonic() + 60
        while True:  # an exiting process keeps its cgroup busy a moment
            try:
                hold.rmdir()
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def pids_in(directory: Path, name: str) -> list[int]:
    return [int(p.read_text()) for p in directory.rglob(name) if p.read_text().strip()]


def no_overlap(spans: list[tuple[float, float]]) -> None:
    spans = sorted(spans)
    for (_s0, e0), (s1, _e1) in zip(spans, spans[1:], strict=False):
        assert s1 >= e0, spans


# A time-out comes after the benchmark started what the test looks at (a
# shell's start-up and a fork): the test asserts what the time-out does, not how soon.
TIMEOUT_S = 2


@pytest.mark.parametrize("timeout_s", [None, TIMEOUT_S])
def test_setsid_grandchild_ends_with_its_run(tmp_path, timeout_s):
    # The grandchild leaves the benchmark's process group and session; once
    # it runs, the benchmark ends (or waits for its time-out).
    command = (
        "setsid sh -c 'echo $$ > gc.pid; exec sleep 1000' & while [ ! -s gc.pid ]; do sleep 0.01; done; "
        + ("sleep 1000; " if timeout_s else "")
        + "echo value={x}"
    )
    extra = {"timeout_s": timeout_s} if timeout_s else {}
    camp = write_campaign(tmp_path, campaign(command=command, **extra))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    run = tmp_path / "results/c/runs/x-1/run-1"
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == ("timeout" if timeout_s else "ok")
    assert result["containment"].startswith(expected_containment()), result["containment"]
    grandchild = int((run / "gc.pid").read_text())
    assert not alive(grandchild)


def test_self_detaching_daemon_hook_ends_with_its_run(tmp_path):
    # What `redis-server --daemonize yes` does: the server detaches, the hook's command goes on.
    # The run starts once the detached server runs (it wrote its pid).
    daemon = "setsid sh -c 'echo $$ > {run_dir}/server.pid; exec sleep 1000' & exec sleep 1000"
    hook = {"type": "daemon", "name": "srv", "command": daemon, "ready": {"command": "test -s server.pid"}}
    camp = write_campaign(tmp_path, campaign(pre_run_hooks=[hook]))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    run = tmp_path / "results/c/runs/x-1/run-1"
    server = int((run / "server.pid").read_text())
    assert not alive(server)
    hooks = json.loads((run / "hooks.json").read_text())
    teardown = next(h for h in hooks if h["phase"] == "teardown")
    assert teardown["stopped"] is True and teardown["containment"].startswith(expected_containment()), teardown


def session_members(sid: int) -> dict[int, tuple[str, int, int]]:
    """The live processes of a session: pid -> (state, parent pid, process group)."""
    members = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == sid and fields[0] not in "ZX":
            members[int(stat.parent.name)] = (fields[0], int(fields[1]), int(fields[2]))
    return members


def kill_session(sid: int) -> None:
    """SIGKILL every process of a session at once (a container stop, `pkill -9 -s`).

    At once: killed one by one, a launcher could see its workflow die before
    its own turn came and clean up as a live launcher does (the guardian
    would have nothing to do). So every member is stopped first, then the
    process groups are killed whole, the deepest first: the kernel wakes a
    stopped group that loses the parent linking it to its session, and a
    launcher woken so would still see its workflow die."""
    deadline = time.monotonic() + 60
    while True:  # until no member runs (a running one may have started another)
        running = [pid for pid, (state, _, _) in session_members(sid).items() if state != "T"]
        if not running:
            break
        assert time.monotonic() < deadline, f"session {sid} does not stop: {running}"
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    members = session_members(sid)

    def depth(pid: int) -> int:
        return 1 + depth(members[pid][1]) if pid in members else 0

    groups: dict[int, int] = {}  # process group -> depth of its shallowest member
    for pid, (_, _, group) in members.items():
        groups[group] = min(groups.get(group, depth(pid)), depth(pid))
    for group in sorted(groups, key=groups.__getitem__, reverse=True):
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def end_leftovers(pids: list[int], within: float = 60.0) -> None:
    """After a failure: what is still alive of a test's own processes after `within` seconds is killed."""
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def heartbeat(name: str) -> str:
    """Shell: append the time to `name` every 20 ms, forever: the last line is when the writer was last alive."""
    return f"while :; do date +%s.%N >> {name}; sleep 0.02; done"


def last_beat(directory: Path) -> float:
    return max(float(line) for f in directory.rglob("*.alive") for line in f.read_text().split()
               if re.fullmatch(r"\d+\.\d+", line))  # fmt: skip


@pytest.mark.skipif(
    not os.access(cgroup2_mount() or "/nonexistent", os.W_OK),
    reason="holds the killed run's launcher with the cgroup v2 freezer: needs a writable cgroup v2",
)
@pytest.mark.parametrize("target", ["process group", "pid", "session"])
def test_killed_workflow_takes_its_benchmark_and_resume_never_overlaps(tmp_path, target):
    # The first attempt's benchmark and a grandchild it detached into a
    # session of its own never end by themselves (each writes a heartbeat
    # until it is killed); the resume's attempts only print their value. A
    # pre-run hook records when each run of the resume began (under the host
    # lock, before its launcher could clear anything itself).
    resumed = tmp_path / "resumed"
    command = (f"if [ -e {resumed} ]; then echo value={{x}}; exit 0; fi; "
               f"setsid sh -c 'echo $$ > gc.pid; {heartbeat('gc.alive')}' & echo $$ > bench.pid; {heartbeat('bench.alive')}")  # fmt: skip
    clock = {"type": "command", "name": "clock", "command": "date +%s.%N", "metrics": {"t": r"^(\d+\.\d+)$"}}
    camp = write_campaign(tmp_path, campaign(command=command, variables={"x": [1, 2, 3]}, pre_run_hooks=[clock]))
    proc = subprocess.Popen(snakemake_argv(camp, "--cores", "1", "all"), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    runs = tmp_path / "results/c/runs"
    wait_for(lambda: runs.exists() and pids_in(runs, "bench.pid") and pids_in(runs, "gc.pid"), what="a running benchmark", proc=proc)  # fmt: skip
    (bench,), (grandchild,) = pids_in(runs, "bench.pid"), pids_in(runs, "gc.pid")
    run_dir = next(runs.rglob("bench.pid")).parent
    state = dict(line.split(" ", 1) for line in (run_dir / ".psrun.state").read_text().splitlines())
    # Who holds the host lock for the run once the workflow is dead: its
    # launcher, or, when the launcher dies too, the launcher's guardian (a
    # session of its own). It is held still until the resume waits: the
    # moment it clears the leftovers (milliseconds, in practice) is held
    # open, so that the resume certainly starts beside them.
    holder = int(state["guardian"] if target == "session" else state["pid"])
    resume = None
    try:
        with frozen(holder):
            # What a shell's job control, `timeout -s KILL` or a CI runner does.
            if target == "process group":
                os.killpg(proc.pid, signal.SIGKILL)
            elif target == "session":
                kill_session(proc.pid)  # the launcher and the benchmark, not what left the session
            else:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            leftovers = [grandchild] if target == "session" else [bench, grandchild]
            resumed.touch()
            # The documented resume.
            snakemake(tmp_path, camp, "--unlock", "all")
            log = tmp_path / "resume.log"
            with log.open("w") as err:
                resume = subprocess.Popen(snakemake_argv(camp, "--cores", "1", "all", "--rerun-incomplete"),
                                          cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err)  # fmt: skip
            # It waits for the host lock, or first (since the resume-window fix) for the
            # killed run's launcher: either way beside the live leftovers.
            wait_for(lambda: "[perfsnake]" in log.read_text() and "waiting for" in log.read_text(),
                     what="the resume to wait", proc=resume)  # fmt: skip
            assert all(alive(p) for p in leftovers)  # the resume met the leftovers
    except BaseException:
        # Nothing of this test outlives it: the workflows, and the leftovers once their holder had its chance.
        for p in (proc, resume):
            if p is not None and p.poll() is None:
                p.kill()
        end_leftovers([bench, grandchild])
        raise
    assert resume.wait(timeout=600) == 0, log.read_text()[-3000:]
    assert not any(alive(p) for p in (bench, grandchild))
    # Every run of the resume began after the last leftover's last sign of life.
    ended = last_beat(runs)
    results = [json.loads(p.read_text()) for p in runs.rglob("result.json")]
    assert len(results) == 3
    for result in results:
        assert float(result["metrics"]["hook.clock.t"]) > ended, (result["metrics"], ended)
    spans = [(s["start_epoch"], s["end_epoch"]) for s in statuses(tmp_path, "c").values()]
    assert len(spans) == 3 and min(start for start, _ in spans) > ended
    no_overlap(spans)


@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="needs bpftrace")
@pytest.mark.parametrize("target", ["process group", "session"])
def test_killed_workflow_takes_its_attached_tracer(tmp_path, target):
    camp = write_campaign(tmp_path, campaign(command="echo $$ > bench.pid; sleep 1000; echo value={x}",
                                             pre_run_hooks=[{"type": "attach", "program": "runqlat"}]))  # fmt: skip
    proc = subprocess.Popen(snakemake_argv(camp, "--cores", "1", "all"), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    runs = tmp_path / "results/c/runs"
    # The tracer attached (it started before the benchmark) and the benchmark runs.
    wait_for(lambda: runs.exists() and pids_in(runs, "bench.pid") and processes_under(tmp_path, "bpftrace"),
             what="the benchmark under its tracer", proc=proc)  # fmt: skip
    doomed = processes_under(tmp_path, "bpftrace") + pids_in(runs, "bench.pid")
    if target == "process group":
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        kill_session(proc.pid)
    proc.wait()
    wait_for(lambda: not any(alive(p) for p in doomed), timeout=60.0, what="the tracer and the benchmark to end")
    assert not processes_under(tmp_path, "bpftrace")


def test_two_invocations_in_one_checkout_never_overlap(tmp_path):
    command = "sleep 0.3; echo value={x}"
    camps = [
        write_campaign(tmp_path, campaign(name=n, command=command, variables={"x": [1, 2, 3, 4]}), f"{n}.yaml")
        for n in ("a", "b")
    ]
    # The launcher both need, built first: Snakemake locks a directory against
    # two invocations creating the same file.
    snakemake(tmp_path, camps[0], "--cores", "1", "resources/bin/psrun")
    procs = [subprocess.Popen(snakemake_argv(c, "--cores", "2", "all"), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in camps]  # fmt: skip
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-3000:]
    spans = [(s["start_epoch"], s["end_epoch"]) for n in ("a", "b") for s in statuses(tmp_path, n).values()]
    assert len(spans) == 8
    no_overlap(spans)


def test_a_second_invocation_waits_for_the_host_lock_and_says_so(tmp_path):
    camp = write_campaign(tmp_path, campaign())
    lock = Path(os.environ["PERFSNAKE_HOST_LOCK"])
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another invocation's run, as far as this one can tell
    log = tmp_path / "stderr.log"
    try:
        with log.open("w") as err:
            proc = subprocess.Popen(
                snakemake_argv(camp, "--cores", "1", "all"), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err
            )
        wait_for(lambda: "[perfsnake] waiting for" in log.read_text(), what="the waiting line", proc=proc)
        assert not (tmp_path / "results/c/runs/x-1/run-1/status.json").exists()
        released = time.time()
    finally:
        os.close(fd)
    assert proc.wait(timeout=300) == 0
    lines = [ln for ln in log.read_text().splitlines() if "[perfsnake] waiting for" in ln]
    assert len(lines) == 1 and str(lock) in lines[0]
    assert statuses(tmp_path, "c")["x-1/run-1"]["start_epoch"] >= released


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
@pytest.mark.parametrize("key", ["timeout_s", "duration_s"])
def test_non_finite_numbers_are_refused_in_one_line(tmp_path, key, value):
    data = json.dumps(campaign())[:-1] + f', "{key}": VALUE}}'
    path = tmp_path / "c.yaml"
    path.write_text(data.replace("VALUE", value))  # JSON is YAML; .inf is YAML's infinity
    for argv in ([str(Path(SNAKEMAKE).with_name("python")), "-m", "perfsnake", "validate", str(path)],
                 snakemake_argv(path, "--cores", "1", "all")):  # fmt: skip
        proc = subprocess.run(
            argv, cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False
        )
        assert proc.returncode != 0
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
        assert (
            len(lines) == 1 and str(path) in lines[0] and f"{key}:" in lines[0] and "not a finite number" in lines[0]
        ), proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


def test_long_and_periodic_values_run(tmp_path):
    long_value = "v" * 150 + "w" * 150
    mask = "0x" + "f" * 24
    values = [long_value, long_value[:-1] + "x", mask, "0x" + "f" * 25, "plain"]
    camp = write_campaign(
        tmp_path, campaign(command="echo value=1; printf '%s' {x} > value.txt", variables={"x": values})
    )
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "run") == len(values)
    frame = read_csv(tmp_path / "results/c/c.csv")
    assert sorted(frame["x"]) == sorted(values) and set(frame["status"]) == {"ok"}
    runs = tmp_path / "results/c/runs"
    seen = {}
    for result in runs.rglob("result.json"):
        data = json.loads(result.read_text())
        seen[data["variables"]["x"]] = result.parent
        assert (result.parent / "value.txt").read_text() == data["variables"]["x"]
        assert all(len(part) <= 255 for part in result.relative_to(runs).parts)
    assert set(seen) == set(values)
    # Stable: a second invocation finds every run done.
    before = mtimes(tmp_path, "c")
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "run") == 0 and mtimes(tmp_path, "c") == before


def test_planted_link_is_reported_never_followed(tmp_path):
    outside = tmp_path / "precious.txt"
    outside.write_text("precious\n")
    command = (
        f"ln -s {outside} result.json.tmp; ln -s {outside} samples.csv; ln -s {outside} hooks.json; echo value={{x}}"
    )
    camp = write_campaign(tmp_path, campaign(command=command, post_run_hooks=[{"type": "cooldown", "seconds": 0}]))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    assert outside.read_text() == "precious\n"
    run = tmp_path / "results/c/runs/x-1/run-1"
    for name in ("result.json", "hooks.json"):
        assert not (run / name).is_symlink(), name
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "ok"
    assert {"result.json.tmp", "samples.csv", "hooks.json"} <= set(result["links"])
    assert json.loads((run / "status.json").read_text())["links"] == result["links"]


def test_marked_components_are_stable_distinct_and_short():
    from perfsnake.escape import record_path

    long_a, long_b = "a" * 300, "a" * 299 + "b"
    pa, pb = record_path({"x": long_a}, ["x"]), record_path({"x": long_b}, ["x"])
    assert pa != pb and len(pa) <= 120 and pa == record_path({"x": long_a}, ["x"])
    mask = "0x" + "f" * 24
    assert record_path({"x": mask}, ["x"]) == f"x-{mask}~"
    assert record_path({"x": "0x" + "f" * 18}, ["x"]) == "x-0x" + "f" * 18  # below Snakemake's limit: unchanged
    assert record_path({"x": 1, "y": 2}, ["x", "y"]) == "x-1/y-2"
