"""Snakemake entry point of the offcpu_folded rule (logic in perfsnake.instruments.offcpu)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.instruments.offcpu import fold_run  # noqa: E402
from perfsnake.script_helpers import logged  # noqa: E402

sm = snakemake  # noqa: F821

logged(sm.log[0], lambda: fold_run(Path(sm.input.status).parent, Path(sm.output[0])))
