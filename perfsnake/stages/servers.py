"""Campaign-scoped servers (perfsnake.benchmarks.server): started before the
first run that needs one, stopped after the last, nothing left behind.

A server runs under the launcher, `psrun --dir results/<campaign>/servers/<key>`
(its output, status and launcher log there), so it has a cgroup of its own
and stopping it stops every process it started. It dies with the workflow:
psrun watches its parent (this Snakemake process) and the workflow's process
group (Ctrl-C, kill -PGID), and psrun's guardian clears the cgroup should
psrun itself be killed. psrun's death signal fires when the *thread* that
started it ends, so servers are started from one thread that lives as long
as the process (`_Spawner`), never from a job's worker thread.

The server's data and socket live in a private directory under /tmp with a
short fixed name per server (a Unix socket path has at most 107 bytes, and a
results path can be longer); it is removed when the server stops, and a
leftover of a killed workflow is removed before the next start.

Everything here runs in the run job's body, under the host's benchmark lock
and outside the timed interval.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout, safefile
from perfsnake.benchmarks.server import ServerTool
from perfsnake.instruments.hooks import stop_launched, wait_ready
from perfsnake.platforms import Local

if TYPE_CHECKING:
    from perfsnake.planning import CampaignIndex

#: how long a server may take to answer (mariadb-install-db and initdb take
#: seconds, more on a loaded machine)
READY_TIMEOUT_S = 120.0
#: seconds between SIGTERM and SIGKILL when a server is stopped
GRACE_S = 10.0
#: in a run directory: the server that served the run
SERVER_FILE = "server.json"


class _Spawner:
    """Starts processes from one long-lived thread (see the module's docstring)."""

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, name="perfsnake-servers", daemon=True).start()

    def _serve(self) -> None:
        while True:
            argv, kwargs, reply = self._requests.get()
            try:
                reply.put(subprocess.Popen(argv, **kwargs))
            except BaseException as exc:  # handed to the caller
                reply.put(exc)

    def popen(self, argv: list[str], **kwargs: object) -> subprocess.Popen:
        reply: queue.Queue = queue.Queue(1)
        self._requests.put((argv, kwargs, reply))
        got = reply.get()
        if isinstance(got, BaseException):
            raise got
        return got


_SPAWNER: _Spawner | None = None
_LOCK = threading.Lock()


def _spawn(argv: list[str], **kwargs: object) -> subprocess.Popen:
    global _SPAWNER
    with _LOCK:
        if _SPAWNER is None:
            _SPAWNER = _Spawner()
    return _SPAWNER.popen(argv, **kwargs)


def how_it_exited(status: Path) -> str:
    """How a launched command ended, as its launcher's status file says."""
    try:
        recorded = json.loads(status.read_text())
    except (OSError, ValueError):
        return "exited with status unknown"
    if recorded.get("signal"):
        return f"was killed by signal {recorded['signal']}"
    return f"exited with status {recorded.get('exit_code')}"


def private_dir(home: Path) -> Path:
    """A server's data and socket: short, fixed per server, private (0700)."""
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"perfsnake-server.{digest}"


