"""Fetching sources: local path, archive + sha256, git + revision; atomicity."""

import hashlib
import io
import subprocess
import tarfile

import pytest

from perfsnake.benchmarks.base import source_key
from perfsnake.stages import fetch as fetch_mod
from perfsnake.stages.fetch import FetchError, fetch


def make_tree(root):
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("A")
    (root / "sub" / "b.txt").write_text("B")
    return root


def test_local_path(tmp_path):
    src = make_tree(tmp_path / "src")
    dest = tmp_path / "cache" / "x"
    fetch({"path": str(src)}, dest, io.StringIO())
    assert (dest / "sub" / "b.txt").read_text() == "B"
    assert [p.name for p in dest.parent.iterdir()] == ["x"]


def make_archive(tmp_path):
    tree = make_tree(tmp_path / "proj-1.0")
    archive = tmp_path / "proj-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname="proj-1.0")
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


@pytest.mark.parametrize("as_url", [False, True])
def test_archive_with_checksum(tmp_path, as_url):
    archive, digest = make_archive(tmp_path)
    dest = tmp_path / "cache" / "p"
    location = archive.as_uri() if as_url else str(archive)
    fetch({"archive": location, "sha256": digest}, dest, io.StringIO())
    assert (dest / "a.txt").read_text() == "A"  # the single top directory is unwrapped


def test_checksum_mismatch_leaves_nothing(tmp_path):
    archive, _digest = make_archive(tmp_path)
    dest = tmp_path / "cache" / "p"
    with pytest.raises(FetchError, match="sha256 mismatch"):
        fetch({"archive": str(archive), "sha256": "0" * 64}, dest, io.StringIO())
    assert not dest.exists()
    assert list((tmp_path / "cache").iterdir()) == []


def test_archive_escaping_members_are_refused(tmp_path):
    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        info = tarfile.TarInfo("../outside.txt")
        data = b"x"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    digest = hashlib.sha256(evil.read_bytes()).hexdigest()
    with pytest.raises(FetchError, match="escapes"):
        fetch({"archive": str(evil), "sha256": digest}, tmp_path / "cache" / "e", io.StringIO())
    assert not (tmp_path / "cache" / "outside.txt").exists() and not (tmp_path / "outside.txt").exists()


def git(repo, *args):
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True
    )


def test_git_revision(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "v.txt").write_text("1")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "one")
    git(repo, "tag", "v1")
    (repo / "v.txt").write_text("2")
    git(repo, "commit", "-qam", "two")
    dest = tmp_path / "cache" / "g"
    fetch({"git": str(repo), "rev": "v1"}, dest, io.StringIO())
    assert (dest / "v.txt").read_text() == "1"


def test_interrupted_fetch_never_looks_complete(tmp_path, monkeypatch):
    src = make_tree(tmp_path / "src")
    dest = tmp_path / "cache" / "x"

    def half_copy(spec, work, log):
        (work / "src").mkdir()
        (work / "src" / "a.txt").write_text("partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(fetch_mod, "fetch_path", half_copy)
    with pytest.raises(KeyboardInterrupt):
        fetch({"path": str(src)}, dest, io.StringIO())
    assert not dest.exists()
    assert list((tmp_path / "cache").iterdir()) == []


def test_source_keys_are_distinct_and_safe():
    keys = [
        source_key({"debian": "leveldb", "version": "1.23-4"}),
        source_key({"debian": "leveldb"}),
        source_key({"git": "https://example.org/a/leveldb.git", "rev": "1.23"}),
        source_key({"git": "https://example.org/b/leveldb.git", "rev": "1.23"}),
        source_key({"archive": "x", "sha256": "ab" * 32}),
        source_key({"path": "/tmp/x"}),
    ]
    assert len(set(keys)) == len(keys)
    assert all("/" not in k and not k.startswith(".") for k in keys)
