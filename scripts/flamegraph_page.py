"""Snakemake entry point of the flamegraph_page rule (logic in perfsnake.stages.tables)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged, unflow  # noqa: E402
from perfsnake.stages import tables  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    name = CampaignInfo.from_dict(campaign_of(sm)).name
    tables.write_flamegraph_page(unflow(sm.params.entries), Path(sm.output.flamegraphs), f"{name}: flame graphs")


logged(sm.log[0], main)
