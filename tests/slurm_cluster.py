"""A throw-away single-node Slurm cluster on this machine, from the Debian
packages slurm-wlm and munge: a munged with its own key and socket,
slurmctld and slurmd on 127.0.0.1 at free ports, every state and log file in
one scratch directory. Used by tests/test_slurm.py and, for users who want to
try profiles/slurm without a cluster, by scripts/setup/slurm_local.sh.

The configuration has to be at Slurm's default path, /etc/slurm/slurm.conf:
the executor plugin's job step removes every SLURM_* variable, SLURM_CONF
included, before its nested `srun`. The file we write carries MARKER on its
first line; a slurm.conf without it belongs to a real installation and is
never touched (`ClusterUnavailable`). A lock file serialises concurrent
users of the machine (two test sessions), and `stop()` ends every process it
started: jobs, slurmd, slurmctld, munged, leftover slurmstepd and job
processes (found by the cluster's unique name in their environment).

Command line: python tests/slurm_cluster.py start|stop|status [--dir DIR]
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

MARKER = "# perfsnake-test-cluster: written by tests/slurm_cluster.py, removed when the cluster stops"
SLURM_CONF = Path("/etc/slurm/slurm.conf")
LOCK = Path(tempfile.gettempdir()) / "perfsnake-slurm-cluster.lock"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "srun", "sinfo", "scontrol", "scancel")


class ClusterUnavailable(Exception):
    """This machine cannot host the test cluster; the message says why."""


def missing_binaries() -> list[str]:
    return [
        b for b in (*DAEMONS, "mungekey", *CLIENTS) if shutil.which(b) is None and not Path("/usr/sbin", b).exists()
    ]


def _which(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int | None, comm: str | None = None) -> bool:
    if not pid:
        return False
    try:
        actual = Path(f"/proc/{pid}/comm").read_text().strip()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and (comm is None or actual == comm[:15])


def _kill(pid: int, comm: str, grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; only if pid still runs `comm`."""
    if not _alive(pid, comm):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not _alive(pid, comm):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _ours(entry: Path, comm: str, name: str, base: Path) -> bool:
    """Whether a process belongs to this cluster: a job process (or nested
    Snakemake) has SLURM_CLUSTER_NAME=<name> in its environment; a slurmstepd
    runs in `base` (slurmd's directory) and writes slurmd's log there."""
    if comm == "slurmstepd":
        try:
            if os.readlink(entry / "cwd") == str(base):
                return True
            return any(os.readlink(fd).startswith(f"{base}/") for fd in (entry / "fd").iterdir())
        except OSError:
            return False
    try:
        environ = (entry / "environ").read_bytes()
    except OSError:
        return False
    return f"SLURM_CLUSTER_NAME={name}".encode() in environ.split(b"\0")


