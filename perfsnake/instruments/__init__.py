"""Composable instruments: command wrappers, LD_PRELOAD libraries, run hooks.

A campaign lists them under `wrappers`, `shared_libs`, `pre_run_hooks` and
`post_run_hooks`; each entry is a type name or a mapping with a `type` and
that instrument's options. The catalog of kinds (`CATALOG`, `names()`,
`create`) is perfsnake.instruments.registry's, re-exported here.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from perfsnake.benchmarks.base import Benchmark
from perfsnake.errors import CampaignError, did_you_mean
from perfsnake.instruments.base import Context, Instrument
from perfsnake.instruments.hooks import Hook
from perfsnake.instruments.libs import SharedLib
from perfsnake.instruments.registry import CATALOG, SECTIONS, create, names
from perfsnake.instruments.wrappers import Wrapper

__all__ = ["CATALOG", "SECTIONS", "Instruments", "create", "names"]


def _make(section: str, index: int, entry: object, origin: str) -> Instrument:
    key = f"{section}[{index}]"
    spec = {"type": entry} if isinstance(entry, str) else entry
    catalog = SECTIONS[section]
    if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
        raise CampaignError(
            origin, key, f"expected a name or a mapping with a type (choose from {', '.join(sorted(catalog))})"
        )
    kind = spec["type"]
    if kind not in catalog:
        raise CampaignError(
            origin,
            f"{key}.type" if isinstance(entry, dict) else key,
            f"unknown {section[:-1].replace('_', ' ')} {kind!r} (choose from {', '.join(sorted(catalog))})",
        )
    instrument = create(spec, origin, key)
    if section.endswith("hooks") and section.split("_")[0] not in instrument.phases:  # type: ignore[attr-defined]
        raise CampaignError(origin, key, f"{kind} is a {'/'.join(instrument.phases)}-run hook only")  # type: ignore[attr-defined]
    return instrument


def _entries(data: Mapping[str, object], section: str) -> list[object]:
    entries = data.get(section) or []
    return list(entries) if isinstance(entries, list) else []


@dataclass
class Instruments:
    wrappers: list[Wrapper] = field(default_factory=list)
    libs: list[SharedLib] = field(default_factory=list)
    pre: list[Hook] = field(default_factory=list)
    post: list[Hook] = field(default_factory=list)

    @classmethod
    def from_campaign(cls, data: Mapping[str, object], origin: str) -> Instruments:
        made = {s: [_make(s, i, e, origin) for i, e in enumerate(_entries(data, s))] for s in SECTIONS}
        return cls(made["wrappers"], made["shared_libs"], made["pre_run_hooks"], made["post_run_hooks"])  # type: ignore[arg-type]

    def all(self) -> list[Instrument]:
        return [*self.wrappers, *self.libs, *self.pre, *self.post]

    def observers(self) -> list[Instrument]:
        return [i for i in self.all() if i.observer]

    def keeping(self, keep: list[Instrument]) -> Instruments:
        """The same composition with only the instruments in `keep` (order kept)."""
        ids = {id(i) for i in keep}
        return Instruments(
            *([i for i in items if id(i) in ids] for items in (self.wrappers, self.libs, self.pre, self.post))  # type: ignore[arg-type]
        )

    def check(self, records: list[dict[str, object]], variables: list[str]) -> None:
        for instrument in self.all():
            var = instrument.reads_variable()
            if var is not None and var not in variables:
                where = "variable" if "variable" in instrument.spec_given else None
                raise instrument.fail(f"reads the variable {var!r}, which the campaign does not define{did_you_mean(var, variables)} "
                                      f"(variables: {', '.join(variables) or 'none'})", where)  # fmt: skip
            instrument.check(records, variables)
        tracers = [w for w in self.wrappers if w.ptrace]
        if len(tracers) > 1:
            raise tracers[1].fail(f"{tracers[1].kind} and {tracers[0].key} ({tracers[0].kind}) both trace with ptrace, "
                                  "and a process has one tracer: keep one")  # fmt: skip
        for outer, inner in itertools.pairwise(self.wrappers):
            # The first record that gives the inner one something to run.
            ctxs = (Context(r, Path(".")) for r in records or [{}])
            argv = next((a for c in ctxs if (a := inner.prefix(c))), [])
            why = outer.cannot_start(argv) if argv else None
            if why:
                # Where neither order works the reason says so ("keep one"): no order to suggest.
                hint = "" if "keep one" in why else f"; put it after {inner.kind}"
                raise outer.fail(f"{outer.kind} cannot start {inner.key} ({inner.kind}): {why}{hint}")

    def unavailable(self, params: Mapping[str, object]) -> tuple[Instrument, str] | None:
        """The first instrument that cannot run a record with these values
        here, and why (None: every one can)."""
        for instrument in self.all():
            why = instrument.unavailable(params)
            if why:
                return instrument, why
        return None

    def state_set(self) -> set[str]:
        """The machine state's keys the campaign's hooks set on purpose (not drift)."""
        return {key for hook in [*self.pre, *self.post] for key in hook.sets_state}

    def tools(self) -> list[str]:
        """Our own helper programs the runs need (built into resources/bin)."""
        return sorted({t for i in self.all() if (t := getattr(i, "tool", None))})

    def builds(self, params: Mapping[str, object]) -> list[tuple[Benchmark, str, dict[str, object]]]:
        """Builds of the instruments (not the benchmark) a run with these parameters needs."""
        return [b for i in self.all() for b in i.builds(params)]

    def needs_flame_tools(self) -> bool:
        return any(i.needs_flame_tools() for i in self.all())

    def declared_metrics(self) -> list[str]:
        return [m for i in self.all() for m in i.declared_metrics()]

    def fingerprint(self) -> str:
        blob = json.dumps([(i.key, i.fingerprint()) for i in self.all()])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def compose(self, ctx: Context, command: list[str] | str) -> str:
        """The shell line that runs `command` inside every wrapper, with the preloads."""
        prefix: list[str] = []
        for wrapper in self.wrappers:
            prefix += wrapper.prefix(ctx)
        preload = [p for lib in self.libs for p in lib.paths(ctx)]
        inner = command if isinstance(command, list) else ["/bin/sh", "-c", command]
        if not prefix and not preload:
            return "exec " + shlex.join(command) if isinstance(command, list) else command
        line = "exec " + shlex.join(prefix) if prefix else "exec"
        if preload:
            # Innermost, so only the benchmark gets it; extends any inherited LD_PRELOAD.
            line += " env LD_PRELOAD=" + shlex.quote(":".join(preload)) + '"${LD_PRELOAD:+:$LD_PRELOAD}"'
            env = {k: v for lib in self.libs if lib.paths(ctx) for k, v in lib.environment(ctx).items()}
            line += "".join(f" {k}={shlex.quote(v)}" for k, v in env.items())
        return f"{line} {shlex.join(inner)}"

    def units(self, run_dir: Path) -> dict[str, str]:
        out: dict[str, str] = {}
        for wrapper in self.wrappers:
            if hasattr(wrapper, "units"):
                out.update(wrapper.units(run_dir))
        return out

    def uses(self, kind: str) -> bool:
        return any(i.kind == kind for i in self.all())

    def metrics(self, run_dir: Path) -> dict[str, object]:
        out: dict[str, object] = {}
        for instrument in [*self.wrappers, *self.libs, *self.pre, *self.post]:
            out.update(instrument.metrics(run_dir))
        return out
