"""Snakemake entry point of the figure rule: one figure over several campaigns."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.script_helpers import logged, unflow  # noqa: E402
from perfsnake.stages.plots import draw_figure  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    outputs = [Path(sm.output.svg), Path(sm.output.png), Path(sm.output.pdf)]
    params = unflow(sm.params.figure)
    draw_figure(params["campaigns"], [Path(p) for p in sm.input.rows], params["spec"], params["info"], outputs)


logged(sm.log[0], main)
