"""One benchmark at a time per machine, whichever invocation or user runs it.

Snakemake's `bench_lock` resource serialises the runs of one Snakemake
process; this lock serialises every invocation on the host, of every user: an
exclusive flock(2) on one machine-wide file, taken before a run's pre-run
hooks and released after its post-run hooks. The launcher inherits the
descriptor, so a run whose workflow was killed keeps the lock until every one
of its processes is gone.

Where the lock lives: $PERFSNAKE_HOST_LOCK, else the `host_lock` config key,
else `perfsnake-bench.lock` in the first world-writable sticky directory of
/run/lock, /var/lock, /tmp (the places Debian and the FHS give every user for
lock files). `{host}` in a configured path becomes the host name: on a
cluster whose nodes share a filesystem, one lock per node.

The file is created readable and writable by all (mode 0666), so any user can
take it; flock needs only an open descriptor, so a file someone else created
with a narrower mode still works as long as this user may read it. It is
opened without O_CREAT first because fs.protected_regular refuses O_CREAT on
another user's file in a sticky directory.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import socket
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_ENV = "PERFSNAKE_HOST_LOCK"
LOCK_NAME = "perfsnake-bench.lock"
SHARED_DIRS = (Path("/run/lock"), Path("/var/lock"), Path("/tmp"))

_configured: str | None = None
_held = threading.local()


class LockError(OSError):
    """The benchmark lock cannot be opened by this user (the message says why and what to do)."""


def configure(path: str | None) -> None:
    """The workflow's `host_lock` config key (the environment variable wins)."""
    global _configured
    _configured = path


def _shared(directory: Path) -> bool:
    """A directory every user may create files in, and none may delete another's."""
    try:
        mode = directory.stat().st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) and mode & 0o1777 == 0o1777


def default_path() -> Path:
    directory = next((d for d in SHARED_DIRS if _shared(d)), SHARED_DIRS[-1])
    return directory / LOCK_NAME


def lock_path() -> Path:
    text = os.environ.get(LOCK_ENV) or _configured
    if text:
        return Path(os.path.expanduser(text.replace("{host}", socket.gethostname())))
    return default_path()


def _owner(path: Path) -> str:
    try:
        uid = path.stat().st_uid
        return pwd.getpwuid(uid).pw_name
    except (OSError, KeyError):
        return "another user"


def _open(path: Path) -> int:
    for _ in range(3):  # the file may be created or removed between two tries
        try:
            return _open_existing(path)
        except FileNotFoundError:
            pass
        if not path.parent.is_dir():
            # Only a configured path can lack its directory; the shared ones exist.
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        os.fchmod(fd, 0o666)  # the umask narrowed it: every user must be able to take it
        return fd
    raise LockError(errno.EAGAIN, f"the benchmark lock {path} keeps appearing and disappearing")


def problem() -> str | None:
    """Why this user could not take the lock, checked before anything runs (None: it can).
    Writes nothing: a missing file is only checked for a directory to create it in."""
    path = lock_path()
    try:
        os.close(_open_existing(path))
        return None
    except FileNotFoundError:
        pass
    except OSError as exc:
        return exc.strerror if isinstance(exc, LockError) else f"cannot open the benchmark lock {path}: {exc.strerror}"
    parent = next((p for p in path.parents if os.path.lexists(p)), Path("/"))
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return (
            f"cannot create the benchmark lock {path}: {parent} is not a directory this user may write (set host_lock)"
        )
    return None


def _open_existing(path: Path) -> int:
    """The lock file opened read-write, else read-only (flock needs no more)."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, os.O_RDWR | flags)
    except PermissionError:
        pass
    try:
        return os.open(path, os.O_RDONLY | flags)
    except PermissionError:
        raise LockError(
            errno.EACCES,
            f"the benchmark lock {path} belongs to {_owner(path)} and this user may not read it: "
            f"chmod 0666 {path} (as its owner or root), or set host_lock",
        ) from None


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it ("" if unknown)."""
    try:
        return os.pread(fd, 200, 0).decode(errors="replace").strip()
    except OSError:
        return ""


#: (euid, pid) -> the holder's line: a batch takes the lock once per run
_holder_text: dict[tuple[int, int], bytes] = {}


def _record_holder(fd: int) -> None:
    """Say who holds it, for the next user's waiting line (a read-only descriptor cannot).
    The file already saying so (this process's previous run of a batch) is left as it is:
    a truncate and a write on every run cost more than the flock."""
    key = (os.geteuid(), os.getpid())
    text = _holder_text.get(key)
    if text is None:
        try:
            text = f"{pwd.getpwuid(key[0]).pw_name} (pid {key[1]})\n".encode()
        except KeyError:
            text = f"uid {key[0]} (pid {key[1]})\n".encode()
        _holder_text[key] = text
    try:
        if os.pread(fd, len(text) + 1, 0) == text:
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, text, 0)
    except OSError:
        pass


#: beside the lock: who waits holds it, so a batch that gives the lock up
#: between runs and takes it again at once cannot starve a waiter (flock
#: wakes a waiter but hands it nothing: the releaser's next try wins)
TURNSTILE_SUFFIX = ".turnstile"


def _turnstile(path: Path) -> int | None:
    """The turnstile's descriptor; None when this user cannot open it (the
    lock alone still serialises the runs, without the fairness)."""
    try:
        return _open(path.with_name(path.name + TURNSTILE_SUFFIX))
    except OSError:
        return None


def _take(fd: int, turnstile: int | None, block: bool) -> bool:
    """The turnstile, then the lock (False: one of them is held, not blocking)."""
    flags = fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB)
    try:
        if turnstile is not None:
            fcntl.flock(turnstile, flags)  # held already: no change
        fcntl.flock(fd, flags)
        return True
    except BlockingIOError:
        return False


@contextmanager
def host_lock(path: Path | None = None) -> Iterator[int]:
    """Hold the host's benchmark lock (or the one at `path`); says so in one
    line when it must wait. Waiters are served before a holder that comes
    back (the turnstile)."""
    path = path or lock_path()
    fd = _open(path)
    try:
        turnstile = _turnstile(path)
        try:
            if not _take(fd, turnstile, block=False):
                holder = _holder(fd)
                who = f" ({holder})" if holder else ""
                print(
                    f"[perfsnake] waiting for {path}: another benchmark{who} runs on this machine",
                    file=sys.stderr,
                    flush=True,
                )
                _take(fd, turnstile, block=True)
        finally:
            if turnstile is not None:
                os.close(turnstile)  # through: the next waiter may queue
        _record_holder(fd)
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
