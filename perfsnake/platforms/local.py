"""This machine: the launcher runs as a child of the workflow."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfsnake import layout
from perfsnake.hostlock import launcher_args
from perfsnake.platforms.base import write_command


@dataclass(frozen=True)
class Local:
    """This machine: the launcher runs as a child of the workflow."""

    kind: str = "local"
    launcher: str = layout.tool("psrun")

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], origin: str, key: str, variables: Sequence[str]) -> Local:
        """`type: local` takes no options."""
        return cls()

    def build_tag(self) -> str:
        return ""

    def fingerprint(self) -> dict[str, object] | None:
        return None

    def check(self, instruments: object, origin: str) -> None:
        return None

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        cmd_file = write_command(run_dir, script)
        lock_args, lock_fds = launcher_args()  # psrun holds the host lock too
        argv = [str(workdir / self.launcher), "--dir", str(run_dir), *lock_args]
        if timeout_s:
            argv += ["--timeout", repr(float(timeout_s))]
        return subprocess.run([*argv, "--", str(cmd_file)], pass_fds=lock_fds, check=False).returncode

    def build(self, script_file: Path, build_dir: Path, log_file: Path, inputs: list[Path]) -> int:
        with log_file.open("w") as log:
            return subprocess.run(
                ["bash", str(script_file)], cwd=build_dir, stdout=log, stderr=subprocess.STDOUT, check=False
            ).returncode

    def local_inputs(self) -> list[str]:
        """What a run needs built here: the launcher."""
        return [self.launcher]

    def own_lock(self, workdir: Path) -> bool:
        return False  # the run is this machine's
