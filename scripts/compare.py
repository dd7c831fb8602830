"""Snakemake entry point of the compare_with rule (logic in perfsnake.compare)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.compare import load_sides, state_sentence, write  # noqa: E402
from perfsnake.script_helpers import logged  # noqa: E402
from perfsnake.stages.tables import write_compare_page  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    # The earlier results first: every ratio is against the earliest side.
    sides = load_sides([*sm.params.earlier, str(Path(sm.input.csv).parent)])
    table, differences, state, _ = write(sides, Path(sm.output.csv).parent)
    write_compare_page(sides, table, differences, state, Path(sm.output.page), state_sentence(sides, state))


logged(sm.log[0], main)
