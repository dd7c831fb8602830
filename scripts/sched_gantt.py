"""Snakemake entry point of the sched_gantt rule (logic in perfsnake.stages.sched)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.script_helpers import logged  # noqa: E402
from perfsnake.stages.sched import draw_gantt  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    draw_gantt(Path(sm.input.status).parent, [Path(sm.output.svg), Path(sm.output.png)], sm.params.title)


logged(sm.log[0], main)
