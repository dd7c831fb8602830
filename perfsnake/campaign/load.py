"""Loading a campaign file: the YAML, checked against the schema, defaults
filled in, its benchmark, records, instruments and platform made, every
cross-field check passed, as one Campaign; and a run's whole list of them."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from perfsnake.benchmarks import BUILTINS, make_benchmark
from perfsnake.benchmarks.imported import ImportedBenchmark
from perfsnake.campaign.checks import (
    _check_names,
    _check_pretty,
    _check_sources,
    _check_statistics,
    _compare_with,
    _derived,
    _flamegraph_pairs,
    _number_error,
    _references,
    check_plots,
    check_requires,
)
from perfsnake.campaign.derived import control_campaigns, floor_campaign, why_campaign
from perfsnake.campaign.model import Campaign, metrics_of
from perfsnake.campaign.records import _build_variables, _expand_values, _imported_records, _record, _records
from perfsnake.campaign.stopping import _stopping
from perfsnake.campaign.yamlfile import load_yaml
from perfsnake.contract import FLEET_VARIABLE
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text
from perfsnake.instruments import Instruments
from perfsnake.platforms import PLATFORMS, Local, Platform, make_platform
from perfsnake.platforms.ssh import fleet_spec
from perfsnake.schema import fill_defaults, load_schema, schema_error

SCHEMA = "campaign.schema.yaml"


def load_campaign(path: str | Path, origin: str | None = None, check_machine: bool = True) -> Campaign:
    """Load and fully check one campaign file.

    Of several problems the first step to meet one reports it: the steps'
    order is the order problems are reported in. `check_machine=False` skips
    the one check of this machine's state (`requires:`), for commands that
    only read results."""
    path = Path(path)
    origin = origin or str(path)
    raw = _raw(path, origin)
    data = fill_defaults(raw, load_schema(SCHEMA))
    benchmark = make_benchmark(data["benchmark"], origin)
    imported = _imported_records(benchmark, raw, data, origin)
    order, recs = _records(data, _expand_values(data["variables"], benchmark, origin), origin)
    order, recs = _fleet_records(data, order, recs, origin)
    _check_names(order, list(benchmark.metrics), origin)
    data["pretty"] = _check_pretty(data["pretty"], order, recs, origin)
    benchmark.check(recs, order)
    _check_sources(benchmark, recs, order, origin)
    instruments = Instruments.from_campaign(data, origin)
    instruments.check(recs, order)
    platform = make_platform(data["platform"], order, origin)
    platform.check(instruments, origin)
    fleet = {h: _fleet_host(data["platform"], str(h), order, origin) for h in data.get("hosts") or []}
    derived = _derived(data["derived"], order, metrics_of(benchmark, instruments), origin)
    metrics = metrics_of(benchmark, instruments, derived)
    plots = check_plots(_fleet_plots(data["plots"], bool(data.get("hosts"))), order, metrics, origin, recs)
    _check_statistics(data, benchmark, order, recs, origin)
    precision, bisect = _stopping(data, raw, order, recs, metrics, benchmark, origin)
    references = _references(data, order, recs, metrics, origin)
    pairs = _flamegraph_pairs(data["flamegraph_pairs"], recs, order, instruments, origin)
    build_vars = _build_variables(benchmark, order)
    if check_machine:  # last: a problem of the file itself is reported first
        check_requires(data, isinstance(benchmark, ImportedBenchmark), origin)
        platform.check_here(benchmark, instruments, recs, origin)
    recs, skipped = _skip_unavailable(instruments, recs, origin, check_machine)
    records = [_record(r, order, build_vars, fleet.get(str(r.get(FLEET_VARIABLE)), platform).build_tag()) for r in recs]
    kept = {r.path for r in records}
    pairs = [(a, b) for a, b in pairs if a in kept and b in kept]
    campaign = Campaign(
        name=data["name"],
        file=path,
        origin=origin,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        data=data,
        benchmark=benchmark,
        variables=order,
        build_vars=build_vars,
        records=records,
        nb_runs=imported or (precision["min_runs"] if precision else data["nb_runs"]),
        duration_s=data["duration_s"],
        timeout_s=data["timeout_s"],
        pretty=data["pretty"],
        plots=plots,
        instruments=instruments,
        flamegraph_pairs=pairs,
        compare_with=_compare_with(data.get("compare_with") or [], origin),
        precision=precision,
        bisect=bisect,
        platform=platform,
        fleet=fleet,
        derived=derived,
        references=references,
        skipped=skipped,
    )
    campaign.by_path = {r.path: r for r in records}
    return campaign


def _fleet_records(data: dict, order: list[str], recs: list[dict], origin: str) -> tuple[list[str], list[dict]]:
    """A fleet's records: every record on every host of `hosts:`, the host
    its first variable (a record of one host is never pooled with another's)."""
    hosts, platform = data.get("hosts"), data["platform"]
    if not hosts:
        if platform.get("hosts"):
            raise CampaignError(origin, "hosts", "platform.hosts names a fleet: list the hosts to run on in hosts:")
        return order, recs
    kind = platform.get("type", "local")
    if kind not in ("ssh", "local"):
        raise CampaignError(
            origin,
            "hosts",
            f"a fleet runs over ssh or on Slurm nodes, not on platform {kind}: set platform.type to ssh "
            "and name the hosts in platform.hosts, or drop platform for Slurm nodes (profiles/slurm)",
        )
    # Without ssh the hosts are Slurm nodes; the workflow checks them against
    # the cluster when it starts (perfsnake.platforms.local.check_slurm_nodes).
    known = list(platform.get("hosts") or {}) if kind == "ssh" else hosts
    for i, name in enumerate(hosts):
        if name not in known:
            raise CampaignError(
                origin, f"hosts[{i}]", f"{name!r} is not in platform.hosts ({', '.join(known) or 'none'})"
            )
    if FLEET_VARIABLE in order:
        raise CampaignError(origin, f"variables.{FLEET_VARIABLE}", "is the fleet's own variable (hosts:): rename it")
    return [FLEET_VARIABLE, *order], [{FLEET_VARIABLE: h, **r} for h in hosts for r in recs]


def _fleet_host(platform: dict, name: str, order: list[str], origin: str) -> Platform:
    """One host of a fleet: its ssh platform, or a Slurm node's."""
    if platform.get("type", "local") == "local":
        return Local(node=name)
    return make_platform(fleet_spec(platform, name), order, origin)


def _fleet_plots(plots: list[dict], fleet: bool) -> list[dict]:
    """A fleet's figures keep its hosts apart: a plot that does not place
    `host` colours by it, or takes a column or a row per host when its colour
    is taken (a breakdown's and a speedup stack's colours are their parts)."""
    if not fleet:
        return plots
    out = []
    for plot in plots:
        placed = {plot.get(a) for a in ("x", "color", "row", "column", "facet")}
        stacked = plot["kind"] in ("breakdown", "speedup_stack")
        free = [a for a in ("color", "column", "row") if a not in plot and not (a == "color" and stacked)]
        free = [a for a in free if not (a == "column" and "facet" in plot)]
        out.append({**plot, free[0]: FLEET_VARIABLE} if FLEET_VARIABLE not in placed and free else plot)
    return out


def _skip_unavailable(
    instruments: Instruments, recs: list[dict], origin: str, loud: bool
) -> tuple[list[dict], dict[str, str]]:
    """The records this machine can run, and why the others cannot (one
    warning line for all of them, when `loud`). A campaign none of whose
    records can run here is refused in one line: nothing is silently
    replaced by something this machine can do."""
    kept: list[dict] = []
    skipped: dict[str, str] = {}  # record, as text -> why
    keys: dict[str, None] = {}
    for rec in recs:
        found = instruments.unavailable(rec)
        if found is None:
            kept.append(rec)
            continue
        instrument, why = found
        skipped[", ".join(f"{k}={value_text(v)}" for k, v in rec.items())] = why
        keys[instrument.key] = None
    if not skipped:
        return recs, {}
    reasons = "; ".join(dict.fromkeys(skipped.values()))
    where = ", ".join(keys)
    if not kept:
        if not loud:
            return recs, {}  # nothing runs: a command that reads results sees every record
        raise CampaignError(origin, where, reasons)
    if loud:
        print(f"perfsnake: warning: {origin}: {where}: {len(skipped)} of {len(recs)} records skipped on this machine: {reasons}",
              file=sys.stderr)  # fmt: skip
    return kept, skipped


#: Keys that were renamed so that "compare" means one thing (results side by
#: side: `compare_with`, `perfsnake compare`): old key path -> new one.
RENAMED = {
    ("compare",): "flamegraph_pairs",
    ("statistics", "compare"): "statistics.test_variables",
}


def _refuse_renamed(raw: dict, origin: str) -> None:
    """A renamed key is refused in one line naming the new one, never silently ignored."""
    for path, new in RENAMED.items():
        node: object = raw
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and path[-1] in node:
            raise CampaignError(origin, ".".join(path), f"renamed: write {new} (same value)")


def _raw(path: Path, origin: str) -> dict:
    """The file's mapping as written, valid under the schema."""
    raw = load_yaml(path, origin)
    if raw is None:
        raise CampaignError(origin, "", "the file is empty")
    if not isinstance(raw, dict):
        raise CampaignError(origin, "", f"expected a mapping at the top level, got {type(raw).__name__}")
    _refuse_renamed(raw, origin)
    # The kinds of benchmark and platform are the registries', above the schema's layer.
    error = _number_error(raw, origin) or schema_error(
        raw, SCHEMA, origin, benchmarks=list(BUILTINS), platforms=tuple(PLATFORMS)
    )
    if error:
        raise error
    return raw


def load_campaigns(paths: list[str], origin: str = "config", check_machine: bool = True) -> list[Campaign]:
    campaigns = [load_campaign(p, check_machine=check_machine) for p in paths]
    campaigns += [d for c in list(campaigns) for d in control_campaigns(c)]
    campaigns += [w for c in list(campaigns) if (w := why_campaign(c, check_machine)) is not None]
    campaigns += [f for c in list(campaigns) if (f := floor_campaign(c)) is not None]
    seen: dict[str, str] = {}
    for c in campaigns:
        if c.name in seen:
            raise CampaignError(c.origin, "name", f"campaign name {c.name!r} is also used by {seen[c.name]}")
        seen[c.name] = c.origin
    if not campaigns:
        raise CampaignError(origin, "campaigns", "no campaign to run")
    return campaigns
