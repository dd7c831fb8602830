"""Running a benchmark's build script into its build directory."""

from __future__ import annotations

import subprocess
from pathlib import Path


class BuildError(RuntimeError):
    pass


def build(script: str, build_dir: Path, log_file: Path) -> None:
    """Run `script` with bash -e in `build_dir`; its output goes to the log."""
    build_dir.mkdir(parents=True, exist_ok=True)
    script_file = build_dir / "build.sh"
    script_file.write_text("#!/bin/bash\nset -euo pipefail\n" + script + "\n")
    with Path(log_file).open("w") as log:
        proc = subprocess.run(["bash", str(script_file)], cwd=build_dir, stdout=log, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        tail = Path(log_file).read_text(errors="replace").strip().splitlines()[-5:]
        raise BuildError(f"build in {build_dir} failed with exit code {proc.returncode}; last lines of {log_file}:\n" + "\n".join(tail))
