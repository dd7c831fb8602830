"""Normal users for the tests, made the way a researcher's account is: created
by the test session (root only) with a home of their own, a copy of the
checkout as a clone holds it, and their Python environment made by running
the README's `make setup` as themselves there (the Debian packages already
present). Nothing of a test user outlives its test session: the session's
controller removes its users, homes included (their results stores, venvs
and campaigns), and any left by a session that died."""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers import ROOT

#: The test session's own directory (made by tests/conftest.py in the
#: controller, shared with its workers).
SESSION_ENV = "PERFSNAKE_TEST_LOCK_DIR"
#: One line per test session that made users: its controller's pid (a dead
#: pid's users are leftovers, removed by the next session).
REGISTRY = Path("/var/tmp/perfsnake-test-sessions")
#: Test users are named `perfsnake-<role>-<session tag>`, so that two test
#: sessions side by side (make test beside make long) never share a user.
USER_PATTERN = re.compile(r"^perfsnake-(alice|bob)-([0-9a-f]{6})$")
#: A clone's files when the checkout is not a git work tree.
COPY_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "results", ".snakemake", "__pycache__", "report.html", "resources", "*.egg-info"
)


def is_root() -> bool:
    return os.geteuid() == 0


def _session_dir() -> Path:
    path = Path(os.environ[SESSION_ENV])
    path.mkdir(parents=True, exist_ok=True)
    return path


def session_tag() -> str:
    """Six hex digits naming this test session's users (the controller's pid)."""
    return f"{int(os.environ['PERFSNAKE_TEST_SESSION_PID']) & 0xFFFFFF:06x}"


def name(role: str) -> str:
    """This session's user for `role` ("alice" or "bob"; a user's name is itself)."""
    return role if role.startswith("perfsnake-") else f"perfsnake-{role}-{session_tag()}"


@contextmanager
def _locked(what: str) -> Iterator[None]:
    """`what` made by one worker of the session at a time."""
    fd = os.open(_session_dir() / f"{what}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure_user(role: str) -> pwd.struct_passwd:
    """This session's normal user for `role` (no sudo, no extra groups), with a home directory."""
    user = name(role)
    if not USER_PATTERN.match(user):
        raise ValueError(f"{user}: not a test user of this session")
    with _locked(f"user-{user}"):
        try:
            return pwd.getpwnam(user)
        except KeyError:
            pass
        _register()
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", user], check=True)
        return pwd.getpwnam(user)


def _register() -> None:
    REGISTRY.mkdir(parents=True, exist_ok=True)
    REGISTRY.chmod(0o700)
    (REGISTRY / session_tag()).write_text(os.environ["PERFSNAKE_TEST_SESSION_PID"] + "\n")


def _remove_user(user: str) -> None:
    subprocess.run(["pkill", "-KILL", "-u", user], check=False, capture_output=True)
    subprocess.run(["userdel", "--remove", "--force", user], check=False, capture_output=True)


def remove_users(only_dead: bool) -> list[str]:
    """Remove this session's test users (only_dead: those of sessions whose
    controller is gone, whatever their tag), homes and all; the names removed."""
    removed = []
    mine = session_tag()
    for entry in pwd.getpwall():
        match = USER_PATTERN.match(entry.pw_name)
        if not match:
            continue
        tag = match.group(2)
        if only_dead:
            if tag == mine or _alive(tag):
                continue
        elif tag != mine:
            continue
        _remove_user(entry.pw_name)
        removed.append(entry.pw_name)
    for entry in REGISTRY.glob("*") if REGISTRY.is_dir() else ():
        if (entry.name == mine and not only_dead) or (only_dead and entry.name != mine and not _alive(entry.name)):
            entry.unlink(missing_ok=True)
    return removed


def _alive(tag: str) -> bool:
    record = REGISTRY / tag
    try:
        pid = int(record.read_text())
    except (OSError, ValueError):
        return False
    return Path(f"/proc/{pid}").exists()


def base_python() -> str:
    """A Python 3.11 interpreter every user may execute (pyenv's lives under /root here)."""
    for candidate in ("/usr/bin/python3.11", sys._base_executable, "/usr/bin/python3"):
        if candidate and os.access(candidate, os.X_OK) and _world_readable_path(Path(candidate)):
            return candidate
    raise RuntimeError("no Python 3.11 that every user may run (Debian: apt-get install python3)")


def _world_readable_path(path: Path) -> bool:
    """Every directory above `path` is searchable by others (and the file readable)."""
    path = path.resolve()
    for part in [*path.parents, path]:
        mode = part.stat().st_mode
        need = 0o004 if part == path else 0o001
        if not mode & need:
            return False
    return True


def _clone_files() -> list[str] | None:
    """The files a clone of this checkout holds (tracked, and new ones not
    ignored), or None when it is not a git work tree."""
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        return None
    return [f for f in proc.stdout.decode().split("\0") if f and (ROOT / f).exists()]


def copy_checkout(dest: Path) -> Path:
    """`dest` holding what a fresh clone of this checkout holds: no venv,
    results, built tools or Snakemake state of root's."""
    shutil.rmtree(dest, ignore_errors=True)
    files = _clone_files()
    if files is None:
        shutil.copytree(ROOT, dest, ignore=COPY_IGNORE, symlinks=True)
        return dest
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target, follow_symlinks=False)
    return dest


