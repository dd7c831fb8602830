"""Unprivileged users for the tests: created by the test session (root only),
each with its own HOME and a writable copy of the checkout, and a Python
environment any user may run (the suite's own may sit under /root)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from helpers import ROOT

#: Shared by every test session of this machine: made once, then reused.
SHARED = Path("/var/tmp/perfsnake-test-users")
COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "results", ".snakemake", "__pycache__", "report.html")


def is_root() -> bool:
    return os.geteuid() == 0


def ensure_user(name: str) -> pwd.struct_passwd:
    """A normal user (no sudo, no extra groups) with a home directory."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True)
        return pwd.getpwnam(name)


def _base_python() -> str:
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


def user_python() -> Path:
    """A virtual environment of Debian's Python that sees the suite's
    packages: through a .pth file when the suite's site-packages are readable
    by others, else through a copy of them."""
    site = Path(sysconfig.get_paths()["purelib"])
    venv = SHARED / "venv"
    python = venv / "bin" / "python"
    marker = venv / "perfsnake-from"
    if python.exists() and marker.exists() and marker.read_text() == str(site):
        return python
    shutil.rmtree(venv, ignore_errors=True)
    SHARED.mkdir(parents=True, exist_ok=True)
    SHARED.chmod(0o755)
    subprocess.run([_base_python(), "-m", "venv", "--without-pip", str(venv)], check=True)
    target = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    if not _world_readable_path(site / "snakemake" / "__init__.py"):
        copy = SHARED / "site-packages"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(site, copy, symlinks=True)
        site_for_users = copy
    else:
        site_for_users = site
    # addsitedir, not a bare path: the .pth files there (our scheduler plugin) count too.
    (target / "perfsnake-suite.pth").write_text(f"import site; site.addsitedir({str(site_for_users)!r})\n")
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    marker.write_text(str(site))
    return python


def checkout_for(user: str, name: str = "perfsnake") -> Path:
    """A fresh writable copy of this checkout in the user's home (tools built
    by the workflow, results and Snakemake's state are the user's own)."""
    home = Path(pwd.getpwnam(user).pw_dir)
    dest = home / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ROOT, dest, ignore=COPY_IGNORE, symlinks=True)
    subprocess.run(["chown", "-R", f"{user}:{user}", str(dest)], check=True)
    return dest


def command(user: str, argv: list[str], extra_env: dict[str, str] | None = None) -> list[str]:
    """`argv` as `user`, with a clean environment (what a login would give)."""
    home = pwd.getpwnam(user).pw_dir
    env = {
        "HOME": home,
        "USER": user,
        "LOGNAME": user,
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        **(extra_env or {}),
    }
    return ["runuser", "-u", user, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]


def run_as(
    user: str,
    argv: list[str],
    cwd: Path,
    extra_env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    return subprocess.run(
        command(user, argv, extra_env), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
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


def give(user: str, path: Path) -> Path:
    subprocess.run(["chown", "-R", f"{user}:{user}", str(path)], check=True)
    return path
