"""Snakemake entry point of the why_report rule (logic in perfsnake.stages.why)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.script_helpers import logged, unflow  # noqa: E402
from perfsnake.stages import why  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    spec = unflow(sm.params.spec)
    why.write_report(sm.wildcards.campaign, Path(sm.input.files[0]), spec, Path(sm.output.md), Path(sm.output.page))


logged(sm.log[0], main)
