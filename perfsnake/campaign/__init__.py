"""Loading, validating and expanding campaign files.

A campaign file is checked completely before anything runs: a problem is
reported as one CampaignError line naming the file, the key and the problem.

    load       load_campaign(s): the file, step by step, to Campaigns
    yamlfile   the YAML, duplicate keys refused
    records    variables expanded into records, excludes applied
    checks     what the fields name exists: plots, pairs, sources, derived metrics, references
    stopping   how many runs a record gets: nb_runs, precision, statistics.decide, bisect
    derived    the campaigns derived from one: controls, profiled runs, layout builds
    model      Record and Campaign

The schema's wording of a violation is perfsnake.schema's (re-exported here).
"""

from perfsnake.campaign.checks import RESERVED, check_plots
from perfsnake.campaign.derived import control_campaigns, floor_campaign, why_campaign
from perfsnake.campaign.load import load_campaign, load_campaigns
from perfsnake.campaign.model import Campaign, Record
from perfsnake.campaign.yamlfile import load_yaml
from perfsnake.schema import schema_error

__all__ = [
    "RESERVED",
    "Campaign",
    "Record",
    "check_plots",
    "control_campaigns",
    "floor_campaign",
    "load_campaign",
    "load_campaigns",
    "load_yaml",
    "schema_error",
    "why_campaign",
]
