"""What a stage knows of its campaign: the contract between planning and the stages.

`planning.campaign_info` builds a CampaignInfo from a loaded campaign; the
rules hand it to their jobs as JSON (the `campaign` parameter, and
results/<campaign>/campaign.json for the report's rules), and a job reads it
back with `CampaignInfo.from_json` (or `from_dict`).

That JSON is part of the parameters of every analysis rule: for an unchanged
campaign its bytes must not change, or Snakemake re-runs every campaign's
analysis. The history code reads campaign.json as plain JSON, so the keys
are the fields' names, as they always were.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from perfsnake.schema import schema_defaults

#: a fleet's variable (`hosts:`): the host, a name of platform.hosts, a record runs on
FLEET_VARIABLE = "host"


@dataclass(frozen=True)
class Statistics:
    """A campaign's `statistics:` options, the schema's defaults filled in
    (config/schemas/campaign.schema.yaml is the one place they are written)."""

    confidence: float
    alpha: float
    statistic: str  # mean or median: what plots and tables show
    autocorrelation_threshold: float
    warmup: str
    correction: str
    unstable_cv: float
    unstable_max_min: float
    # Optional options, without a default: None when the campaign does not set them.
    baseline: dict[str, object] | None = None
    test_variables: list[str] | None = None
    metrics: list[str] | None = None
    decide: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, given: Mapping[str, Any] | None = None) -> Statistics:
        """The options a campaign (or its JSON) gives, the defaults for the rest.
        Values are kept as given, never converted: they go back into the JSON."""
        return cls(**{**schema_defaults("statistics"), **(given or {})})

    def as_dict(self) -> dict[str, object]:
        """The options as the campaign's JSON has them: those without a default only when set."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class CampaignInfo:
    """What aggregation, analysis, tables and plots need to know about a campaign.

    Only `name` and `variables` are required: the rest defaults to empty, so
    a test (or a tool) states just what it uses."""

    name: str
    variables: list[str]
    statistics: Statistics = field(default_factory=Statistics.from_dict)
    file: str = ""
    sha256: str = ""
    benchmark: str = ""
    platform: str = "local"
    metrics: list[str] = field(default_factory=list)
    #: display labels, variable -> {value -> label}
    pretty: dict[str, dict[str, str]] = field(default_factory=dict)
    nb_runs: int = 0
    #: how many records the campaign has
    records: int = 0
    #: the reference gates as perfsnake.gates parses them
    references: list[dict[str, Any]] = field(default_factory=list)
    #: the variables that are commit ranges
    versions: list[str] = field(default_factory=list)
    units: dict[str, str] = field(default_factory=dict)
    regression_metrics: list[str] = field(default_factory=list)
    #: each variable's values as text, in the campaign's order
    values: dict[str, list[str]] = field(default_factory=dict)
    #: an imported campaign's `#` lines (its tool, files and machine), else None
    imported: dict[str, str] | None = None
    profile_differences: dict[str, Any] | None = None
    requires: dict[str, object] | None = None
    #: a fleet's hosts (its `host` variable's values): records apart in `host` are apart in machine
    hosts: list[str] = field(default_factory=list)
    #: what `--config only=...` chose (perfsnake.campaign.selection), else None
    selection: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, object]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["statistics"] = self.statistics.as_dict()
        # Only when set: campaigns without one keep their JSON, so nothing re-aggregates.
        for key in ("requires", "hosts", "selection"):
            if not out[key]:
                del out[key]
        return out

    def to_json(self) -> str:
        """The JSON text of the rules' `campaign` parameter (keys sorted: the same bytes every time)."""
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CampaignInfo:
        """From the parsed JSON; a key that is no field is refused (a typo, or JSON of another kind)."""
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"campaign info: unknown key(s) {', '.join(unknown)}")
        return cls(**{**data, "statistics": Statistics.from_dict(data.get("statistics"))})

    @classmethod
    def from_json(cls, text: str) -> CampaignInfo:
        return cls.from_dict(json.loads(text))
