"""Writing inside run directories without ever following a link.

A benchmark runs in its run directory and may leave anything there,
symbolic links included. Files written there afterwards are created fresh
(mkstemp: O_CREAT|O_EXCL, a unique name, in the same directory) and renamed
over their final name, which replaces a planted link instead of writing
through it.
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from pathlib import Path


def write_text(path: Path, text: str, mode: int = 0o644) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def create(path: Path) -> int:
    """A new, empty file at `path` for writing; whatever was there (a link) is removed first."""
    path.unlink(missing_ok=True)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)


def fresh_dir(path: Path) -> None:
    """A directory at `path` that is not a link (a planted link is removed)."""
    if path.is_symlink():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)


class UnsafeArchive(ValueError):
    """An archive member that would land outside the directory it is extracted into."""


def _check_member(member: tarfile.TarInfo, dest: Path) -> None:
    """What tarfile's "data" filter refuses, for Pythons before 3.11.4 (Debian 12's 3.11.2)."""
    name = Path(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise UnsafeArchive(f"archive member {member.name!r} leaves {dest}")
    if member.isdev() or member.isfifo():
        raise UnsafeArchive(f"archive member {member.name!r} is a device or fifo")
    if member.issym() or member.islnk():
        target = Path(member.linkname)
        # A symbolic link resolves from its own directory, a hard link from the archive's root.
        base = (dest / name).parent if member.issym() else dest
        resolved = os.path.normpath(base / target)
        if target.is_absolute() or not (resolved == str(dest) or resolved.startswith(str(dest) + os.sep)):
            raise UnsafeArchive(f"archive member {member.name!r} links outside {dest}: {member.linkname!r}")


def extract_tar(tar: tarfile.TarFile, dest: Path) -> None:
    """Extract every member into `dest`, refusing members that would escape it.

    Python 3.11.4 added the "data" filter; Debian 12's python3 (3.11.2) lacks
    it, and a normal user's environment may well be built on that one.
    """
    if hasattr(tarfile, "data_filter"):
        try:
            tar.extractall(dest, filter="data")
        except tarfile.FilterError as e:
            raise UnsafeArchive(str(e)) from None
        return
    dest = Path(os.path.abspath(dest))
    members = tar.getmembers()
    for member in members:
        _check_member(member, dest)
    for member in members:
        # No set-id bits, no group or other write, the owner may read and write
        # (and enter directories), as the data filter does: an archive's
        # directory mode of 0644 would otherwise lock a normal user out.
        member.mode = 0o755 if member.isdir() else (member.mode & 0o755) | 0o600
        member.uid = member.gid = os.getuid()
    tar.extractall(dest, members=members, numeric_owner=True)
