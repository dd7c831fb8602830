"""Shared helpers for the tests: compiling our C programs, writing campaigns,
running the real workflow in a scratch directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def compile_c(source: Path, out: Path) -> Path:
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(source)], check=True)
    return out


def write_campaign(workdir: Path, data: dict, name: str = "c.yaml") -> Path:
    path = workdir / "campaigns" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def snakemake(
    workdir: Path,
    campaign: Path | None,
    *args: str,
    timeout: float = 600,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run the real workflow with the project's profile, in `workdir` (`env`: variables to set)."""
    cmd = [
        SNAKEMAKE,
        "-s", str(ROOT / "workflow" / "Snakefile"),
        "--workflow-profile", str(ROOT / "profiles" / "default"),
        "--directory", str(workdir),
        "--configfile", str(ROOT / "config" / "config.yaml"),
        # The profile hides the job blocks; the tests count them (jobs_run).
        "--quiet", "host",
    ]  # fmt: skip
    cmd += list(args)
    # --config takes every following word, so it goes last.
    if campaign is not None:
        cmd += ["--config", f"campaign={campaign}"]
    environ = {**os.environ, **env} if env else None
    proc = run_group(cmd, timeout, cwd=workdir, env=environ)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return proc


def run_group(cmd: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run in a session of its own, output captured as text; on
    the timeout the whole group is killed (subprocess.run kills only the
    child: Snakemake's jobs and launchers lived on, holding locks and CPUs)."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                          **kwargs) as proc:  # fmt: skip
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to a process started with start_new_session and everything of its group."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def statuses(workdir: Path, campaign: str) -> dict[str, dict]:
    """run-dir (relative to runs/) -> status.json contents."""
    runs = workdir / "results" / campaign / "runs"
    return {
        str(p.parent.relative_to(runs)): json.loads(p.read_text())
        for p in runs.rglob("status.json")
        if "previous" not in p.parts
    }


def mtimes(workdir: Path, campaign: str) -> dict[str, int]:
    runs = workdir / "results" / campaign / "runs"
    return {
        str(p.parent.relative_to(runs)): p.stat().st_mtime_ns
        for p in runs.rglob("status.json")
        if "previous" not in p.parts
    }


def jobs_run(proc: subprocess.CompletedProcess, rule: str) -> int:
    """How many jobs of `rule` the invocation executed (from its log)."""
    text = proc.stdout + proc.stderr
    return sum(1 for line in text.splitlines() if line.strip() in (f"rule {rule}:", f"localrule {rule}:"))


def env_without_snakemake() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}


def processes_under(directory: Path, needle: str) -> list[int]:
    """PIDs whose command line contains `needle` and that work under
    `directory` (their working directory) or hold a file open there (a server
    that moved to its own data directory still writes its log to the run's):
    only a test's own processes, since other test runs may share the machine."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if needle not in cmdline:
                continue
            places = [os.readlink(proc / "cwd")]
            for fd in (proc / "fd").iterdir():
                try:
                    places.append(os.readlink(fd))
                except OSError:
                    continue
        except OSError:
            continue
        if any(place.startswith(str(directory)) for place in places):
            found.append(int(proc.name))
    return found


def alive(pid: int) -> bool:
    """Whether a process still runs: a zombie is gone for our purposes, and so
    is one that went meanwhile (reading the stat of a process that just exited
    raises ESRCH, not ENOENT)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cgroup2_mount() -> str | None:
    """Where cgroup v2 is mounted (/sys/fs/cgroup, or .../unified on a hybrid host), if it is."""
    mounts = [
        line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines() if " - cgroup2 " in line
    ]
    return mounts[0] if mounts else None


def cgroup_of(pid: int) -> str:
    """A process's cgroup v2 path ("0::/path" in /proc/PID/cgroup)."""
    return next(
        (line[3:] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::")), "/"
    )


def slurm_command(workdir: Path, campaign: Path, *args: str) -> list[str]:
    """The documented cluster command (docs/platforms.md): the slurm profile
    in place of profiles/default. From a checkout whose Python's path has a
    space the executor cannot start a job, and the workflow refuses in one
    line (snakemake_internals.cluster_python_problem, tested on its own):
    the test is skipped for that reason (conftest.ALLOWED_SKIPS), checked
    against the workflow's own refusal first."""
    from perfsnake.snakemake_internals import cluster_python_problem

    if problem := cluster_python_problem("slurm", sys.executable):
        import pytest

        # Refused when the scheduler starts, before any job (not in a dry run): nothing is written.
        refused = subprocess.run([SNAKEMAKE, "-s", str(ROOT / "workflow" / "Snakefile"), "--profile",
                                  str(ROOT / "profiles" / "slurm"), "--workflow-profile", "none", "--directory",
                                  str(workdir), "--configfile", str(ROOT / "config" / "config.yaml"),
                                  "--config", f"campaign={campaign}"],
                                 capture_output=True, text=True, check=False, timeout=300)  # fmt: skip
        assert refused.returncode != 0 and f"perfsnake: error: {problem}" in refused.stderr, refused.stderr[-2000:]
        assert not (workdir / "results").exists()
        pytest.skip(problem)
    return [
        SNAKEMAKE,
        "-s", str(ROOT / "workflow" / "Snakefile"),
        "--profile", str(ROOT / "profiles" / "slurm"),
        "--workflow-profile", "none",
        "--directory", str(workdir),
        "--configfile", str(ROOT / "config" / "config.yaml"),
        # A test cluster answers at once; the profile's 20 s suit a real one.
        "--slurm-init-seconds-before-status-checks", "1",
        *args,
        "--config", f"campaign={campaign}",
    ]  # fmt: skip


def skip_without_flame_tools() -> None:
    """Skip when perf_record's flame-graph tools are not installed here: a
    normal user's account without cargo has no inferno (`make setup` says so
    and goes on). Allowed for a normal user only while inferno is really
    absent (tests/conftest.py NORMAL_USER_ABSENT); root's suite fails on it."""
    import pytest

    from perfsnake.stages.profile import find_tools

    if find_tools() is None:
        pytest.skip(
            "no inferno in this account (make setup installs it with cargo, which this account lacks): flame graphs"
        )


def printed(stdout: str, label: str) -> str:
    """The value of the heater's "<label>: <value>" line, read without the parser."""
    (value,) = [line.removeprefix(f"{label}: ") for line in stdout.splitlines() if line.startswith(f"{label}: ")]
    return value


def printed_intervals(stdout: str) -> list[tuple[int, float, int]]:
    """The heater's "interval <k> <seconds> <ops>" lines, read without the parser."""
    rows = [line.split(" ") for line in stdout.splitlines() if line.startswith("interval ")]
    return [(int(k), float(t), int(n)) for _word, k, t, n in rows]


#: A process recording 300 runs into a results store (argv: url, writer's
#: name, then what `setup` reads), 30 at a time, the first 100 the same runs
#: as every other writer's: two at once must lose and double no row.
STORE_WRITER = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from perfsnake.history.store import Store, run_key
url, who = sys.argv[1], sys.argv[2]
store = Store.open(url)
{setup}
rows = []
for i in range(300):
    owner = "shared" if i < 100 else who
    rows.append(dict(run_key=run_key({campaign!r}, owner, "{{}}", i, "t"), campaign={campaign!r}, hostname=owner,
                     record="{{}}", run=i, status="ok", start="t", end=None, wall_s=1.0, metrics=json.dumps({{"x": i}}),
                     versions="{{}}"))
for chunk in range(0, 300, 30):
    store.record(dict(campaign={campaign!r}, hostname=who, recorded_at="now", source="import"), rows[chunk:chunk + 30])
print("done")
"""


def store_writer(campaign: str, setup: str = "") -> str:
    """STORE_WRITER for `campaign`, with `setup` run after the store is opened."""
    return STORE_WRITER.format(root=str(ROOT), campaign=campaign, setup=setup)


#: the container platform's image the tests use (scripts/setup/container.sh's default)
IMAGE = "localhost/perfsnake-bookworm:latest"


def build_image() -> str | None:
    """Why the container image could not be made here (None: it is here),
    built without a registry by scripts/setup/container.sh (mmdebstrap;
    kept once built; one build at a time however many test files ask)."""
    import shutil

    if not shutil.which("podman"):
        return "podman is not installed"
    proc = subprocess.run(["bash", str(ROOT / "scripts/setup/container.sh"), IMAGE], capture_output=True, text=True,
                          timeout=900, check=False)  # fmt: skip
    return None if proc.returncode == 0 else f"scripts/setup/container.sh failed: {proc.stderr.strip()[-300:]}"
