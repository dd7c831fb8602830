"""Snakemake entry point of the plot rule (logic in perfsnake.stages.report)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.stages.report import draw  # noqa: E402
from perfsnake.scripting import logged  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    rows = json.loads(Path(sm.input.rows).read_text())["rows"]
    info = json.loads(sm.params.campaign)
    opts = {"confidence": 0.95, "statistic": "mean", **info.get("statistics", {})}
    draw(rows, json.loads(sm.params.plot), info["pretty"], Path(sm.output.svg), Path(sm.output.png), opts["confidence"], opts["statistic"])


logged(sm.log[0], main)
