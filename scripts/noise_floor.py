"""Snakemake entry point of the noise_floor rule (logic in perfsnake.stages.noise_floor)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import logged  # noqa: E402
from perfsnake.stages.noise_floor import write  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    write(
        json.loads(Path(sm.input.results).read_text()), CampaignInfo.from_json(sm.params.campaign), Path(sm.output[0])
    )


logged(sm.log[0], main)
