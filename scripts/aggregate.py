"""Snakemake entry point of the aggregate rule (logic in perfsnake.stages.aggregate)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import logged  # noqa: E402
from perfsnake.stages.aggregate import aggregate  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    aggregate(
        sm.input.results,
        CampaignInfo.from_json(sm.params.campaign),
        Path(sm.output.csv),
        Path(sm.output.json),
        Path(sm.output.commands),
    )


logged(sm.log[0], main)
