"""Snakemake entry point of the overhead rule (logic in perfsnake.stages.analysis)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.contract import CampaignInfo  # noqa: E402
from perfsnake.script_helpers import logged  # noqa: E402
from perfsnake.stages.analysis import overhead_rows  # noqa: E402
from perfsnake.statistics.records import stat_column, write_csv  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    info = CampaignInfo.from_json(sm.params.campaign)
    main_results = json.loads(Path(sm.input.main).read_text())
    controls = {
        variant: json.loads(Path(path).read_text())
        for variant, path in zip(json.loads(sm.params.variants), sm.input.controls)
    }
    rows = overhead_rows(main_results, controls, info)
    first = [stat_column(c, info.variables) for c in ("instruments", "metric")]
    write_csv(Path(sm.output[0]), rows, [*info.variables, *first])


logged(sm.log[0], main)
