"""Each run in a fresh container, the launcher inside it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import layout
from perfsnake.errors import CampaignError
from perfsnake.instruments.base import Context
from perfsnake.machine.sysinfo import find_program, parse_cpu_list
from perfsnake.platforms.base import COMMAND_FILE, PLATFORM_FILE, command_output, remote_launch, render_plain
from perfsnake.platforms.local import Local
from perfsnake.shell_template import placeholders

if TYPE_CHECKING:
    from perfsnake.benchmarks.base import Benchmark
    from perfsnake.instruments import Instruments
    from perfsnake.instruments.wrappers import Wrapper

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


#: where the wrapper probes run inside the image
PROBE_DIR = "/tmp/perfsnake-probe"
#: what each probe printed last: (engine, image id, network, options, prefix) -> None or (status, reason)
_PROBED: dict[tuple[object, ...], tuple[int, str] | None] = {}
#: the lines of a failed probe's stderr that say why, in order of preference
_WHY = ("not found", "not permitted", "permission", "unable to", "no such")


def _probe(engine: str, image_id: str, network: str, options: tuple[str, ...],
           commands: list[tuple[str, ...]]) -> dict[tuple[str, ...], tuple[int, str]]:  # fmt: skip
    """The commands that fail in the image: command -> (exit status, the line
    of its stderr that says why). The ones not asked before run in one
    container; a process asks each once."""
    key = (engine, image_id, network, options)
    todo = sorted({c for c in commands if (*key, c) not in _PROBED})
    if todo:
        script = [f"mkdir -p {PROBE_DIR}/{i} && cd {PROBE_DIR}/{i} && {shlex.join(c)} >out 2>err; "
                  f"echo \"@@ {i} $?\"; cat err" for i, c in enumerate(todo)]  # fmt: skip
        proc = subprocess.run([engine, "run", "--rm", f"--network={network}", *options, image_id, "/bin/sh", "-c",
                               "\n".join(script)], capture_output=True, text=True, check=False)  # fmt: skip
        parts = re.split(r"^@@ (\d+) (\d+)$", proc.stdout, flags=re.M)
        said = {int(parts[i]): (int(parts[i + 1]), parts[i + 2]) for i in range(1, len(parts) - 2, 3)}
        for i, c in enumerate(todo):
            status, err = said.get(i, (proc.returncode, proc.stderr))
            _PROBED[(*key, c)] = None if status == 0 else (status, _reason(err))
    return {c: got for c in commands if (got := _PROBED[(*key, c)])}


def _reason(err: str) -> str:
    lines = [line.strip() for line in err.splitlines() if line.strip() and line.strip() != "Error:"]
    for word in _WHY:
        line = next((line for line in lines if word in line.lower()), None)
        if line:
            return line[:200]
    return lines[-1][:200] if lines else "no message"


def _hint(reason: str) -> str:
    if "perf_event" in reason or "permission to enable" in reason.lower():
        return " (the engine's seccomp profile forbids perf_event_open: the platform's options: [--security-opt=seccomp=unconfined] allow it)"
    if "not found" in reason:
        return " (scripts/setup/container.sh's PERFSNAKE_IMAGE_PACKAGES adds Debian packages to the image)"
    return ""


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

    def check_here(
        self, benchmark: Benchmark, instruments: Instruments, records: Sequence[Mapping[str, object]], origin: str
    ) -> None:
        """The engine, the image, the benchmark's programs in the image, and
        each wrapper run once in the image around `true` as a run would run
        it, so that a program the image lacks, or
        perf_event_open forbidden by the engine's seccomp profile, is refused
        here in one line rather than failing every run."""
        if find_program(self.engine) is None:
            raise CampaignError(origin, "platform.engine",
                                f"{self.engine} is not installed (scripts/setup/container.sh installs podman)")  # fmt: skip
        image = subprocess.run([self.engine, "image", "inspect", "--format", "{{.Id}}", self.image],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if image.returncode != 0:
            raise CampaignError(origin, "platform.image", f"{self.image} is not among {self.engine}'s images "
                                "(scripts/setup/container.sh builds localhost/perfsnake-bookworm:latest)")  # fmt: skip
        # The programs the benchmark starts (a packaged server, a tool) and
        # each wrapper around `true`, in one container.
        programs: dict[tuple[str, ...], tuple[str, str]] = {
            ("test", "-x", p): (p, package) for p, package in benchmark.programs().items()
        }
        probes: list[tuple[Wrapper, tuple[str, ...]]] = []
        for i, wrapper in enumerate(instruments.wrappers):
            # The first record that gives it something to run (an empty cpu_list pins nothing).
            ctx = (Context(r, Path(f"{PROBE_DIR}/{i}")) for r in records or [{}])
            argv = next((tuple(a) for c in ctx if (a := wrapper.prefix(c))), ())
            if argv:
                probes.append((wrapper, (*argv, "true")))
        failed = _probe(self.engine, image.stdout.strip(), self.network, self.options,
                        [*programs, *(c for _, c in probes)])  # fmt: skip
        if self.cpuset:
            self._check_cpuset(image.stdout.strip(), records, origin)
        for command, (program, package) in programs.items():
            if command in failed:
                raise CampaignError(origin, "platform.image", f"{self.image} has no {program}, which the benchmark "
                                    f"{benchmark.name} runs (add {package} to scripts/setup/container.sh's "
                                    "PERFSNAKE_IMAGE_PACKAGES and rebuild the image with PERFSNAKE_REBUILD_IMAGE=1)")  # fmt: skip
        for wrapper, command in probes:
            if command in failed:
                status, reason = failed[command]
                raise CampaignError(origin, "platform", f"{wrapper.key} ({wrapper.kind}) cannot run in the image "
                                    f"{self.image}: {reason} (exit status {status}){_hint(reason)}")  # fmt: skip

    def _check_cpuset(self, image_id: str, records: Sequence[Mapping[str, object]], origin: str) -> None:
        """The engine may accept --cpuset-cpus and not apply it (rootless
        podman without the cpuset cgroup controller delegated to the user):
        a container started with the first record's cpuset says which CPUs
        it may use, and a difference is refused rather than left to measure
        unplaced runs."""
        wanted = render_plain(str(self.cpuset), dict(records[0]) if records else {})
        proc = subprocess.run([self.engine, "run", "--rm", f"--network={self.network}", f"--cpuset-cpus={wanted}",
                               *self.options, image_id, "grep", "^Cpus_allowed_list:", "/proc/self/status"],
                              capture_output=True, text=True, check=False)  # fmt: skip
        seen = proc.stdout.partition(":")[2].strip()
        try:
            applied = proc.returncode == 0 and set(parse_cpu_list(seen)) == set(parse_cpu_list(wanted))
        except ValueError:
            applied = False
        if not applied:
            said = f"a container saw CPUs {seen}" if proc.returncode == 0 else _reason(proc.stderr)
            raise CampaignError(origin, "platform.cpuset", f"{self.engine} did not apply --cpuset-cpus={wanted} ({said}): "
                                "a normal user's podman needs the cpuset cgroup controller delegated to it "
                                "(systemd: Delegate=cpuset for user@.service), or run as root")  # fmt: skip

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
