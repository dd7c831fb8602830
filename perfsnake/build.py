"""Running a benchmark's build script into its build directory."""

from __future__ import annotations

import json
from pathlib import Path

from perfsnake.platforms import Local, make_platform


class BuildError(RuntimeError):
    pass


def build(script: str, build_dir: Path, log_file: Path, platform: str = "", inputs: list[str] | None = None) -> None:
    """Run `script` with bash -e in `build_dir` on the campaign's platform
    (JSON of its spec; empty: here); its output goes to the log."""
    build_dir.mkdir(parents=True, exist_ok=True)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    script_file = build_dir / "build.sh"
    script_file.write_text("#!/bin/bash\nset -euo pipefail\n" + script + "\n")
    where = make_platform(json.loads(platform), [], "build") if platform else Local()
    code = where.build(script_file, build_dir, log_file, [Path(p).resolve() for p in inputs or []])
    if code != 0:
        tail = Path(log_file).read_text(errors="replace").strip().splitlines()[-5:]
        raise BuildError(f"build in {build_dir} failed with exit code {code}; last lines of {log_file}:\n" + "\n".join(tail))
