"""Snakemake entry point of the summary_tables rule (logic in perfsnake.stages.tables)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged  # noqa: E402
from perfsnake.stages import tables  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    info = CampaignInfo.from_dict(campaign_of(sm))
    tables.write_summary_tables(
        Path(sm.input.summary), info, Path(sm.output.md), Path(sm.output.tex), Path(sm.output.org)
    )


logged(sm.log[0], main)
