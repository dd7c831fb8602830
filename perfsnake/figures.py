"""Figures across campaigns: one faceted figure over several campaigns' runs.

A study often runs the same sweep on several benchmarks (the paper's lock
figure on Kyoto Cabinet, LevelDB and RocksDB), each its own campaign, since a
campaign has one benchmark. A `figures:` entry of the workflow configuration
draws them together: the rows of the listed campaigns, with a `campaign`
column, plotted with the same plot keys as a campaign's `plots:` (so
`facet: campaign` gives one panel per benchmark).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import jsonschema

from perfsnake.campaign import Campaign, check_plots
from perfsnake.errors import CampaignError, did_you_mean
from perfsnake.escape import value_text
from perfsnake.schema import load_schema

#: the column naming each row's campaign
CAMPAIGN = "campaign"
ORIGIN = "config"


@dataclass(frozen=True)
class Figure:
    name: str
    campaigns: list[str]
    spec: dict[str, object]  # a campaign plot entry
    pretty: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_figures(entries: Sequence[Mapping[str, object]], campaigns: Mapping[str, Campaign]) -> list[Figure]:
    """The `figures:` of the configuration, checked against the campaigns they draw."""
    plot_schema = load_schema("campaign.schema.yaml")["$defs"]["plot"]
    figures: list[Figure] = []
    for i, entry in enumerate(entries):
        key = f"figures[{i}]"
        names = [str(n) for n in entry.get("campaigns") or list(campaigns)]  # type: ignore[attr-defined]
        for j, name in enumerate(names):
            if name not in campaigns:
                hint = did_you_mean(name, list(campaigns))
                raise CampaignError(ORIGIN, f"{key}.campaigns[{j}]", f"no campaign {name!r} in this run{hint}")
        spec = {k: v for k, v in entry.items() if k not in ("campaigns", "pretty")}
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(plot_schema).iter_errors(spec))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise CampaignError(ORIGIN, f"{key}.{where}" if where else key, error.message)
        drawn = [campaigns[n] for n in names]
        own = list(dict.fromkeys(v for c in drawn for v in c.variables))
        variables = [CAMPAIGN, *own]  # first: an unmapped campaign is the mistake to name
        metrics = list(dict.fromkeys(m for c in drawn for m in c.metric_names()))
        records = _records_for_check(drawn, own, CAMPAIGN in _mapped(spec))
        try:
            (checked,) = check_plots([spec], variables, metrics, ORIGIN, records)
        except CampaignError as e:
            raise CampaignError(ORIGIN, e.key.replace("plots[0]", key), e.problem) from None
        pretty = entry.get("pretty") or {}
        if not isinstance(pretty, dict):
            raise CampaignError(ORIGIN, f"{key}.pretty", "must map a variable to {value: label}")
        if any(f.name == checked["name"] for f in figures):
            raise CampaignError(ORIGIN, f"{key}.name", f"duplicate figure name {checked['name']!r}")
        figures.append(Figure(str(checked["name"]), names, checked, {str(k): dict(v) for k, v in pretty.items()}))
    return figures


def _mapped(spec: Mapping[str, object]) -> set[object]:
    return {spec.get(a) for a in ("x", "color", "row", "column", "facet")}


def _records_for_check(drawn: list[Campaign], variables: list[str], by_campaign: bool) -> list[dict[str, object]]:
    """The records as the plot check sees them. When the campaign is mapped (a
    facet, a colour), a variable fixed within each campaign (a store's own
    workload settings) separates nothing more, so it need not be mapped."""
    records: list[dict[str, object]] = [
        {CAMPAIGN: c.name, **{v: value_text(r.values.get(v, "")) for v in variables}} for c in drawn for r in c.records
    ]
    if by_campaign:
        for v in variables:
            if all(len({value_text(r.values.get(v, "")) for r in c.records}) == 1 for c in drawn):
                for rec in records:
                    rec[v] = ""
    return records


def figure_info(figure: Figure, campaigns: Mapping[str, Campaign]) -> dict[str, object]:
    """What the figure's plot needs: labels, value orders and statistics (the first campaign's)."""
    drawn = [campaigns[n] for n in figure.campaigns]
    pretty: dict[str, dict[str, str]] = {}
    for c in drawn:
        for var, labels in c.pretty.items():
            pretty.setdefault(var, {}).update(labels)
    for var, labels in figure.pretty.items():
        pretty.setdefault(var, {}).update(labels)
    values: dict[str, list[str]] = {CAMPAIGN: list(figure.campaigns)}
    for c in drawn:
        for r in c.records:
            for var, value in r.values.items():
                values.setdefault(var, [])
                if value_text(value) not in values[var]:
                    values[var].append(value_text(value))
    return {"pretty": pretty, "values": values, "statistics": drawn[0].data["statistics"]}
