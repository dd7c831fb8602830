"""Fetching benchmark sources into the cache, atomically.

Everything is fetched into a hidden temporary directory next to the
destination and renamed into place only when complete, so an interrupted
fetch never leaves a cache entry that looks finished.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path
from typing import TextIO

from perfsnake import safefile


class FetchError(RuntimeError):
    pass


def _run(argv: list[str], cwd: Path, log: TextIO) -> None:
    log.write("$ " + " ".join(argv) + "\n")
    log.flush()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    log.write(proc.stdout)
    if proc.returncode != 0:
        raise FetchError(f"{argv[0]} exited with {proc.returncode} (see the fetch log)")


def _single_child(directory: Path) -> Path:
    """The extracted tree: the only sub-directory when there is exactly one."""
    entries = [e for e in directory.iterdir() if not e.name.startswith(".")]
    dirs = [e for e in entries if e.is_dir()]
    if len(entries) == 1 and dirs:
        return dirs[0]
    return directory


def fetch_debian(spec: dict[str, str], work: Path, log: TextIO) -> Path:
    package = spec["debian"]
    target = f"{package}={spec['version']}" if spec.get("version") else package
    try:
        _run(["apt-get", "source", "--only-source", target], work, log)
    except FetchError:
        raise FetchError(
            f"apt-get source {target} failed: is a deb-src entry configured? (`make setup` adds one)"
        ) from None
    dirs = [d for d in work.iterdir() if d.is_dir()]
    if len(dirs) != 1:
        raise FetchError(f"apt-get source {target} produced {len(dirs)} directories, expected 1")
    return dirs[0]


def fetch_git(spec: dict[str, str], work: Path, log: TextIO) -> Path:
    dest = work / "src"
    # A local repository named relative to the working directory, not to `work`.
    url = str(Path(spec["git"]).absolute()) if Path(spec["git"]).is_dir() else spec["git"]
    _run(["git", "clone", "--quiet", url, str(dest)], work, log)
    _run(["git", "-c", "advice.detachedHead=false", "checkout", "--quiet", spec["rev"]], dest, log)
    return dest


def fetch_archive(spec: dict[str, str], work: Path, log: TextIO) -> Path:
    url = spec["archive"]
    name = Path(url.split("?")[0]).name or "archive"
    archive = work / name
    log.write(f"downloading {url}\n")
    if "://" in url:
        with urllib.request.urlopen(url, timeout=60) as response, archive.open("wb") as sink:  # noqa: S310
            shutil.copyfileobj(response, sink)
    else:
        shutil.copyfile(url, archive)
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != spec["sha256"]:
        raise FetchError(f"sha256 mismatch for {url}: expected {spec['sha256']}, got {digest}")
    out = work / "extract"
    out.mkdir()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if Path(member).is_absolute() or ".." in Path(member).parts:
                    raise FetchError(f"archive member {member!r} escapes the extraction directory")
            zf.extractall(out)
    else:
        with tarfile.open(archive) as tar:
            try:
                safefile.extract_tar(tar, out)
            except safefile.UnsafeArchive as e:
                raise FetchError(f"{url}: an archive member escapes the extraction directory: {e}") from None
    return _single_child(out)


def fetch_path(spec: dict[str, str], work: Path, log: TextIO) -> Path:
    source = Path(spec["path"]).expanduser()
    if not source.is_dir():
        raise FetchError(f"local source {source} is not a directory")
    dest = work / "src"
    log.write(f"copying {source}\n")
    shutil.copytree(source, dest, symlinks=True)
    return dest


def fetch(spec: dict[str, str], dest: Path, log: TextIO) -> None:
    """Fetch `spec` into `dest`, which appears only once complete."""
    # Absolute: the fetchers run tools in sub-directories of the work directory.
    dest = Path(dest).absolute()
    dest.parent.mkdir(parents=True, exist_ok=True)
    for stale in dest.parent.glob(f".tmp-{dest.name}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".tmp-{dest.name}-", dir=dest.parent))
    try:
        if "debian" in spec:
            tree = fetch_debian(spec, work, log)
        elif "git" in spec:
            tree = fetch_git(spec, work, log)
        elif "archive" in spec:
            tree = fetch_archive(spec, work, log)
        else:
            tree = fetch_path(spec, work, log)
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(tree, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
