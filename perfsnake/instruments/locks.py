"""Our lock library (perfsnake/csrc/locks/pslock.c) as a shared-library instrument.

The `lock` variable picks the algorithm; `pthread` preloads nothing. Each
algorithm is its own build, keyed by the lock's build variables only (the
algorithm and `lock_cflags`), so changing one lock's flags rebuilds one
library and re-runs only the runs that use it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from perfsnake import layout
from perfsnake.benchmarks.base import Benchmark, BuildContext
from perfsnake.escape import key_component, value_text
from perfsnake.instruments.base import Context
from perfsnake.instruments.libs import SharedLib
from perfsnake.layout import c_source

LOCK_SOURCE = c_source("locks", "pslock.c")
#: algorithm -> PSLOCK_ALGO number in pslock.c
ALGORITHMS = {"cas": 1, "ttas": 2, "ticket": 3, "mcs": 4, "clh": 5, "hemlock": 6, "cna": 7, "hmcs": 8}
NO_PRELOAD = "pthread"
LIBRARY = "libpslock.so"


class LockBuilder(Benchmark):
    """Builds one algorithm's library; plugs into the workflow's build rule."""

    name = "pslock"
    build_defaults = {"lock": "mcs", "lock_cflags": "-O2"}

    def source_files(self) -> list[Path]:
        return [LOCK_SOURCE]

    def build_script(self, ctx: BuildContext) -> str:
        algo = ALGORITHMS[value_text(ctx.params["lock"])]
        argv = [
            "cc", *shlex.split(value_text(ctx.params["lock_cflags"])), "-Wall", "-Wextra", "-Werror",
            "-fPIC", "-shared", "-pthread", f"-DPSLOCK_ALGO={algo}",
            "-o", str(ctx.build_dir / LIBRARY), str(LOCK_SOURCE), "-ldl",
        ]  # fmt: skip
        return shlex.join(argv)


class Lock(SharedLib):
    """Preloads the lock algorithm named by the record's `lock` variable."""

    kind = "lock"
    options = {"variable": "lock", "stats": False}
    builder = LockBuilder({"type": "pslock"}, "lock")

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        var = str(self.spec["variable"])
        if var not in variables:
            raise self.fail(f"needs a {var!r} variable (values: {NO_PRELOAD}, {', '.join(ALGORITHMS)})")
        if not isinstance(self.spec["stats"], bool):
            raise self.fail(f"must be true or false, not {self.spec['stats']!r}", "stats")
        self.var = var
        self.build_vars = [v for v in ("lock_cflags",) if v in variables]
        for record in records:
            name = value_text(record[var])
            if name != NO_PRELOAD and name not in ALGORITHMS:
                raise self.fail(
                    f"unknown lock {name!r} (choose from {NO_PRELOAD}, {', '.join(ALGORITHMS)})", f"variables.{var}"
                )

    def build_params(self, params: dict[str, object]) -> tuple[str, dict[str, object]] | None:
        """(build key, build parameters) of the library a record needs, or None."""
        name = value_text(params[self.var])
        if name == NO_PRELOAD:
            return None
        build = {"lock": name, "lock_cflags": params.get("lock_cflags", LockBuilder.build_defaults["lock_cflags"])}
        return key_component(build, ["lock", *self.build_vars]), build

    def builds(self, params: Mapping[str, object]) -> list[tuple[Benchmark, str, dict[str, object]]]:
        needed = self.build_params(dict(params))
        return [] if needed is None else [(self.builder, *needed)]

    def paths(self, ctx: Context) -> list[str]:
        needed = self.build_params(dict(ctx.params))
        if needed is None:
            return []
        return [str(layout.here(layout.build_dir(LockBuilder.name, needed[0]), ctx.workdir) / LIBRARY)]

    # With `stats: true` the library counts, per process, the mutex locks it
    # took through the algorithm and those it passed to glibc (other mutex
    # kinds): the proof that a program's locks are the ones being swept.
    def environment(self, ctx: Context) -> dict[str, str]:
        return {STATS_ENV: str(ctx.run_dir / STATS_FILE)} if self.spec["stats"] else {}

    def declared_metrics(self) -> list[str]:
        return list(STATS_METRICS.values()) if self.spec["stats"] else []

    def metrics(self, run_dir: Path) -> dict[str, object]:
        if not self.spec["stats"]:
            return {}
        return read_stats(run_dir / STATS_FILE)


STATS_ENV = "PSLOCK_STATS"
STATS_FILE = "pslock.stats"
#: field of the library's stats line -> metric
STATS_METRICS = {"handled": "lock.acquisitions", "passed": "lock.passed_to_glibc"}


def read_stats(path: Path) -> dict[str, object]:
    """Totals over the processes of a run ("pid P algorithm A handled N passed M" lines).

    A run with the `pthread` lock (nothing preloaded) has no file: empty metrics.
    """
    if not path.exists():
        return {}
    totals = dict.fromkeys(STATS_METRICS.values(), 0)
    for line in path.read_text().splitlines():
        fields = line.split()
        pairs = dict(zip(fields[::2], fields[1::2]))
        for field, metric in STATS_METRICS.items():
            totals[metric] += int(pairs.get(field, 0))
    return dict(totals)
