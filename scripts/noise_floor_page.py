"""Snakemake entry point of the noise_floor_page rule (logic in perfsnake.stages.tables)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged  # noqa: E402
from perfsnake.stages import tables  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    name = CampaignInfo.from_dict(campaign_of(sm)).name
    tables.write_csv_page(Path(sm.input.floor), Path(sm.output.floor), f"{name}: layout noise floor")


logged(sm.log[0], main)
