"""Snakemake entry point of the regression_figure rule (logic in perfsnake.stages.regression)."""

import csv
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
    with open(sm.input.steps, newline="") as f:
        steps = [{**r, "significant": r["significant"] == "True"} for r in csv.DictReader(f)]
    outputs = [Path(sm.output.svg), Path(sm.output.png), Path(sm.output.pdf)]
    regression.draw(results, info, sm.wildcards.metric, steps, outputs, info.units.get(sm.wildcards.metric))


logged(sm.log[0], main)
