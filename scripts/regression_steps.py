"""Snakemake entry point of the regression_steps rule (logic in perfsnake.stages.regression)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged  # noqa: E402
from perfsnake.stages import regression  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    results = json.loads(Path(sm.input.results).read_text())
    info = CampaignInfo.from_dict(campaign_of(sm))
    regression.write_steps(Path(sm.output[0]), regression.steps_table(results, info))


logged(sm.log[0], main)
