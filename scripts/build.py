"""Snakemake entry point of the build rule (logic in perfsnake.build)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.build import build  # noqa: E402

build(
    snakemake.params.script,  # noqa: F821
    Path(snakemake.output[0]).resolve(),  # noqa: F821
    Path(snakemake.log[0]),  # noqa: F821
    snakemake.params.platform,  # noqa: F821
    list(snakemake.input),  # noqa: F821
)
