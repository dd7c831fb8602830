"""Snakemake entry point of the build rule (logic in perfsnake.stages.build)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.stages.build import BuildError, build_from_spec  # noqa: E402

sm = snakemake  # noqa: F821
try:
    build_from_spec(sm.params.spec, sm.output[0], sm.log[0], list(sm.input), sm.threads)
except BuildError as e:  # what failed and the log's last lines, without a traceback
    sys.exit(f"perfsnake: error: {e}")
