"""Snakemake entry point of the why_symbols rule (logic in perfsnake.stages.why)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.script_helpers import logged, unflow  # noqa: E402
from perfsnake.stages import why  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    spec = unflow(sm.params.spec)
    why.write_symbols(Path(sm.input.a), Path(sm.input.b), int(spec["symbols"]), int(spec["runs"]), Path(sm.output[0]))


logged(sm.log[0], main)
