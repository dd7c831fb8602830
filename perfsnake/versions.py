"""Commit ranges as the values of a variable (`version: {git: REPO, range: A..B}`).

The range is read when the campaign loads: A itself, then the commits after
it on B's first-parent line, oldest first (the order plots and comparisons of
adjacent versions follow). `every: N` keeps every N-th commit, and always the
last. A remote repository is cloned once, bare, under resources/git/ and
fetched again only when the range names a commit it does not have.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping
from pathlib import Path

from perfsnake import layout
from perfsnake.errors import CampaignError

#: length of the commit ids used as values (unique in any repository of sane size)
SHORT = 12


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError((proc.stderr.strip().splitlines() or ["git failed"])[-1])
    return proc.stdout


def local_repository(url: str) -> Path:
    """The repository to read: the directory itself, or a cached bare clone of a URL."""
    path = Path(url).expanduser()
    if path.is_dir():
        return path
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    cache = layout.here(layout.git_cache(digest))
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["git", "clone", "--quiet", "--bare", url, str(cache)], capture_output=True, text=True,
                              check=False, timeout=1800)  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError((proc.stderr.strip().splitlines() or ["git clone failed"])[-1])
    return cache


def commit_range(spec: Mapping[str, object], origin: str, key: str) -> list[str]:
    """The commits of `spec` (git, range, every) as short ids, oldest first."""
    text = str(spec["range"])
    start, sep, end = text.partition("..")
    if not sep or not start or not end or end.startswith("."):
        raise CampaignError(origin, f"{key}.range", f"{text!r} is not a range A..B")
    every = int(spec.get("every", 1))  # type: ignore[call-overload]
    try:
        repo = local_repository(str(spec["git"]))
        try:
            base = _git(repo, "rev-parse", "--verify", "--quiet", f"{start}^{{commit}}").strip()
            later = _git(repo, "rev-list", "--first-parent", "--reverse", f"{start}..{end}").split()
        except RuntimeError:
            if repo == Path(str(spec["git"])).expanduser():
                raise
            _git(repo, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
            base = _git(repo, "rev-parse", "--verify", "--quiet", f"{start}^{{commit}}").strip()
            later = _git(repo, "rev-list", "--first-parent", "--reverse", f"{start}..{end}").split()
    except RuntimeError as exc:
        raise CampaignError(origin, key, f"cannot read the range {text!r} of {spec['git']}: {exc}") from None
    commits = [base, *later]
    if not later:
        raise CampaignError(origin, f"{key}.range", f"{text!r} holds no commit after {start}")
    kept = [c for i, c in enumerate(commits) if i % every == 0]
    if kept[-1] != commits[-1]:
        kept.append(commits[-1])
    return [c[:SHORT] for c in kept]


def resolve(spec: Mapping[str, object], ref: object) -> str:
    """A ref of the range's repository (tag, branch, commit) as the value the
    range gives its commit; the ref itself when git does not know it."""
    text = str(ref)
    try:
        commit = _git(local_repository(str(spec["git"])), "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}")
    except RuntimeError:
        return text
    return commit.strip()[:SHORT] or text


def subjects(spec: Mapping[str, object], commits: list[str]) -> dict[str, str]:
    """commit -> its subject line (for bisect.md and labels)."""
    repo = local_repository(str(spec["git"]))
    out = {}
    for commit in commits:
        try:
            out[commit] = _git(repo, "log", "-1", "--format=%s", commit).strip()
        except RuntimeError:
            out[commit] = ""
    return out
