"""What every instrument (wrapper, shared library, hook) has in common.

An instrument is configured once in the campaign and then receives each
record's variables, using the ones it understands: a `cpu_list` variable
drives taskset, an `allocator` variable picks a malloc library. Sweeping a
mechanism is therefore just another variable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake.errors import CampaignError
from perfsnake.escape import value_text
from perfsnake.machine.sysinfo import find_program

if TYPE_CHECKING:
    from perfsnake.benchmarks.base import Benchmark


@dataclass(frozen=True)
class Context:
    """What an instrument sees of one run."""

    params: Mapping[str, object]  # every variable of the record, with defaults
    run_dir: Path
    workdir: Path = field(default_factory=Path.cwd)  # where resources/ and results/ live


class Instrument:
    #: catalog name (the `type` in the campaign)
    kind: str = ""
    #: keys the campaign entry may set besides `type`
    options: dict[str, object] = {}
    #: record variables this instrument reads (documentation and checks)
    variables: tuple[str, ...] = ()
    #: True: it only watches the run (perf, strace, time, ...), so control runs
    #: drop it to measure its overhead; False: it is part of the experiment
    #: (an allocator, a lock, pinning, a governor), kept in control runs.
    observer: bool = False

    def __init__(self, spec: Mapping[str, object], origin: str, key: str) -> None:
        self.origin = origin
        self.key = key  # e.g. "wrappers[1]", for error messages
        unknown = sorted(set(spec) - set(self.options) - {"type"})
        if unknown:
            known = ", ".join(sorted(["type", *self.options]))
            raise CampaignError(origin, f"{key}.{unknown[0]}", f"unknown key for {self.kind} (known: {known})")
        self.spec = {**self.options, **{k: v for k, v in spec.items() if k != "type"}}
        self.spec_given = {k for k in spec if k != "type"}

    def fail(self, problem: str, field: str | None = None) -> CampaignError:
        where = f"{self.key}.{field}" if field else self.key
        return CampaignError(self.origin, where, problem)

    def fingerprint(self) -> str:
        blob = json.dumps({"type": self.kind, "spec": self.spec}, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        """Reject, before any run, values this instrument cannot use."""

    def unavailable(self, params: Mapping[str, object]) -> str | None:
        """Why a record with these values cannot run on this machine, in a
        line (None: it can). Such records are skipped, named in one warning;
        a campaign left with none is refused (perfsnake.campaign.load)."""
        return None

    def reads_variable(self) -> str | None:
        """The campaign variable this instrument cannot work without (its
        `variable` option), checked to exist: a mistyped name would otherwise
        silently do nothing (pin nothing, preload nothing)."""
        return str(self.spec["variable"]) if "variable" in self.options else None

    def require_tool(self, tool: str, package: str) -> str:
        path = find_program(tool)
        if path is None:
            raise self.fail(f"{tool} is not installed (Debian package {package}; `make setup` installs it)")
        return path

    def declared_metrics(self) -> list[str]:
        """The metric names this instrument always reports (for plots)."""
        return []

    def metrics(self, run_dir: Path) -> dict[str, object]:
        """Metrics this instrument adds to the run's result (after the run)."""
        return {}

    # ---- extension points the workflow asks every instrument ----------------
    def builds(self, params: Mapping[str, object]) -> list[tuple[Benchmark, str, dict[str, object]]]:
        """Builds a run with these parameters needs: (builder, build key, build parameters)."""
        return []

    def targets(self, campaign: str, plan: Mapping[str, Sequence[int]], pairs: list[tuple[str, str]]) -> list[str]:
        """Post-processing products (rule outputs) this instrument adds to a
        campaign: `plan` holds the runs (record path -> run numbers) it covers."""
        return []

    def needs_flame_tools(self) -> bool:
        return False


def text(params: Mapping[str, object], name: str, default: object = None) -> str | None:
    """A record variable as text, or None when the record does not set it."""
    value = params.get(name, default)
    return None if value is None else value_text(value)
