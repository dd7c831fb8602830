"""Snakemake entry point of the fetch rule (logic in perfsnake.stages.fetch)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.stages.fetch import fetch  # noqa: E402

with open(snakemake.log[0], "w") as log:  # noqa: F821
    fetch(json.loads(snakemake.params.spec), Path(snakemake.output[0]), log)  # noqa: F821
