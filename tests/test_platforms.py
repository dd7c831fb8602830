"""SSH and container platforms, for real: an sshd on 127.0.0.1 and podman
with a local mmdebstrap image, both started by these tests."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sshd
from helpers import IMAGE, ROOT, SNAKEMAKE, build_image, snakemake, statuses, write_campaign


def command_campaign(command: str, platform: dict, variables: dict | None = None, **extra) -> dict:
    data = {
        "name": "p",
        "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\S+)"}},
        "variables": variables or {"x": [1, 2]},
        "nb_runs": 2,
        "platform": platform,
    }
    data.update(extra)
    return data


def pgrep(pattern: str) -> list[str]:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False).stdout.split()


def wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def kill_workflow_during_run(workdir: Path, campaign: Path, marker: str) -> None:
    """Start the workflow, SIGKILL it (alone) once the marked benchmark runs."""
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--config", f"campaign={campaign}"]  # fmt: skip
    log = workdir / "snakemake.err"
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=workdir, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        wait_for(lambda: pgrep(marker) or proc.poll() is not None, 120, f"{marker} to start")
        assert proc.poll() is None, f"the workflow ended before {marker} ran"
    except AssertionError as e:
        raise AssertionError(f"{e}\nits stderr:\n{log.read_text()[-3000:]}") from None
    finally:
        proc.kill()
        proc.wait()


# ---- ssh ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(sshd.SSHD).exists():
        pytest.skip("openssh-server is not installed (scripts/setup/apt.sh installs it)")
    srv = sshd.start(tmp_path_factory.mktemp("sshd"))
    yield srv
    sshd.stop(srv)


def test_ssh_builds_and_runs_on_the_remote_host(tmp_path, server):
    remote = tmp_path / "remote"
    data = {"name": "s", "benchmark": "heater", "variables": {"cpu": [0, 1]}, "nb_runs": 2, "duration_s": 0.5,
            "timeout_s": 30, "platform": server.platform(remote)}  # fmt: skip
    snakemake(tmp_path, write_campaign(tmp_path, data), "--cores", "2", "all")
    runs = statuses(tmp_path, "s")
    assert sorted(runs) == ["cpu-0/run-1", "cpu-0/run-2", "cpu-1/run-1", "cpu-1/run-2"]
    assert {r["status"] for r in runs.values()} == {"ok"}
    # Built there, not here: the local build directory only says where.
    (build,) = (tmp_path / "resources/builds/heater").iterdir()
    assert build.name.startswith("ssh-") and not (build / "heater").exists()
    assert json.loads((build / "platform.json").read_text())["port"] == server.port
    assert (Path(str(remote) + str(build)) / "heater").is_file()
    # The run directories were copied back, the remote host described.
    for name, status in runs.items():
        local = tmp_path / "results/s/runs" / name
        mirrored = Path(str(remote) + str(local))
        assert json.loads((mirrored / "status.json").read_text()) == status
        assert float(json.loads((local / "result.json").read_text())["metrics"]["ops_per_s"]) > 0
        facts = json.loads((local / "platform.json").read_text())
        assert facts["hostname"] == os.uname().nodename and facts["remote_run_dir"] == str(mirrored)
    head = (tmp_path / "results/s/s.csv").read_text()
    assert "# platform: ssh" in head and f"# platform_port: {server.port}" in head and "# platform_cpu_model: " in head


def test_ssh_timeout_and_killed_workflow_leave_no_remote_process(tmp_path, server):
    remote = tmp_path / "remote"
    marker = "sleep 71.31"
    camp = write_campaign(
        tmp_path, command_campaign(f"{marker}; echo value={{x}}", server.platform(remote), timeout_s=1.5, nb_runs=1)
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    assert {s["status"] for s in statuses(tmp_path, "p").values()} == {"timeout"}
    assert pgrep(marker) == []
    # Killed workflow: the launcher there sees its standard input close.
    other = tmp_path / "other"
    other.mkdir()
    marker = "sleep 72.41"
    camp = write_campaign(other, command_campaign(f"{marker}; echo value={{x}}", server.platform(remote), nb_runs=1))
    kill_workflow_during_run(other, camp, marker)
    wait_for(lambda: not pgrep(marker), 10, "the remote benchmark to stop")


def test_ssh_runs_take_the_remote_hosts_lock_and_say_when_they_wait(tmp_path, server):
    # Another user of the remote host holds its benchmark lock: our run waits, says so, and starts after.
    lock = tmp_path / "remote-bench.lock"
    camp = write_campaign(tmp_path, command_campaign("echo value={x}", {**server.platform(tmp_path / "remote"), "lock": str(lock)},
                                                     variables={"x": [1]}, nb_runs=1))  # fmt: skip
    cmd = [SNAKEMAKE, "-s", str(ROOT / "workflow/Snakefile"), "--workflow-profile", str(ROOT / "profiles/default"),
           "--configfile", str(ROOT / "config/config.yaml"), "--config", f"campaign={camp}", "--cores", "1", "all"]  # fmt: skip
    log = tmp_path / "snakemake.err"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        try:
            wait_for(lambda: "perfsnake: waiting for the benchmark lock of" in log.read_text(), 300, "the wait")
            assert not statuses(tmp_path, "p")
            released = time.time()
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    (status,) = statuses(tmp_path, "p").values()
    assert status["status"] == "ok" and status["start_epoch"] >= released


@pytest.mark.parametrize(
    "platform,needle",
    [
        ({"type": "ssh", "host": "-oProxyCommand=touch /tmp/pwned"}, "platform.host"),
        ({"type": "ssh", "host": "h", "remote_dir": "/tmp/../etc"}, "platform.remote_dir"),
        (
            {"type": "ssh", "host": "h", "options": {"ProxyCommand": "touch /tmp/pwned x"}},
            "platform.options.ProxyCommand",
        ),
        ({"type": "container", "image": "x", "options": ["--network=bridge"]}, "platform.options"),
        ({"type": "container", "image": "x", "network": "bridge"}, "platform.network"),
        ({"type": "container", "image": "x", "cpuset": "{nosuch}"}, "platform.cpuset"),
        ({"type": "slurm"}, "platform.type"),
    ],
)
def test_bad_platform_is_one_line_and_writes_nothing(tmp_path, platform, needle):
    camp = write_campaign(tmp_path, command_campaign("echo value={x}", platform))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
    assert proc.returncode != 0 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (tmp_path / "results").exists() and not Path("/tmp/pwned").exists()


@pytest.mark.parametrize(
    "hook", [{"type": "command", "command": "echo hooked=1"}, {"type": "drop_caches"}], ids=["command", "drop_caches"]
)
def test_ssh_refuses_instruments_that_act_on_this_machine(tmp_path, hook):
    camp = write_campaign(
        tmp_path, command_campaign("echo value={x}", {"type": "ssh", "host": "h"}, pre_run_hooks=[hook])
    )
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    # A normal user's drop_caches is refused first for what it needs here (root), also in one line.
    if hook["type"] == "drop_caches" and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        needle = "pre_run_hooks[0]: dropping the page cache needs root"
    else:
        needle = f"platform: the {hook['type']} hook acts on this machine"
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
    assert proc.returncode != 0 and len(lines) == 1 and needle in lines[0], proc.stderr
    assert not (tmp_path / "results").exists()


# ---- containers ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def image():
    if not shutil.which("podman"):
        pytest.skip("podman is not installed (scripts/setup/container.sh installs it)")
    problem = build_image()
    assert problem is None, problem
    return IMAGE


def test_container_runs_inside_with_cpuset_and_no_network(tmp_path, image):
    probe = ("test -e /run/.containerenv && echo inside=yes; grep Cpus_allowed_list /proc/self/status; "
             "echo interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,); echo value={cpu}")  # fmt: skip
    platform = {"type": "container", "image": image, "cpuset": "{cpu}"}
    camp = write_campaign(tmp_path, command_campaign(probe, platform, variables={"cpu": [0, 1]}))
    # Whether the engine applies a cpuset here (rootless podman needs the cpuset controller delegated), asked directly.
    seen = subprocess.run(["podman", "run", "--rm", "--cpuset-cpus=0", image, "grep", "Cpus_allowed_list", "/proc/self/status"],
                          capture_output=True, text=True, check=False).stdout  # fmt: skip
    if seen != "Cpus_allowed_list:\t0\n":
        assert os.geteuid() != 0, f"podman as root did not apply a cpuset: {seen!r}"
        proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
        assert proc.returncode != 0 and len(lines) == 1, proc.stderr
        assert "platform.cpuset: podman did not apply --cpuset-cpus=0" in lines[0] and "Delegate=cpuset" in lines[0]
        assert not (tmp_path / "results").exists()
        return
    snakemake(tmp_path, camp, "--cores", "1", "all")
    runs = statuses(tmp_path, "p")
    assert len(runs) == 4 and {r["status"] for r in runs.values()} == {"ok"}
    for name in runs:
        out = (tmp_path / "results/p/runs" / name / "stdout.txt").read_text()
        cpu = name.split("/")[0].split("-")[1]
        assert "inside=yes" in out and f"Cpus_allowed_list:\t{cpu}\n" in out and "interfaces=lo,\n" in out, out
        facts = json.loads((tmp_path / "results/p/runs" / name / "platform.json").read_text())
        assert facts["cpuset"] == cpu and facts["image_id"]
    head = (tmp_path / "results/p/p.csv").read_text()
    assert "# platform: container" in head and "# platform_image_id: " in head
    assert (
        subprocess.run(
            ["podman", "ps", "-aq", "--filter", "name=perfsnake-"], capture_output=True, text=True
        ).stdout.strip()
        == ""
    )


def test_container_host_network_sees_the_host_interfaces(tmp_path, image):
    probe = "echo value=$(tail -n +3 /proc/net/dev | wc -l)"
    snakemake(
        tmp_path,
        write_campaign(
            tmp_path, command_campaign(probe, {"type": "container", "image": image, "network": "host"}, nb_runs=1)
        ),
    )
    result = json.loads((tmp_path / "results/p/runs/x-1/run-1/result.json").read_text())
    host = len(Path("/proc/net/dev").read_text().splitlines()) - 2
    assert float(result["metrics"]["value"]) == host


def test_container_timeout_and_killed_workflow_leave_nothing_running(tmp_path, image):
    marker = "sleep 73.51"
    platform = {"type": "container", "image": image}
    snakemake(
        tmp_path,
        write_campaign(tmp_path, command_campaign(f"{marker}; echo value={{x}}", platform, timeout_s=1.5, nb_runs=1)),
    )
    assert {s["status"] for s in statuses(tmp_path, "p").values()} == {"timeout"}
    other = tmp_path / "other"
    other.mkdir()
    marker = "sleep 74.61"
    camp = write_campaign(other, command_campaign(f"{marker}; echo value={{x}}", platform, nb_runs=1))
    kill_workflow_during_run(other, camp, marker)
    wait_for(lambda: not pgrep(marker), 15, "the benchmark in the container to stop")
    wait_for(lambda: not subprocess.run(["podman", "ps", "-aq", "--filter", "name=perfsnake-"], capture_output=True, text=True).stdout.strip(),
             30, "the container to be removed")  # fmt: skip


def test_container_wrappers_run_inside_the_image(tmp_path, image):
    """The image has the programs the observer wrappers run (time, strace,
    ltrace, valgrind, numactl): each wraps the benchmark inside the container
    and reports its metrics."""
    for name, wrappers, metrics in (
        ("tm", [{"type": "time"}, {"type": "strace"}], ["time.max_rss_kb", "strace.total_calls"]),
        ("vg", [{"type": "valgrind"}], ["valgrind.instructions"]),
        ("nl", [{"type": "numactl"}, {"type": "ltrace"}], ["ltrace.total_calls"]),
    ):
        work = tmp_path / name
        data = command_campaign("echo value=1", {"type": "container", "image": image}, {"physcpubind": ["0"]},
                                nb_runs=1, wrappers=wrappers)  # fmt: skip
        snakemake(work, write_campaign(work, data), "--cores", "1", "all")
        result = json.loads((work / "results/p/runs/physcpubind-0/run-1/result.json").read_text())
        assert result["status"] == "ok", result
        assert all(result["metrics"][m] is not None for m in metrics), (name, result["metrics"])


def _validate(workdir: Path, data: dict, env: dict | None = None) -> subprocess.CompletedProcess:
    camp = write_campaign(workdir, data)
    return subprocess.run([sys.executable, "-m", "perfsnake", "validate", str(camp)], cwd=workdir, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip


def _works_inside(image: str, *argv: str, options: tuple[str, ...] = ()) -> bool:
    cmd = ["podman", "run", "--rm", "--network=none", *options, image, *argv]
    return subprocess.run(cmd, capture_output=True, check=False).returncode == 0


def test_container_validate_refuses_what_the_image_cannot_run_in_one_line(tmp_path, image):
    """validate runs each wrapper once in the image: a program the image
    lacks, perf_event_open forbidden in the container, a missing image or
    engine are refused in one line naming the key, before anything is written."""

    def refused(data: dict, key: str, *says: str, env: dict | None = None) -> None:
        proc = _validate(tmp_path, data, env)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1, proc.stdout + proc.stderr
        assert lines[0].startswith(f"perfsnake: error: {tmp_path}/campaigns/c.yaml: {key}: "), lines[0]
        assert all(s in lines[0] for s in says), lines[0]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["campaigns"]

    platform = {"type": "container", "image": image}
    perf_stat = command_campaign("echo value=1", platform, wrappers=[{"type": "perf_stat"}])
    # Whether perf may open its events in a container is the engine's and the kernel's: asked directly.
    if _works_inside(image, "perf", "stat", "-e", "task-clock", "true"):
        assert _validate(tmp_path, perf_stat).returncode == 0
    else:
        refused(perf_stat, "platform", "wrappers[0] (perf_stat) cannot run in the image", "seccomp=unconfined")
    unconfined = {**platform, "options": ["--security-opt=seccomp=unconfined"]}
    allowed = _works_inside(image, "perf", "stat", "-e", "task-clock", "true", options=tuple(unconfined["options"]))
    assert allowed == (_validate(tmp_path, {**perf_stat, "platform": unconfined}).returncode == 0)

    # An image without strace: the wrapper is refused, naming the program and how to add it.
    bare = "localhost/perfsnake-test-nostrace:latest"
    builder = f"perfsnake-test-nostrace-{os.getpid()}"
    subprocess.run(
        ["podman", "run", "--network=none", "--name", builder, image, "rm", "/usr/bin/strace"],
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(["podman", "commit", "-q", builder, bare], check=True, capture_output=True)
        strace = command_campaign("echo value=1", {"type": "container", "image": bare}, wrappers=[{"type": "strace"}])
        refused(strace, "platform", "wrappers[0] (strace)", "strace: not found", "PERFSNAKE_IMAGE_PACKAGES")
    finally:
        subprocess.run(["podman", "rm", "-f", builder], capture_output=True, check=False)
        subprocess.run(["podman", "rmi", "-f", bare], capture_output=True, check=False)

    # A packaged benchmark whose program the image lacks (the default image has no benchmark packages).
    stress_ng = shutil.which("stress-ng")
    assert stress_ng and not _works_inside(image, "test", "-x", stress_ng)
    packaged = {"name": "c", "benchmark": "stress_ng", "platform": platform}
    refused(packaged, "platform.image", f"has no {stress_ng}, which the benchmark stress_ng runs", "add stress-ng")

    nosuch = command_campaign("echo value=1", {"type": "container", "image": "localhost/perfsnake-nosuch:latest"})
    refused(nosuch, "platform.image", "localhost/perfsnake-nosuch:latest is not among podman's images")
    # No podman on PATH (nor in the sbin directories perfsnake also searches).
    bin_dir = tmp_path.parent / f"{tmp_path.name}-bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    refused(command_campaign("echo value=1", platform), "platform.engine", "podman is not installed",
            env={**os.environ, "PATH": str(bin_dir)})  # fmt: skip


def test_ssh_path_mapping_is_one_pass_for_nested_roots():
    from perfsnake.platforms import Ssh

    ssh = Ssh(host="h", remote_dir="/r")
    text = "cc -o /work/main/w/resources/x /work/main/src/a.c '/work/main/w/results/a b'"
    mapped = ssh.map_paths(text, [Path("/work/main/w"), Path("/work/main")])
    assert mapped == "cc -o /r/work/main/w/resources/x /r/work/main/src/a.c '/r/work/main/w/results/a b'"
