"""Snakemake entry point of the history rule (logic in perfsnake.history.record)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.history.record import record  # noqa: E402
from perfsnake.script_helpers import logged  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    record(
        Path(sm.input.rows).parent,
        sm.params.store,
        bool(sm.params.strict),
        Path(sm.output.record),
        Path(sm.output.page),
    )


logged(sm.log[0], main)
