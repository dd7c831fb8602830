"""What every platform is: the interface the workflow calls, and the helpers
the platforms share (the command file, a launcher behind an engine or ssh)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, Self

from perfsnake import safefile
from perfsnake.escape import value_text

PLATFORM_FILE = "platform.json"
#: Seconds the workflow waits beyond a run's own timeout before it gives up
#: on a remote launcher (which enforces the timeout itself).
BACKSTOP_S = 120.0


class PlatformError(RuntimeError):
    pass


class PlatformProtocol(Protocol):
    """What the workflow asks of a platform (a new one implements these, with a
    `from_spec` classmethod, and takes its line in perfsnake.platforms.CATALOG)."""

    kind: str

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], origin: str, key: str, variables: Sequence[str]) -> Self:
        """One from the campaign's `platform:` (already schema-checked), or a CampaignError at `key`."""
        ...

    def build_tag(self) -> str:
        """Suffix of build directories made there ("" for builds made here)."""
        ...

    def fingerprint(self) -> dict[str, object] | None:
        """What changes a run's execution there (part of the run's params)."""
        ...

    def check(self, instruments: object, origin: str) -> None:
        """Refuse, before any run, instruments the platform cannot carry."""
        ...

    def check_here(
        self, benchmark: object, instruments: object, records: Sequence[Mapping[str, object]], origin: str
    ) -> None:
        """Refuse, before any run, what this machine's side of the platform
        lacks for these instruments (asked only when the machine is checked)."""
        ...

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        """Run the run directory's command.sh (written already; `script` is its
        text) under the launcher there; the launcher's exit status."""
        ...

    def build(self, script_file: Path, build_dir: Path, log_file: Path, inputs: list[Path]) -> int:
        """Run a build script there; its exit status."""
        ...

    def local_inputs(self) -> list[str]:
        """What a run needs built here first (e.g. the launcher)."""
        ...

    def placement(self) -> str:
        """sbatch options that place its jobs on a cluster (a Slurm node's), "" when none."""
        ...

    def own_lock(self, workdir: Path) -> bool:
        """Whether a run there takes the benchmark lock of the machine it runs
        on instead of this one's (ssh to another machine, or a named lock)."""
        ...


#: the run's script in its run directory, written before a platform launches it (perfsnake.stages.run.execute)
COMMAND_FILE = "command.sh"


def write_command(run_dir: Path, script: str) -> Path:
    cmd_file = run_dir / COMMAND_FILE
    safefile.write_text(cmd_file, script, mode=0o755)  # never through a link left by an earlier attempt
    return cmd_file


def remote_launch(argv: list[str], timeout_s: float | None) -> int:
    """Run a launcher behind an engine or ssh; its stdin pipe stays open until it ends."""
    limit = None if timeout_s is None else timeout_s + BACKSTOP_S
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE)
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()  # closes the pipe: the remote launcher stops the benchmark
        proc.wait()
        raise PlatformError(f"{argv[0]} did not return {BACKSTOP_S:.0f} s after the run's timeout") from None
    finally:
        if proc.stdin:
            proc.stdin.close()


def command_output(argv: list[str], stdin: str | None = None) -> str | None:
    """A short command's standard output, stripped; None when it cannot run or fails."""
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def render_plain(template: str, values: Mapping[str, object]) -> str:
    """{var} substitution for one argv item (no shell involved, no quoting)."""
    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: value_text(values[m.group(1)]), template)
