"""Snakemake entry point of the why_pairs checkpoint (logic in perfsnake.stages.why)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.script_helpers import logged, unflow  # noqa: E402
from perfsnake.stages import why  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    why.write_pairs(Path(sm.input.comparisons), int(unflow(sm.params.spec)["top"]), Path(sm.output[0]))


logged(sm.log[0], main)
