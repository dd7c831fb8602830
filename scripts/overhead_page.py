"""Snakemake entry point of the overhead_page rule (logic in perfsnake.stages.tables)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged  # noqa: E402
from perfsnake.stages import tables  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    name = CampaignInfo.from_dict(campaign_of(sm)).name
    tables.write_csv_page(Path(sm.input.overhead), Path(sm.output.overhead), f"{name}: instrument overhead")


logged(sm.log[0], main)