@dataclass
class Server:
    """One campaign's server for one setting of its server variables."""

    campaign: str
    key: str
    bench: ServerTool
    params: dict[str, object]
    home: Path  # results/<campaign>/servers/<key>: psrun's directory
    launcher: Path
    #: the status files of every run this server may serve
    runs: list[str] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    started_at: float = 0.0
    served: int = 0

    @property
    def directory(self) -> Path:
        return private_dir(self.home)

    @property
    def label(self) -> str:
        return f"{self.campaign}: {self.bench.name} server {self.key}"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def lost(self) -> str | None:
        """After a failed run: why the server is gone (None: it still answers)."""
        if self.proc is None:
            return None
        deadline = time.monotonic() + 2
        while self.proc.poll() is None:
            if self._answers():
                return None
            if time.monotonic() > deadline:
                return f"the campaign's {self.bench.name} server stopped answering during the run"
            time.sleep(0.05)
        return f"the campaign's {self.bench.name} server {how_it_exited(self.home / 'status.json')} during the run"

    @functools.cached_property
    def _ready_argv(self) -> list[str]:
        return self.bench.ready_argv(self.params, str(self.directory))

    def _answers(self) -> bool:
        done = subprocess.run(self._ready_argv, cwd=self.home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              check=False)  # fmt: skip
        return done.returncode == 0

    def ensure(self) -> str | None:
        """Start the server unless it runs; None once it answers, else the problem."""
        if self.running():
            return None
        if self.proc is not None:
            say(f"{self.label} {how_it_exited(self.home / 'status.json')}; starting it again")
            self._clear()
            self._settle()
        return self._start()

    def _start(self) -> str | None:
        problem = self._fresh_directory()
        if problem:
            return problem
        safefile.fresh_dir(self.home)
        argv = [str(self.launcher), "--dir", str(self.home), "--grace", repr(GRACE_S), "--",
                *self.bench.serve_argv(self.params, str(self.directory))]  # fmt: skip
        started = time.monotonic()
        # psrun's own words (its teardown by SIGTERM included) go to a file.
        with os.fdopen(safefile.create(self.home / "launcher.log"), "w") as log:
            self.proc = _spawn(argv, cwd=self.home, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.started_at = time.time()
        self.served = 0
        problem = self._wait_ready()
        if problem:
            self.stop(quiet=True)
            return problem
        say(f"{self.label} ready in {time.monotonic() - started:.2f} s (pid {self.proc.pid}; log in {self.home})")
        return None

    def _settle(self) -> None:
        """A launcher killed outright leaves its guardian clearing the server's
        cgroup; a new server in the same place must not start before it is done."""
        with contextlib.suppress(OSError, ValueError, StopIteration):
            lines = (self.home / ".psrun.state").read_text().splitlines()
            guardian = Path("/proc", next(line.split()[1] for line in lines if line.startswith("guardian ")))
            deadline = time.monotonic() + 10
            while guardian.exists() and time.monotonic() < deadline:
                time.sleep(0.01)

    def _fresh_directory(self) -> str | None:
        path = self.directory
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        if info.st_uid != os.geteuid():
            return f"{path} exists and belongs to another user: remove it, or set TMPDIR"
        if path.is_symlink() or not path.is_dir():
            path.unlink()
        else:
            shutil.rmtree(path, ignore_errors=True)  # a killed workflow's leftover
        return None

    def _wait_ready(self) -> str | None:
        assert self.proc is not None
        outcome = wait_ready(self.proc, self._answers, READY_TIMEOUT_S, 0.01)
        if outcome == "exited":
            how = how_it_exited(self.home / "status.json")
            return f"the {self.bench.name} server {how} before it was ready: {self._log_line()}"
        if outcome == "timeout":
            return f"the {self.bench.name} server did not answer within {READY_TIMEOUT_S:g} s: {self._log_line()}"
        return None

    def _log_line(self) -> str:
        """The last line of its output that says something (see the log for all)."""
        for name in ("stderr.txt", "stdout.txt"):
            with contextlib.suppress(OSError):
                lines = [line.strip() for line in (self.home / name).read_text(errors="replace").splitlines()]
                said = [line for line in lines if line]
                if said:
                    return said[-1][:200]
        return f"no output (see {self.home})"

    def stop(self, quiet: bool = False) -> None:
        """SIGTERM to the launcher, which stops the whole server (SIGKILL after
        the grace period); then its directory goes."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            stop_launched(proc, self.home, GRACE_S)
            if not quiet:
                say(f"{self.label} stopped after {self.served} run{'s' if self.served != 1 else ''}")
        self._clear()

    def _clear(self) -> None:
        self.proc = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def watched(self) -> tuple[str, subprocess.Popen, Path]:
        """For the run's watcher: the server must stay up while the client runs."""
        assert self.proc is not None
        return (f"the campaign's {self.bench.name} server", self.proc, self.home / "status.json")

    def serve(self, run_dir: Path) -> None:
        """A run is about to use the server: its server.json says which one,
        and how many runs it served before (a warm server is part of the
        result)."""
        record = {"server": self.key, "scope": "campaign", "pid": self.proc.pid if self.proc else None,
                  "variables": {v: self.params.get(v) for v in self.bench.server_variables},
                  "started_epoch": self.started_at, "runs_before": self.served, "log": str(self.home)}  # fmt: skip
        self.served += 1
        safefile.write_text(run_dir / SERVER_FILE, json.dumps(record, indent=1, default=str) + "\n")


_SERVERS: dict[tuple[str, str], Server] = {}


def say(line: str) -> None:
    print(f"[perfsnake] {line}", file=sys.stderr, flush=True)


def for_run(index: CampaignIndex, campaign: str, record_path: str, workdir: Path) -> Server | None:
    """The campaign-scoped server a run needs, or None (no server, `server:
    run`, or a platform where the client does not run on this machine)."""
    c = index.campaigns[campaign]
    bench = c.benchmark
    if not isinstance(bench, ServerTool) or bench.scope() != "campaign" or not isinstance(c.platform, Local):
        return None
    params = bench.params(c.run_params(c.by_path[record_path]))
    key = bench.server_key(params)
    server = _SERVERS.get((campaign, key))
    if server is None:
        runs = [
            layout.here(layout.status_file(campaign, r.path, i), workdir).as_posix()
            for r in c.records
            if bench.server_key(c.run_params(r)) == key
            for i in range(1, c.max_runs + 1)
        ]
        server = Server(campaign, key, bench, params, layout.here(layout.server_dir(campaign, key), workdir),
                        workdir / c.platform.launcher, runs)  # fmt: skip
        _SERVERS[(campaign, key)] = server
    return server


def after_run(server: Server) -> None:
    """Stop the server once every run it may serve is done (with a precision
    loop that may add runs, it stays until the workflow ends). Runs found done
    are dropped from the list, so each is looked for until it is done only."""
    server.runs = [p for p in server.runs if not os.path.exists(p)]
    if not server.runs:
        server.stop()


def stop_all() -> None:
    """At the end of the workflow: every server still running stops."""
    for server in _SERVERS.values():
        if server.running():
            server.stop()
