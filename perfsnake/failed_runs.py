"""Runs that failed or timed out, and setting their attempts aside for a re-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from perfsnake import layout
from perfsnake.planning import CampaignIndex

#: What a re-run replaces; kept under previous/attempt-<k>/ so nothing is lost.
KEPT_FILES = ("status.json", ".status.final", "result.json", "stdout.txt", "stderr.txt", "command.sh")


def failed_runs(plan: CampaignIndex) -> list[Path]:
    """Run directories whose status is failed or timeout."""
    out = []
    for name, c in plan.campaigns.items():
        for record in c.records:
            for i in range(1, c.max_runs + 1):
                rdir = Path(layout.run_dir(name, record.path, i))
                for candidate in ("result.json", "status.json"):
                    path = rdir / candidate
                    if path.exists():
                        if json.loads(path.read_text()).get("status") != "ok":
                            out.append(rdir)
                        break
    return out


def set_aside(rdir: Path) -> Path:
    """Move a failed attempt's files to previous/attempt-K; nothing is lost."""
    k = 1
    while (rdir / "previous" / f"attempt-{k}").exists():
        k += 1
    dest = rdir / "previous" / f"attempt-{k}"
    dest.mkdir(parents=True)
    for name in KEPT_FILES:
        if (rdir / name).exists():
            shutil.move(str(rdir / name), str(dest / name))
    return dest
