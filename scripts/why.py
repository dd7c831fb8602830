"""Snakemake entry point of the why_pairs, why_symbols and why_report rules
(logic in perfsnake.stages.why)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.scripting import logged, unflow  # noqa: E402
from perfsnake.stages import why  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    spec = unflow(sm.params.spec)
    # Dispatch on the outputs, not on the rule's name (a module may prefix it).
    if hasattr(sm.input, "comparisons"):
        why.write_pairs(Path(sm.input.comparisons), int(spec["top"]), Path(sm.output[0]))
    elif hasattr(sm.output, "page"):
        why.write_report(sm.wildcards.campaign, Path(sm.input.files[0]), spec, Path(sm.output.md), Path(sm.output.page))
    else:
        why.write_symbols(
            Path(sm.input.a), Path(sm.input.b), int(spec["symbols"]), int(spec["runs"]), Path(sm.output[0])
        )


logged(sm.log[0], main)
