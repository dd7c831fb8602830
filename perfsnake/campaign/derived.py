"""The campaigns derived from a campaign, each results/<name>__<suffix>/:
its observer-effect controls (`control`), its profiled runs
(`profile_differences`) and its layout builds (`noise_floor`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from perfsnake import gates
from perfsnake.campaign.model import Campaign
from perfsnake.campaign.records import _record
from perfsnake.errors import CampaignError, did_you_mean
from perfsnake.instruments import Instruments
from perfsnake.layout import FLOOR_VARIABLE
from perfsnake.platforms import Local


def control_campaigns(c: Campaign) -> list[Campaign]:
    """The observer-effect controls of a campaign: the same records and runs
    without the observing instruments (perf, strace, time, ...) and, with
    `per_instrument`, with each observer alone; results under
    results/<name>__<variant>/. Treatments (libraries, pinning, placement,
    governor, env, daemons) are the experiment, so every control keeps them."""
    mode = c.data.get("control", False)
    if not mode:
        return []
    observers = c.instruments.observers()
    treatments = [i for i in c.instruments.all() if not i.observer]
    if not observers:
        kinds = ", ".join(i.kind for i in treatments) or "none"
        raise CampaignError(
            c.origin,
            "control",
            f"no observing instrument to control for (the instruments here are part of the experiment: {kinds})",
        )
    variants = [("control", c.instruments.keeping(treatments))]
    if mode == "per_instrument":
        kinds = [i.kind for i in observers]  # type: ignore[assignment]
        for i, inst in enumerate(observers):
            label = inst.kind if kinds.count(inst.kind) == 1 else f"{inst.kind}{i}"
            variants.append((f"only-{label}", c.instruments.keeping([*treatments, inst])))
    return [
        _derived_campaign(c, variant, instruments, control_of=(c.name, variant)) for variant, instruments in variants
    ]


def _derived_campaign(c: Campaign, suffix: str, instruments: Instruments, **changes: Any) -> Campaign:
    """A campaign of extra runs of `c`'s records (results/<name>__<suffix>/):
    other instruments, no figures or differential graphs, no controls of its
    own; `changes` set the rest (what it is of `c`, its runs)."""
    derived = dataclasses.replace(
        c, name=f"{c.name}__{suffix}", instruments=instruments, plots=[], flamegraph_pairs=[], **changes,
        data={**c.data, "control": False, "flamegraph_pairs": [], "plots": [], "profile_differences": None, "noise_floor": None},
    )  # fmt: skip
    derived.by_path = c.by_path
    return derived


def why_campaign(c: Campaign, check_machine: bool = True) -> Campaign | None:
    """The profiled runs of `profile_differences`: the same records with perf
    record added (or the campaign's own perf_record), under
    results/<name>__why/, run only for the pairs the statistics pick and never
    part of them. The recorder is checked where it runs, as the campaign's
    own wrappers were (`check_machine`)."""
    spec = c.data.get("profile_differences")
    if spec is None:
        return None
    from perfsnake.instruments.profiling import PerfRecord
    from perfsnake.machine import capabilities

    if c.imported:
        raise CampaignError(c.origin, "profile_differences", "an imported campaign has no runs to profile")
    problem = capabilities.sampling_problem()
    if problem:
        raise CampaignError(c.origin, "profile_differences", f"perf cannot sample here: {problem}")
    instruments = c.instruments
    if not instruments.uses("perf_record"):
        options = {k: spec[k] for k in ("event", "frequency", "call_graph")}
        recorder = PerfRecord({"type": "perf_record", **options}, c.origin, "profile_differences")
        recorder.check([r.values for r in c.records], c.variables)
        # innermost: it samples the benchmark, not the other wrappers
        instruments = dataclasses.replace(instruments, wrappers=[*instruments.wrappers, recorder])
        if check_machine:
            c.platform.check_here(c.benchmark, instruments, [r.values for r in c.records], c.origin)
    return _derived_campaign(c, "why", instruments, nb_runs=int(spec["runs"]), precision=None, bisect=None, references=[],
                    compare_with=[], why_of=c.name)  # fmt: skip


def floor_campaign(c: Campaign) -> Campaign | None:
    """The layout builds of `noise_floor`: each selected record built
    `layouts` times (the `layout` build variable seeds the function order),
    each build run under environment padding, under results/<name>__floor/."""
    spec = c.data.get("noise_floor")
    if spec is None:
        return None
    import shutil

    if c.imported or not c.benchmark.needs_build():
        raise CampaignError(c.origin, "noise_floor", f"{c.benchmark.name} is not built here: its layout cannot change")
    if FLOOR_VARIABLE in c.variables:
        raise CampaignError(c.origin, f"variables.{FLOOR_VARIABLE}", "is the variable noise_floor adds: rename it")
    if isinstance(c.platform, Local) and shutil.which("ld.lld") is None:
        raise CampaignError(c.origin, "noise_floor", "needs lld (Debian package lld; run: bash scripts/setup/apt.sh)")
    selected = []
    for i, where in enumerate(spec.get("records") or [{}]):
        for var in where:
            if var not in c.variables:
                raise CampaignError(
                    c.origin, f"noise_floor.records[{i}]", f"{var!r} is not a variable{did_you_mean(var, c.variables)}"
                )
        found = [r for r in c.records if gates.matches(r.values, where)]
        if not found:
            raise CampaignError(c.origin, f"noise_floor.records[{i}]", f"selects no record ({where})")
        selected += [r for r in found if r not in selected]
    order, build_vars = [*c.variables, FLOOR_VARIABLE], [*c.build_vars, FLOOR_VARIABLE]
    tag = c.platform.build_tag()
    records = [
        _record(values, order, build_vars, tag)
        for r in selected
        for values in ({**r.values, FLOOR_VARIABLE: k} for k in range(1, int(spec["layouts"]) + 1))
    ]
    derived = _derived_campaign(c, "floor", c.instruments, nb_runs=int(spec["runs"]), precision=None, bisect=None,
                                references=[], compare_with=[], floor_of=c.name, variables=order,
                                build_vars=build_vars, records=records)  # fmt: skip
    derived.by_path = {r.path: r for r in records}
    return derived
