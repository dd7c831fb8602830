"""Each run in a fresh container, the launcher inside it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from perfsnake import layout
from perfsnake.errors import CampaignError
from perfsnake.platforms.base import COMMAND_FILE, PLATFORM_FILE, command_output, remote_launch, render_plain
from perfsnake.platforms.local import Local
from perfsnake.shell_template import placeholders

#: Engine options the platform sets itself (or that would defeat it).
RESERVED = {
    "network",
    "net",
    "name",
    "rm",
    "volume",
    "v",
    "detach",
    "d",
    "interactive",
    "i",
    "workdir",
    "w",
    "entrypoint",
}


@dataclass(frozen=True)
class Container:
    """Each run in a fresh container of `image`, with the project's
    resources (builds, tools) and the run directory mounted at the same
    paths, so command.sh is the same as on the host. resources/ is writable
    as it is on the host: LevelDB, for one, opens its database (in the
    build) for writing even to read it."""

    image: str
    engine: str = "podman"
    network: str = "none"
    cpuset: str | None = None
    options: tuple[str, ...] = ()
    kind: str = "container"
    # A static launcher runs in any image, whatever its C library.
    launcher: str = layout.static_tool("psrun")
    _described: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], origin: str, key: str, variables: Sequence[str]) -> Container:
        """`type: container`: its options checked against what the platform sets itself, its cpuset's
        variables against the campaign's."""
        options = tuple(str(o) for o in spec.get("options") or ())  # type: ignore[attr-defined]
        for option in options:
            name = option[2:].split("=", 1)[0]
            if name in RESERVED:
                raise CampaignError(
                    origin,
                    f"{key}.options",
                    f"{option!r} is set by perfsnake itself (reserved: --{', --'.join(sorted(RESERVED))})",
                )
        cpuset = spec.get("cpuset")
        if cpuset is not None:
            try:
                names = placeholders(str(cpuset))
            except ValueError as exc:
                raise CampaignError(origin, f"{key}.cpuset", str(exc)) from None
            unknown = sorted(names - set(variables))
            if unknown:
                raise CampaignError(
                    origin,
                    f"{key}.cpuset",
                    f"{{{unknown[0]}}} is not a variable (variables: {', '.join(variables) or 'none'})",
                )
        return cls(image=str(spec["image"]), engine=str(spec.get("engine", "podman")), network=str(spec.get("network", "none")),
                   cpuset=None if cpuset is None else str(cpuset), options=options)  # fmt: skip

    def build_tag(self) -> str:
        return ""  # builds happen on the host and are mounted

    def fingerprint(self) -> dict[str, object] | None:
        return {"type": "container", "engine": self.engine, "image": self.image, "network": self.network,
                "cpuset": self.cpuset, "options": list(self.options)}  # fmt: skip

    def check(self, instruments: object, origin: str) -> None:
        return None

    def container_name(self, run_dir: Path) -> str:
        digest = hashlib.sha256(str(run_dir).encode()).hexdigest()[:16]
        return f"perfsnake-{digest}-{os.getpid()}"

    def run_argv(
        self, workdir: Path, run_dir: Path, timeout_s: float | None, params: Mapping[str, object]
    ) -> list[str]:
        resources = layout.resources_dir(workdir)
        argv = [self.engine, "run", "--rm", "-i", "--name", self.container_name(run_dir), f"--network={self.network}",
                "-v", f"{resources}:{resources}:rw", "-v", f"{run_dir}:{run_dir}:rw", "-w", str(run_dir)]  # fmt: skip
        if self.cpuset:
            argv.append(f"--cpuset-cpus={render_plain(self.cpuset, params)}")
        argv += [*self.options, self.image, str(workdir / self.launcher), "--watch-stdin", "--dir", str(run_dir)]
        if timeout_s:
            argv += ["--timeout", repr(float(timeout_s))]
        return [*argv, "--", str(run_dir / COMMAND_FILE)]

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        argv = self.run_argv(workdir, run_dir, timeout_s, params or {})
        try:
            code = remote_launch(argv, timeout_s)
        finally:
            # The engine client may be gone while the container lives on.
            grace = ["-t", "0"] if self.engine == "podman" else []  # docker rm has no -t
            subprocess.run([self.engine, "rm", "-f", *grace, self.container_name(run_dir)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
        facts = dict(self.describe())
        if self.cpuset:
            facts["cpuset"] = render_plain(self.cpuset, params or {})
        (run_dir / PLATFORM_FILE).write_text(json.dumps(facts, indent=1) + "\n")
        return code

    def build(self, script_file: Path, build_dir: Path, log_file: Path, inputs: list[Path]) -> int:
        return Local().build(script_file, build_dir, log_file, inputs)

    def local_inputs(self) -> list[str]:
        return [self.launcher]

    def placement(self) -> str:
        return ""  # its jobs start it from wherever they run

    def own_lock(self, workdir: Path) -> bool:
        return False  # a container runs on this machine

    def describe(self) -> dict[str, object]:
        """Engine and image (the image id pins the content), asked once per
        workflow process rather than after every run."""
        if not self._described:
            self._described.update(self.fingerprint() or {})
            self._described["image_id"] = command_output(
                [self.engine, "image", "inspect", "--format", "{{.Id}}", self.image]
            )
            self._described["engine_version"] = command_output([self.engine, "--version"])
        return self._described
