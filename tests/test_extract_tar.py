"""Archives are extracted inside their directory on every Python this runs on:
tarfile's "data" filter where it exists (3.11.4+), our own checks on Debian
12's python3 (3.11.2), which a normal user's environment may be built on."""

from __future__ import annotations

import io
import tarfile

import pytest

from perfsnake.safefile import UnsafeArchive, extract_tar


def archive(path, *members):
    with tarfile.open(path, "w") as tar:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = 1
                tar.addfile(info, io.BytesIO(b"x"))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE,
                "sym": tarfile.SYMTYPE,
                "hard": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
            }[kind]
            info.linkname = target or ""
            tar.addfile(info)
    return path


# The data filter's path only where this Python has it; the fallback everywhere.
PATHS = ["filter", "fallback"] if hasattr(tarfile, "data_filter") else ["fallback"]


@pytest.fixture(params=PATHS)
def python(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return request.param


GOOD = [
    ("d", "dir", None),
    ("d/f", "file", None),
    ("d/link", "sym", "f"),
    ("top", "sym", "d/f"),
    ("hard", "hard", "d/f"),
]


def test_an_archive_inside_its_directory_is_extracted(tmp_path, python):
    dest = tmp_path / "out"
    dest.mkdir()
    with tarfile.open(archive(tmp_path / "a.tar", *GOOD)) as tar:
        extract_tar(tar, dest)
    assert (dest / "d" / "f").read_bytes() == b"x"
    assert (dest / "d" / "link").resolve() == (dest / "d" / "f").resolve()
    assert (dest / "hard").read_bytes() == b"x"
    # The archive's directory is 0644 (TarInfo's default): its owner must still enter it,
    # which root would do anyway, so the bits are checked, not only the reads.
    assert (dest / "d").stat().st_mode & 0o700 == 0o700 and (dest / "d" / "f").stat().st_mode & 0o600 == 0o600


@pytest.mark.parametrize(
    "member",
    [
        ("../outside", "file", None),
        ("up", "sym", "../../etc/passwd"),
        ("abs", "sym", "/etc/passwd"),
        ("d/deep", "sym", "../../x"),
        ("hard", "hard", "../outside"),
    ],
    ids=["dotdot", "symlink-up", "symlink-absolute", "symlink-from-subdir", "hardlink-up"],
)
def test_a_member_leaving_the_directory_is_refused_and_nothing_lands_outside(tmp_path, python, member):
    dest = tmp_path / "out"
    dest.mkdir()
    with tarfile.open(archive(tmp_path / "a.tar", ("d", "dir", None), member)) as tar, pytest.raises(UnsafeArchive):
        extract_tar(tar, dest)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tar", "out"]


def test_an_absolute_member_never_lands_outside(tmp_path, python):
    """The data filter strips the leading slash, the fallback refuses: either is safe."""
    dest = tmp_path / "out"
    dest.mkdir()
    victim = tmp_path / "victim"
    with tarfile.open(archive(tmp_path / "a.tar", (str(victim), "file", None))) as tar:
        try:
            extract_tar(tar, dest)
        except UnsafeArchive:
            assert python == "fallback"
    assert not victim.exists()