def _processes_of_cluster(name: str, base: Path) -> list[tuple[int, str]]:
    """(pid, comm) of the job steps and job processes of this cluster."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if _ours(entry, comm, name, base):
            found.append((int(entry.name), comm))
    return found


def _node_line() -> str:
    """This machine as slurmd sees it (CPUs, sockets, cores, threads, memory)."""
    out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, timeout=30, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("NodeName="))
    fields = dict(f.split("=", 1) for f in line.split())
    keep = ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    return " ".join(f"{k}={fields[k]}" for k in keep if k in fields)


class SlurmCluster:
    """start() / stop(); `env` is the environment for Slurm clients and Snakemake."""

    def __init__(self, base: Path | None = None, nodes: list[str] | None = None):
        self.base = (Path(base) if base else Path(tempfile.mkdtemp(prefix="perfsnake-slurm-"))).resolve()
        self.owns_dir = base is None  # a scratch directory: removed by stop()
        self.state_file = self.base / "cluster.json"
        self.name = "pstest" + uuid.uuid4().hex[:8]
        self.host = socket.gethostname().split(".")[0]
        # Several nodes are several slurmd on this machine, each under its
        # own node name and port (a fleet's hosts in tests); one by default,
        # named after the machine.
        self.nodes = list(nodes) if nodes else [self.host]
        self.pids: dict[str, int] = {}
        # The process whose lifetime bounds the cluster's (a test session);
        # None when started from the command line, which stops it explicitly.
        self.owner_pid: int | None = os.getpid()
        self._procs: list[subprocess.Popen] = []
        self.wrote_conf = False
        self.created_etc_dir = False
        self._lock_fd: int | None = None

    # -- paths ------------------------------------------------------------
    @property
    def munge_socket(self) -> Path:
        return self.base / "munge" / "munge.socket"

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SQUEUE_"))}
        return env

    def log(self, name: str, tail: int = 40) -> str:
        path = self.base / f"{name}.log"
        if not path.exists():
            return f"({path} does not exist)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-tail:])

    # -- start ------------------------------------------------------------
    def start(self, lock_timeout: float = 600.0, ready_timeout: float = 60.0) -> SlurmCluster:
        try:
            missing = missing_binaries()
            if missing:
                raise ClusterUnavailable(
                    f"Slurm/munge binaries missing: {', '.join(missing)} (Debian: apt-get install slurm-wlm munge)"
                )
            if os.geteuid() != 0:
                raise ClusterUnavailable("slurmd must run as root to launch jobs; run as root")
            self._acquire_lock(lock_timeout)
            self._check_conf_free()
            self.base.mkdir(parents=True, exist_ok=True)
            # munged requires its socket directory (and parents) to be
            # searchable by everybody and not writable by others.
            self.base.chmod(0o755)
            for sub in ("munge", "state", "spool"):  # fresh, even in a reused --dir
                shutil.rmtree(self.base / sub, ignore_errors=True)
                (self.base / sub).mkdir()
                (self.base / sub).chmod(0o755)
            self._start_munge()
            self._write_conf()
            self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i"])
            self._wait(lambda: self._scontrol_ping(), 30, "slurmctld did not answer scontrol ping")
            for node in self.nodes:
                self._spawn(self._slurmd(node), [_which("slurmd"), "-D", "-N", node])
            self._wait(self._nodes_idle, ready_timeout, "the nodes did not become idle")
            self._save_state()
        except BaseException:
            self.stop()
            raise
        return self

    def _acquire_lock(self, timeout: float) -> None:
        fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise ClusterUnavailable(
                        f"another perfsnake test cluster holds {LOCK} for more than {timeout:.0f} s"
                    ) from None
                time.sleep(0.5)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def _check_conf_free(self) -> None:
        if not SLURM_CONF.exists():
            return
        text = SLURM_CONF.read_text(errors="replace")
        if not text.startswith(MARKER):
            raise ClusterUnavailable(
                f"{SLURM_CONF} exists and was not written by perfsnake's tests: a real Slurm "
                "installation is configured here, and the test cluster never overwrites it"
            )
        # Ours, left by an earlier cluster: still running (scripts/setup/slurm_local.sh
        # start), or stale after a crash (then its daemons are ended now).
        match = re.search(r"^# state: (.+)$", text, re.M)
        if match:
            other = load(Path(match.group(1)))
            if other is not None and other.running() and (other.owner_pid is None or _alive(other.owner_pid)):
                raise ClusterUnavailable(
                    f"a perfsnake test cluster is already running (state in {other.state_file}); "
                    f"stop it with: scripts/setup/slurm_local.sh stop {other.base}"
                )
            if other is not None:  # its owner died (killed test session): end what is left
                other.stop(remove_conf=False, lock=False)

    def _start_munge(self) -> None:
        key = self.base / "munge" / "munge.key"
        subprocess.run(
            [_which("mungekey"), "--create", f"--keyfile={key}"], check=True, capture_output=True, timeout=30
        )
        key.chmod(0o600)
        self._spawn("munged", [
            _which("munged"), "-F", "--force",
            f"--socket={self.munge_socket}", f"--key-file={key}",
            f"--pid-file={self.base / 'munge' / 'munged.pid'}",
            f"--seed-file={self.base / 'munge' / 'munged.seed'}",
            f"--log-file={self.base / 'munged.log'}",
        ])  # fmt: skip
        self._wait(lambda: self.munge_socket.exists(), 15, "munged did not create its socket")

    def _slurmd(self, node: str) -> str:
        """The name of a node's slurmd in `pids` and of its log file."""
        return "slurmd" if self.nodes == [self.host] else f"slurmd-{node}"

    def _write_conf(self) -> None:
        b = self.base
        hardware = _node_line()
        if self.nodes == [self.host]:
            node_part = ""
            nodes = f"NodeName={self.host} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN"
        else:  # Slurm expands %n to the node's name: a spool, pid and log file each
            node_part = "-%n"
            nodes = "\n".join(
                f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={_free_port()} {hardware} State=UNKNOWN"
                for n in self.nodes
            )
        conf = f"""{MARKER}
# state: {self.state_file}
ClusterName={self.name}
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={b / "state"}
SlurmdSpoolDir={b / "spool" / node_part.lstrip("-")}
SlurmctldPidFile={b / "slurmctld.pid"}
SlurmdPidFile={b / f"slurmd{node_part}.pid"}
SlurmctldLogFile={b / "slurmctld.log"}
SlurmdLogFile={b / f"slurmd{node_part}.log"}
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
# No cgroup hierarchy is needed: processes are tracked through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
ReturnToService=2
# Finished jobs stay visible to `squeue --states=all` this long: the
# executor plugin's squeue status command relies on it.
MinJobAge=300
KillWait=5
InactiveLimit=0
{nodes}
PartitionName=debug Nodes={",".join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
"""
        if not SLURM_CONF.parent.exists():
            SLURM_CONF.parent.mkdir(parents=True)
            self.created_etc_dir = True
        tmp = SLURM_CONF.with_name(".slurm.conf.perfsnake-tmp")
        tmp.write_text(conf)
        tmp.chmod(0o644)
        tmp.replace(SLURM_CONF)
        self.wrote_conf = True

    def _spawn(self, name: str, argv: list[str]) -> None:
        out = open(self.base / f"{name}.out", "ab")  # noqa: SIM115 - the daemon's output for its lifetime
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.base,
            start_new_session=True,
        )
        out.close()
        self._procs.append(proc)
        self.pids[name] = proc.pid
        self._save_state()
        time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError(
                f"{name} exited at once ({proc.returncode}):\n{(self.base / f'{name}.out').read_text()[-2000:]}\n{self.log(name)}"
            )

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, pid in self.pids.items():
                if not _alive(pid):
                    raise RuntimeError(f"{name} died: {self.log(name)}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} within {timeout:.0f} s:\n{self.log('slurmctld')}\n{self.log('slurmd')}")

    def _run(self, *argv: str, timeout: float = 20) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=self.env, check=False)

    def _scontrol_ping(self) -> bool:
        return "is UP" in self._run("scontrol", "ping").stdout

    def _nodes_idle(self) -> bool:
        states = self._run("sinfo", "-h", "-N", "-n", ",".join(self.nodes), "-o", "%N %T").stdout.split("\n")
        return sorted(ln.split()[0] for ln in states if ln.endswith(" idle")) == sorted(self.nodes)

    # -- queries ----------------------------------------------------------
    def running(self) -> bool:
        return any(_alive(pid, name) for name, pid in self.pids.items())

    def jobs(self) -> list[dict[str, str]]:
        """Every job slurmctld still knows (finished ones for MinJobAge)."""
        fields = {
            "JobID": "%i",
            "Name": "%j",
            "State": "%T",
            "StartTime": "%S",
            "EndTime": "%e",
            "NodeList": "%N",
            "OverSubscribe": "%h",
            "TimeLimit": "%l",
        }
        out = self._run("squeue", "--states=all", "-h", "-o", "|".join(fields.values())).stdout
        jobs = []
        for line in out.splitlines():
            values = [v.strip() for v in line.split("|")]
            jobs.append(dict(zip(fields, values)))
        return jobs

    # -- stop -------------------------------------------------------------
    def stop(self, remove_conf: bool = True, lock: bool = True) -> None:
        """End every job and daemon of this cluster; idempotent."""
        if self.pids.get("slurmctld") and _alive(self.pids["slurmctld"], "slurmctld"):
            ids = self._run("squeue", "-h", "-o", "%i").stdout.split()
            if ids:
                self._run("scancel", "--quiet", *ids)
            deadline = time.monotonic() + 10
            while (
                time.monotonic() < deadline and self._run("squeue", "-h", "-t", "R,CG,CF,PD", "-o", "%i").stdout.strip()
            ):
                time.sleep(0.3)
        for name in (*map(self._slurmd, self.nodes), "slurmctld"):
            _kill(self.pids.get(name, 0), name.split("-")[0])
        # Job steps and job processes that outlived slurmd.
        for _ in range(3):
            leftovers = _processes_of_cluster(self.name, self.base)
            if not leftovers:
                break
            for pid, _comm in leftovers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        _kill(self.pids.get("munged", 0), "munged")
        for proc in self._procs:  # reap our children
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []
        if remove_conf and SLURM_CONF.exists() and SLURM_CONF.read_text(errors="replace").startswith(MARKER):
            if f"# state: {self.state_file}\n" in SLURM_CONF.read_text(errors="replace"):
                SLURM_CONF.unlink()
        if remove_conf and self.created_etc_dir:
            try:
                SLURM_CONF.parent.rmdir()
            except OSError:
                pass
        self.pids = {}
        if self.owns_dir:
            shutil.rmtree(self.base, ignore_errors=True)
        elif self.state_file.exists():
            self._save_state()
        if lock:
            self._release_lock()

    def _save_state(self) -> None:
        self.state_file.write_text(json.dumps({
            "name": self.name, "host": self.host, "pids": self.pids, "created_etc_dir": self.created_etc_dir,
            "owner_pid": self.owner_pid, "owns_dir": self.owns_dir, "nodes": self.nodes,
        }))  # fmt: skip


