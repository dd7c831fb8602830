"""Writing inside run directories without ever following a link.

A benchmark runs in its run directory and may leave anything there,
symbolic links included. Files written there afterwards are created fresh
(mkstemp: O_CREAT|O_EXCL, a unique name, in the same directory) and renamed
over their final name, which replaces a planted link instead of writing
through it.
"""

from __future__ import annotations

import os
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
