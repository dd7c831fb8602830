"""Snakemake entry point of the report_pages rule (logic in perfsnake.stages.tables)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import campaign_of, logged  # noqa: E402
from perfsnake.stages import tables  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    info = CampaignInfo.from_dict(campaign_of(sm))
    out = {k: Path(getattr(sm.output, k)) for k in ("landing", "machine", "summary", "comparisons")}
    tables.write_pages(info, sm.params.description, Path(sm.input.rows), Path(sm.input.summary),
                       Path(sm.input.comparisons), [Path(t) for t in sm.input.tables], out)  # fmt: skip


logged(sm.log[0], main)
