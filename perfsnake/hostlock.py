"""One benchmark at a time per machine, whichever invocation runs it.

Snakemake's `bench_lock` resource serialises the runs of one Snakemake
process; this lock serialises every invocation on the host: an exclusive
flock(2) on a host-wide file, taken before a run's pre-run hooks and released
after its post-run hooks. The launcher inherits the descriptor, so a run whose
workflow was killed keeps the lock until every one of its processes is gone.

Where the lock lives: $PERFSNAKE_HOST_LOCK, else the `host_lock` config key,
else /run/perfsnake/bench.lock (root), $XDG_RUNTIME_DIR/perfsnake/bench.lock,
or /tmp/perfsnake-<uid>/bench.lock. `{host}` in a configured path becomes the
host name: on a cluster whose nodes share a filesystem, one lock per node.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_ENV = "PERFSNAKE_HOST_LOCK"
LOCK_NAME = "bench.lock"

_configured: str | None = None
_held = threading.local()


def configure(path: str | None) -> None:
    """The workflow's `host_lock` config key (the environment variable wins)."""
    global _configured
    _configured = path


def default_dir() -> Path:
    if os.geteuid() == 0:
        return Path("/run/perfsnake")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "perfsnake"
    return Path(f"/tmp/perfsnake-{os.getuid()}")


def lock_path() -> Path:
    text = os.environ.get(LOCK_ENV) or _configured
    if text:
        return Path(os.path.expanduser(text.replace("{host}", socket.gethostname())))
    return default_dir() / LOCK_NAME


def _open(path: Path) -> int:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    if os.fstat(fd).st_uid != os.geteuid() and os.geteuid() != 0 and path.parent.parts[:2] == ("/", "tmp"):
        os.close(fd)
        raise PermissionError(f"{path} belongs to another user")
    return fd


@contextmanager
def host_lock() -> Iterator[int]:
    """Hold the host's benchmark lock; says so in one line when it must wait."""
    path = lock_path()
    fd = _open(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                f"[perfsnake] waiting for {path}: another benchmark runs on this machine", file=sys.stderr, flush=True
            )
            fcntl.flock(fd, fcntl.LOCK_EX)
        _held.fd = fd
        yield fd
    finally:
        _held.fd = None
        os.close(fd)


def held_fd() -> int | None:
    """The lock descriptor this thread holds (for launchers to inherit), if any."""
    return getattr(_held, "fd", None)


def launcher_args() -> tuple[list[str], tuple[int, ...]]:
    """psrun arguments and descriptors to pass so that it holds the lock too."""
    fd = held_fd()
    if fd is None:
        return [], ()
    return ["--lock-fd", str(fd)], (fd,)
