"""Snakemake entry point of the analyse rule (logic in perfsnake.stages.analysis)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821

from perfsnake.floor import read as read_floors  # noqa: E402
from perfsnake.gates import baseline_dirs  # noqa: E402
from perfsnake.scripting import logged  # noqa: E402
from perfsnake.stages.analysis import analyse  # noqa: E402

sm = snakemake  # noqa: F821


def main() -> None:
    results = json.loads(Path(sm.input.results).read_text())
    info = json.loads(sm.params.campaign)
    dirs = baseline_dirs(info.get("references") or [])
    baselines = {d: json.loads(Path(f).read_text()) for d, f in zip(dirs, sm.input.baselines)}
    floors = read_floors(Path(sm.input.floor[0]), list(info["variables"])) if sm.input.floor else None
    analyse(results, info, Path(sm.output.summary), Path(sm.output.comparisons), Path(sm.output.significant),
            Path(sm.output.gates), baselines, floors)  # fmt: skip


logged(sm.log[0], main)
