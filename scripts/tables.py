"""Snakemake entry point of the summary_tables and report page rules
(logic in perfsnake.stages.tables)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.scripting import campaign_of, logged, unflow  # noqa: E402
from perfsnake.stages import tables  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    info = CampaignInfo.from_dict(campaign_of(sm))
    name = info.name
    # Dispatch on the outputs, not on the rule's name, which a Snakemake
    # module may prefix (`use rule * from perfsnake as ps_*`).
    if hasattr(sm.output, "md"):
        tables.write_summary_tables(
            Path(sm.input.summary), info, Path(sm.output.md), Path(sm.output.tex), Path(sm.output.org)
        )
    elif hasattr(sm.output, "landing"):
        out = {k: Path(getattr(sm.output, k)) for k in ("landing", "machine", "summary", "comparisons", "significant")}
        tables.write_pages(info, sm.params.description, Path(sm.input.rows), Path(sm.input.summary), Path(sm.input.comparisons),
                           Path(sm.input.significant), [Path(t) for t in sm.input.tables], out)  # fmt: skip
    elif hasattr(sm.output, "overhead"):
        tables.csv_html(Path(sm.input.overhead), Path(sm.output.overhead), f"{name}: instrument overhead")
    elif hasattr(sm.output, "floor"):
        tables.csv_html(Path(sm.input.floor), Path(sm.output.floor), f"{name}: layout noise floor")
    else:
        tables.write_flamegraph_page(unflow(sm.params.entries), Path(sm.output.flamegraphs), f"{name}: flame graphs")


logged(sm.log[0], main)