def checkout_for(role: str, copy: str = "perfsnake") -> Path:
    """The user's checkout: `~/perfsnake` is the one `make setup` ran in
    (user_python); another name is a fresh copy beside it."""
    user = name(role)
    if copy == "perfsnake":
        return user_python(role).parent.parent.parent
    dest = Path(pwd.getpwnam(user).pw_dir) / copy
    copy_checkout(dest)
    subprocess.run(["chown", "-R", f"{user}:{user}", str(dest)], check=True)
    return dest


#: Per process: the environment being made for a user (two workers of the
#: session wait for each other through _locked).
_made: dict[str, Path] = {}
_made_lock = threading.Lock()


def user_python(role: str = "alice") -> Path:
    """The Python of the user's own environment: their copy of the checkout
    in their home, where `make setup` ran as them (what the README asks of a
    new user). Made once per test session; the first call takes about a
    minute (pip installs requirements.txt from PyPI into ~/perfsnake/.venv)."""
    user = name(role)
    home = Path(pwd.getpwnam(user).pw_dir)
    python = home / "perfsnake" / ".venv" / "bin" / "python"
    with _made_lock:
        if user in _made:
            return _made[user]
        with _locked(f"setup-{user}"):
            done = _session_dir() / f"setup-{user}.done"
            if not done.exists():
                checkout = copy_checkout(home / "perfsnake")
                subprocess.run(["chown", "-R", f"{user}:{user}", str(checkout)], check=True)
                proc = run_as(role, ["make", "setup"], cwd=checkout, timeout=1800)
                if proc.returncode != 0 or not python.exists():
                    raise RuntimeError(
                        f"make setup as {user} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
                    )
                done.write_text("")
        _made[user] = python
        return python


def environment(role: str, extra_env: dict[str, str] | None = None) -> dict[str, str]:
    """What a login of the user gives: a clean environment."""
    user = name(role)
    home = pwd.getpwnam(user).pw_dir
    return {
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        **(extra_env or {}),
    }


def command(role: str, argv: list[str], extra_env: dict[str, str] | None = None) -> list[str]:
    """`argv` as the user, with a clean environment (what a login would give)."""
    env = environment(role, extra_env)
    return ["runuser", "-u", env["USER"], "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]


def run_as(
    role: str,
    argv: list[str],
    cwd: Path,
    extra_env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(role, argv, extra_env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def snakemake_argv(python: Path, campaign: Path, *args: str) -> list[str]:
    """The README's invocation, with the profile the checkout carries; `--config` goes last."""
    return [
        str(python),
        "-m",
        "snakemake",
        "--cores",
        "1",
        "all",
        "--quiet",
        "host",
        *args,
        "--config",
        f"campaign={campaign}",
    ]


def give(role: str, path: Path) -> Path:
    user = name(role)
    subprocess.run(["chown", "-R", f"{user}:{user}", str(path)], check=True)
    return path
