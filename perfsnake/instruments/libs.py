"""Shared libraries injected with LD_PRELOAD (allocators, user libraries).

All libraries of a run are joined into one LD_PRELOAD that extends the
inherited one. Debian's libraries are found through the dynamic linker's
cache, never by a hard-coded path.
"""

from __future__ import annotations

from pathlib import Path

from perfsnake.escape import value_text
from perfsnake.instruments.base import Context, Instrument, text
from perfsnake.machine.sysinfo import find_library

#: allocator name -> (soname, Debian package); "glibc" means no preload.
ALLOCATORS = {
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": ("libtcmalloc.so.4", "libgoogle-perftools4"),
}


class SharedLib(Instrument):
    def paths(self, ctx: Context) -> list[str]:
        raise NotImplementedError

    def environment(self, ctx: Context) -> dict[str, str]:
        """Variables the preloaded library reads, set beside LD_PRELOAD."""
        return {}


def _allocator_path(lib: SharedLib, name: str) -> str:
    soname, package = ALLOCATORS[name]
    path = find_library(soname)
    if path is None:
        raise lib.fail(f"{soname} not found (Debian package {package}; `make setup` installs it)")
    return path


class Fixed(SharedLib):
    """`jemalloc` or `tcmalloc`: always preloaded."""

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.path = _allocator_path(self, self.kind)

    def paths(self, ctx: Context) -> list[str]:
        return [self.path]


class Jemalloc(Fixed):
    kind = "jemalloc"


class Tcmalloc(Fixed):
    kind = "tcmalloc"


class Allocator(SharedLib):
    """The malloc named by the record's `allocator` variable (glibc, jemalloc, tcmalloc)."""

    kind = "allocator"
    options = {"variable": "allocator"}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        var = str(self.spec["variable"])
        if var not in variables:
            raise self.fail(f"needs a {var!r} variable (values: glibc, {', '.join(ALLOCATORS)})")
        self.resolved: dict[str, str] = {}
        for record in records:
            name = value_text(record[var])
            if name == "glibc":
                continue
            if name not in ALLOCATORS:
                raise self.fail(
                    f"unknown allocator {name!r} (choose from glibc, {', '.join(ALLOCATORS)})", f"variables.{var}"
                )
            self.resolved[name] = _allocator_path(self, name)

    def paths(self, ctx: Context) -> list[str]:
        name = text(ctx.params, str(self.spec["variable"]))
        return [self.resolved[name]] if name and name != "glibc" else []


class Preload(SharedLib):
    """Any shared object given by path."""

    kind = "preload"
    options = {"path": None}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        raw = self.spec["path"]
        if not isinstance(raw, str) or not raw:
            raise self.fail("needs a path to a shared library", "path")
        path = Path(raw).expanduser().resolve()
        if not path.is_file():
            raise self.fail(f"{raw!r} does not exist", "path")
        with path.open("rb") as f:
            if f.read(4) != b"\x7fELF":
                raise self.fail(f"{raw!r} is not an ELF shared library", "path")
        self.path = str(path)

    def paths(self, ctx: Context) -> list[str]:
        return [self.path]
