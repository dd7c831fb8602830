"""The typed contract between planning and the stages (perfsnake.contract).

A campaign's info is part of every analysis rule's params, so its JSON must
keep its bytes: `legacy_info` is the dict planning.campaign_info returned
before the info was typed, kept here as the reference; every campaign of
config/campaigns/ (and the campaigns derived from them) and one that sets
every optional key must give the same text through CampaignInfo.to_json.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from helpers import ROOT, write_campaign

from perfsnake.campaign import Campaign, load_campaigns
from perfsnake.contract import CampaignInfo, Statistics
from perfsnake.escape import value_text
from perfsnake.machine import capabilities
from perfsnake.planning import campaign_info, imported_metadata
from perfsnake.schema import load_schema, schema_defaults

CAMPAIGNS = sorted((ROOT / "config" / "campaigns").glob("*.yaml"))

#: Every optional key the info carries, set.
RICH = {
    "name": "rich",
    "benchmark": {"type": "command", "command": "echo n={n} x={x} v=1.5", "metrics": {"v": "v=([0-9.]+)"}},
    "variables": {"n": [1, 2, 3], "x": ["a", "b"]},
    "nb_runs": 4,
    "pretty": {"n": {"1": "one", "2": "two"}},
    # an integer where the schema's default is a float: kept as given, never converted
    "statistics": {
        "baseline": {"n": 1},
        "test_variables": ["n"],
        "metrics": ["v"],
        "confidence": 0.9,
        "unstable_max_min": 2,
    },
    "references": [
        {"metric": "v", "upper": 3},
        {"metric": "v", "baseline": {"n": 1}, "max_regression": "5%", "better": "lower"},
    ],
    "profile_differences": {"top": 2},
    "requires": {"aslr": "off"},
    "on_unmet": "warn",
}


def legacy_info(c: Campaign) -> dict[str, object]:
    """planning.campaign_info as it was before the contract (the reference for the bytes)."""
    return {
        "name": c.name,
        "file": str(c.file),
        "sha256": c.sha256,
        "benchmark": c.benchmark.name,
        "platform": c.platform.kind,
        "variables": c.variables,
        "metrics": c.metric_names(),
        "pretty": c.pretty,
        "nb_runs": c.nb_runs,
        "records": len(c.records),
        "statistics": c.data["statistics"],
        "references": c.references,
        "versions": c.version_variables,
        "units": c.benchmark.units(),
        "regression_metrics": c.regression_metrics() if c.version_variables else [],
        "values": {v: list(dict.fromkeys(value_text(r.values[v]) for r in c.records)) for v in c.variables},
        "imported": imported_metadata(c),
        "profile_differences": c.data.get("profile_differences"),
        **({"requires": c.data["requires"]} if c.data.get("requires") else {}),
    }


def assert_same_bytes(campaigns: list[Campaign]) -> None:
    for c in campaigns:
        text = campaign_info(c).to_json()
        assert text == json.dumps(legacy_info(c), sort_keys=True), c.name
        assert CampaignInfo.from_json(text).to_json() == text, c.name  # what a job reads back writes the same


@pytest.mark.parametrize("path", CAMPAIGNS, ids=[p.stem for p in CAMPAIGNS])
def test_every_ready_campaign_keeps_its_info_bytes(path: Path, monkeypatch):
    # The info is read results' (check_machine=False): it does not depend on
    # what this user may record, so a campaign whose sched_timeline records
    # every CPU (root's, for a normal user) is checked in every account.
    monkeypatch.setattr(capabilities, "recording_problem", lambda events: None)
    assert_same_bytes(load_campaigns([str(path)], check_machine=False))


def test_every_optional_key_keeps_its_info_bytes(tmp_path):
    campaigns = load_campaigns([str(write_campaign(tmp_path, RICH))], check_machine=False)
    assert [c.name for c in campaigns] == ["rich", "rich__why"]
    assert_same_bytes(campaigns)
    info = campaign_info(campaigns[0])
    assert info.requires and info.profile_differences and info.statistics.baseline == {"n": 1}
    assert 'unstable_max_min": 2,' in info.to_json()


def test_statistics_has_a_field_per_schema_option():
    options = load_schema("campaign.schema.yaml")["properties"]["statistics"]["properties"]
    assert {f.name for f in fields(Statistics)} == set(options)


def test_defaults_come_from_the_schema_and_stay_out_of_the_json_when_unset():
    stats = Statistics.from_dict({"statistic": "median"})
    assert stats.statistic == "median" and stats.confidence == schema_defaults("statistics")["confidence"]
    assert stats.as_dict() == {**schema_defaults("statistics"), "statistic": "median"}  # no baseline, test_variables...
    info = CampaignInfo.from_dict({"name": "c", "variables": ["x"]})
    assert info.statistics == Statistics.from_dict() and "requires" not in json.loads(info.to_json())


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown key"):
        CampaignInfo.from_dict({"name": "c", "variables": ["x"], "variable": ["y"]})
