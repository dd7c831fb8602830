"""What the catalog's packaged system tools share (stress-ng, sysbench, fio,
cyclictest): the binary comes from a Debian package, so there is no build,
and every variable is checked against a small table of kinds before anything
runs."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from perfsnake.benchmarks.base import Benchmark
from perfsnake.errors import did_you_mean
from perfsnake.escape import value_text
from perfsnake.machine.sysinfo import find_program

#: fio/sysbench sizes: a number with an optional binary suffix (4k, 1M, 2g)
SIZE = re.compile(r"^[0-9]+[kKmMgG]?$")


def positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def non_negative_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


class PackagedTool(Benchmark):
    """A benchmark run from a packaged binary: no fetch, no build."""

    #: the executable and the Debian package that ships it
    executable: str = ""
    package: str = ""
    #: variable -> "int" (>= 1), "int0" (>= 0), "number" (> 0), "size", or a tuple of choices
    kinds: dict[str, object] = {}

    def needs_build(self) -> bool:
        return False

    def binary(self) -> str:
        """The tool's path; a one-line error when the package is missing."""
        return self.require(self.executable, self.package)

    def require(self, executable: str, package: str) -> str:
        """Another program the benchmark runs (a server beside its client)."""
        found = find_program(executable)
        if found is None:
            raise self.fail(
                "benchmark", f"{executable} is not installed (Debian package {package}; run: bash scripts/setup/apt.sh)"
            )
        self.found[found] = package
        return found

    @functools.cached_property
    def found(self) -> dict[str, str]:
        """What require() found: path -> Debian package."""
        return {}

    def programs(self) -> dict[str, str]:
        return dict(self.found)

    def params(self, record: Mapping[str, object], duration_s: float | None = None) -> dict[str, object]:
        """The record over the defaults."""
        return {**self.build_defaults, **self.run_defaults, **record}

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        self.binary()
        for record in records:
            p = self.params(record)
            for var, kind in self.kinds.items():
                if var in p:
                    self.check_value(var, kind, p[var])
            self.check_record(p)

    def check_value(self, var: str, kind: object, value: object) -> None:
        text = value_text(value)
        if isinstance(kind, tuple):
            if value not in kind:
                raise self.fail(
                    f"variables.{var}",
                    f"{text!r} is not one of {', '.join(map(str, kind))}{did_you_mean(text, list(kind))}",
                )
        elif kind == "int" and not positive_int(value):
            raise self.fail(f"variables.{var}", f"{text!r} is not a positive integer")
        elif kind == "int0" and not non_negative_int(value):
            raise self.fail(f"variables.{var}", f"{text!r} is not a non-negative integer")
        elif kind == "number" and not positive_number(value):
            raise self.fail(f"variables.{var}", f"{text!r} is not a positive number")
        elif kind == "size" and (isinstance(value, bool) or not SIZE.match(text)):
            raise self.fail(
                f"variables.{var}", f"{text!r} is not a size (a number with an optional k, m or g suffix, e.g. 4k)"
            )

    def check_record(self, p: Mapping[str, object]) -> None:
        """Checks across variables (override)."""
