"""This machine: the launcher runs as a child of the workflow."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfsnake import layout
from perfsnake.errors import CampaignError
from perfsnake.hostlock import held_fd, launcher_args
from perfsnake.platforms.base import COMMAND_FILE, PlatformError, command_output


@dataclass(frozen=True)
class Local:
    """This machine: the launcher runs as a child of the workflow. In a fleet
    of Slurm nodes (`hosts:` with this platform), one node's: its jobs are
    placed there (`slurm_extra`) and run as they would on this machine."""

    kind: str = "local"
    launcher: str = layout.tool("psrun")
    node: str | None = None
    #: status.json fsynced by the launcher; a batch's runs leave it to the
    #: batch, which syncs the file system once before its marker
    durable_status: bool = True

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], origin: str, key: str, variables: Sequence[str]) -> Local:
        """`type: local` takes no options (`node` is a fleet's Slurm node, from Campaign.platform_spec)."""
        node = spec.get("node")
        return cls(node=None if node is None else str(node))

    def build_tag(self) -> str:
        # A node's builds are its own (a fleet may mix architectures).
        return f"slurm-{self.node}~" if self.node else ""

    def fingerprint(self) -> dict[str, object] | None:
        return {"type": "slurm", "node": self.node} if self.node else None

    def placement(self) -> str:
        """sbatch options that place a job on the node ("" for this machine)."""
        return f"--nodelist={self.node}" if self.node else ""

    def _check_node(self) -> None:
        """A node's job that Slurm did not place there must not measure
        (its results would be filed under the wrong host)."""
        here = os.environ.get("SLURMD_NODENAME")
        if self.node and here != self.node:
            raise PlatformError(
                f"this job belongs on Slurm node {self.node} but executes on {here or 'a machine outside Slurm'}"
            )

    def check(self, instruments: object, origin: str) -> None:
        return None

    def check_here(
        self, benchmark: object, instruments: object, records: Sequence[Mapping[str, object]], origin: str
    ) -> None:
        return None  # the instruments checked this machine themselves

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        self._check_node()
        cmd_file = run_dir / COMMAND_FILE
        servers = getattr(_serving, "servers", None)
        if servers is not None and not self.durable_status:
            # A batch's run: one psrun serves them all (see LaunchServer).
            launcher = str(workdir / self.launcher)
            if launcher not in servers:
                servers[launcher] = LaunchServer([launcher, "--serve", "--no-fsync"])
            return servers[launcher].run(run_dir, timeout_s, [str(cmd_file)])
        lock_args, lock_fds = launcher_args()  # psrun holds the host lock too
        argv = [*self.launcher_argv(workdir, run_dir, timeout_s), *lock_args, "--", str(cmd_file)]
        return subprocess.run(argv, pass_fds=lock_fds, check=False).returncode

    def launcher_argv(self, workdir: Path, run_dir: Path, timeout_s: float | None) -> list[str]:
        """psrun and its options for one run (without the lock and the command)."""
        argv = [str(workdir / self.launcher), "--dir", str(run_dir)]
        if timeout_s:
            argv += ["--timeout", repr(float(timeout_s))]
        if not self.durable_status:
            argv.append("--no-fsync")
        return argv

    def build(self, script_file: Path, build_dir: Path, log_file: Path, inputs: list[Path]) -> int:
        self._check_node()
        with log_file.open("w") as log:
            return subprocess.run(
                ["bash", str(script_file)], cwd=build_dir, stdout=log, stderr=subprocess.STDOUT, check=False
            ).returncode

    def local_inputs(self) -> list[str]:
        """What a run needs built here: the launcher."""
        return [self.launcher]

    def own_lock(self, workdir: Path) -> bool:
        return False  # the run is this machine's


_serving = threading.local()
#: a serving psrun's answer once a run is recorded: status.json's "status"
ENDED = (b"ok", b"failed", b"timeout")


def ended_as() -> str | None:
    """How this thread's last run through a serving psrun ended, as psrun
    recorded it (status.json's "status"), once: None after that, or when the
    run did not go through one."""
    ended = getattr(_serving, "ended", None)
    _serving.ended = None
    return ended


class LaunchServer:
    """One `psrun --serve` for a batch's runs: psrun's own start, its
    sentinel and its guardian are paid once per batch instead of once per run
    (each run still gets its own cgroup, status.json and sweep). Requests go
    over a SOCK_SEQPACKET socket, the host lock's descriptor attached to each.
    A psrun that ended (an aborted run, a setup error) is started again for
    the next run."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.proc = subprocess.Popen(self.argv, stdin=theirs.fileno())
        self.sock = ours

    def _ended(self) -> int:
        """psrun's exit status, once it is gone (its socket closed)."""
        assert self.proc is not None and self.sock is not None
        self.sock.close()
        code = self.proc.wait()
        self.proc = self.sock = None
        return code

    def run(self, run_dir: Path, timeout_s: float | None, argv: list[str]) -> int:
        """One run; 0 once recorded (how it ended: ended_as()), else what the
        single launcher would exit with."""
        if self.proc is not None and self.proc.poll() is not None:
            self._ended()
        if self.proc is None:
            self._start()
        assert self.sock is not None
        fields = [repr(float(timeout_s)) if timeout_s else "-", str(run_dir), *argv]
        lock = held_fd()
        try:
            socket.send_fds(self.sock, [b"\0".join(os.fsencode(f) for f in fields) + b"\0"],
                            [lock] if lock is not None else [])  # fmt: skip
            reply = self.sock.recv(16)
        except OSError:
            reply = b""
        if reply in ENDED:
            _serving.ended = reply.decode()
            return 0
        return int(reply) if reply else self._ended()

    def close(self) -> None:
        if self.proc is not None:
            self._ended()


@contextlib.contextmanager
def serving() -> Iterator[None]:
    """Within it, this thread's batched local runs share one psrun (see LaunchServer)."""
    if getattr(_serving, "servers", None) is not None:
        yield
        return
    servers: dict[str, LaunchServer] = {}
    _serving.servers = servers
    try:
        yield
    finally:
        _serving.servers = None
        for server in servers.values():
            server.close()


def check_slurm_nodes(origin: str, nodes: Sequence[str], executor: str | None) -> list[str]:
    """Before anything runs: a fleet's Slurm nodes (`hosts:` without ssh)
    need Slurm's executor and must be nodes of the cluster (a CampaignError
    otherwise). Returns one warning per node that is not up: its jobs wait in
    Slurm's queue, while the other hosts go on."""
    if not (executor or "").startswith("slurm"):
        raise CampaignError(
            origin,
            "hosts",
            f"{', '.join(nodes)} are Slurm nodes (a fleet without platform ssh), but the workflow runs here: "
            "run it with --profile profiles/slurm --workflow-profile none, or set platform.type: ssh and platform.hosts",
        )
    listed = command_output(["sinfo", "--noheader", "--Node", "--format=%N %t"])
    if listed is None:
        raise CampaignError(
            origin, "hosts", "sinfo failed: cannot check that the hosts are nodes of this Slurm cluster"
        )
    states: dict[str, str] = {}
    for line in listed.splitlines():
        name, _, state = line.partition(" ")
        states.setdefault(name, state.strip())  # a node in several partitions is listed once each
    for i, node in enumerate(nodes):
        if node not in states:
            raise CampaignError(
                origin, f"hosts[{i}]", f"{node!r} is not a node of this Slurm cluster (sinfo lists {', '.join(states)})"
            )
    # sinfo's short states: down, drained or draining, failing, not responding (*), ...
    unusable = ("down", "drain", "drng", "fail", "maint", "unk", "futr", "npc", "inval")
    return [
        f"{origin}: hosts: Slurm node {node} is {states[node]}: its builds and runs wait in Slurm's queue "
        f"(the other hosts go on; `scontrol show node {node}` says why)"
        for node in nodes
        if states[node].rstrip("*~#!%$@^-").startswith(unusable) or states[node].endswith("*")
    ]