def for_tests(nodes: list[str] | None = None) -> Iterator[SlurmCluster]:
    """A module fixture's body: a started cluster, then every process ended
    and the configuration gone. ClusterUnavailable when it cannot start."""
    c = SlurmCluster(nodes=nodes)
    c.start()
    try:
        yield c
    finally:
        c.stop()
        assert not c.running()
        assert not SLURM_CONF.exists() or not SLURM_CONF.read_text().startswith(MARKER)


def load(state_file: Path) -> SlurmCluster | None:
    try:
        data = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None
    cluster = SlurmCluster(state_file.parent)
    cluster.name, cluster.host = data["name"], data["host"]
    cluster.pids = {k: int(v) for k, v in data["pids"].items()}
    cluster.created_etc_dir = data.get("created_etc_dir", False)
    cluster.owner_pid = data.get("owner_pid")
    cluster.owns_dir = data.get("owns_dir", False)
    cluster.nodes = data.get("nodes") or [cluster.host]
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="A single-node Slurm cluster on this machine, for trying profiles/slurm."
    )
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "perfsnake-slurm",
        help="state and logs (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    state = args.dir / "cluster.json"
    existing = load(state)
    if args.action == "start":
        if existing is not None and existing.running():
            print(f"already running: cluster {existing.name}, state in {state}")
            return 0
        try:
            cluster = SlurmCluster(args.dir)
            cluster.owner_pid = None  # outlives this command; `stop` ends it
            cluster.start()
        except ClusterUnavailable as exc:
            print(f"cannot start: {exc}", file=sys.stderr)
            return 1
        cluster._release_lock()
        print(f"started cluster {cluster.name} on {cluster.host} ({SLURM_CONF}); logs in {args.dir}")
        return 0
    if args.action == "stop":
        if existing is None:
            print(f"no cluster state in {state}")
            return 0
        existing.stop(lock=False)
        print(f"stopped cluster {existing.name}")
        return 0
    running = existing is not None and existing.running()
    print(
        f"{'running' if running else 'not running'}"
        + (f": cluster {existing.name}, state in {state}" if existing else "")
    )
    return 0 if running else 3


if __name__ == "__main__":
    sys.exit(main())
