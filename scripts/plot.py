"""Snakemake entry point of the plot rule (logic in perfsnake.stages.plots)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged, unflow  # noqa: E402
from perfsnake.stages.plots import draw  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    data = json.loads(Path(sm.input.rows).read_text())
    outputs = [Path(sm.output.svg), Path(sm.output.png), Path(sm.output.pdf)]
    info = CampaignInfo.from_dict(campaign_of(sm))
    draw(data["rows"], unflow(sm.params.plot), info, outputs, data.get("metadata"))


logged(sm.log[0], main)
