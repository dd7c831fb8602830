"""Where a campaign's builds and runs execute: here, in a container, over ssh.

Each platform hands one run to a launcher (perfsnake/csrc/psrun) that spans the timed
interval on the machine that runs the benchmark, so starting a container or
an ssh connection is never part of what is measured. Across a container
engine or ssh the launcher's parent is not the workflow, so it watches its
standard input instead: the workflow holds the other end of that pipe, and a
killed workflow or a dropped connection stops the benchmark.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex
import subprocess
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from perfsnake import ROOT, layout, safefile
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text
from perfsnake.hostlock import launcher_args
from perfsnake.layout import c_source
from perfsnake.template import placeholders

if TYPE_CHECKING:
    from perfsnake.instruments import Instruments

PLATFORM_FILE = "platform.json"
#: Seconds the workflow waits beyond a run's own timeout before it gives up
#: on a remote launcher (which enforces the timeout itself).
BACKSTOP_S = 120.0
LAUNCHER_SOURCE = c_source("psrun", "psrun.c")


class PlatformError(RuntimeError):
    pass


def _write_command(run_dir: Path, script: str) -> Path:
    cmd_file = run_dir / "command.sh"
    safefile.write_text(cmd_file, script, mode=0o755)  # never through a link left by an earlier attempt
    return cmd_file


def _remote_launch(argv: list[str], timeout_s: float | None) -> int:
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


class PlatformProtocol(Protocol):
    """What the workflow asks of a platform (a new one implements these and
    registers a factory in PLATFORMS)."""

    kind: str

    def build_tag(self) -> str:
        """Suffix of build directories made there ("" for builds made here)."""
        ...

    def fingerprint(self) -> dict[str, object] | None:
        """What changes a run's execution there (part of the run's params)."""
        ...

    def check(self, instruments: object, origin: str) -> None:
        """Refuse, before any run, instruments the platform cannot carry."""
        ...

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        """Run command.sh under the launcher there; the launcher's exit status."""
        ...

    def build(self, script_file: Path, build_dir: Path, log_file: Path, inputs: list[Path]) -> int:
        """Run a build script there; its exit status."""
        ...

    def local_inputs(self) -> list[str]:
        """What a run needs built here first (e.g. the launcher)."""
        ...


@dataclass(frozen=True)
class Local:
    """This machine: the launcher runs as a child of the workflow."""

    kind: str = "local"
    launcher: str = "resources/bin/psrun"

    def build_tag(self) -> str:
        return ""

    def fingerprint(self) -> dict[str, object] | None:
        return None

    def check(self, instruments: object, origin: str) -> None:
        return None

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        cmd_file = _write_command(run_dir, script)
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


#: Engine options the platform sets itself (or that would defeat it).
_RESERVED = {
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
    launcher: str = "resources/bin/psrun-static"
    _described: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

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
        resources = workdir / "resources"
        argv = [self.engine, "run", "--rm", "-i", "--name", self.container_name(run_dir), f"--network={self.network}",
                "-v", f"{resources}:{resources}:rw", "-v", f"{run_dir}:{run_dir}:rw", "-w", str(run_dir)]  # fmt: skip
        if self.cpuset:
            argv.append(f"--cpuset-cpus={render_plain(self.cpuset, params)}")
        argv += [*self.options, self.image, str(workdir / self.launcher), "--watch-stdin", "--dir", str(run_dir)]
        if timeout_s:
            argv += ["--timeout", repr(float(timeout_s))]
        return [*argv, "--", str(run_dir / "command.sh")]

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        _write_command(run_dir, script)
        argv = self.run_argv(workdir, run_dir, timeout_s, params or {})
        try:
            code = _remote_launch(argv, timeout_s)
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

    def describe(self) -> dict[str, object]:
        """Engine and image (the image id pins the content), asked once per
        workflow process rather than after every run."""
        if not self._described:
            self._described.update(self.fingerprint() or {})
            self._described["image_id"] = _output([self.engine, "image", "inspect", "--format", "{{.Id}}", self.image])
            self._described["engine_version"] = _output([self.engine, "--version"])
        return self._described


def _output(argv: list[str], stdin: str | None = None) -> str | None:
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def render_plain(template: str, values: Mapping[str, object]) -> str:
    """{var} substitution for one argv item (no shell involved, no quoting)."""
    return re.sub(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: value_text(values[m.group(1)]), template)


_REMOTE_FACTS = r"""
echo "hostname=$(hostname)"
echo "uname=$(uname -a)"
echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "online_cpus=$(cat /sys/devices/system/cpu/online)"
echo "memory=$(grep -m1 MemTotal /proc/meminfo | awk '{print $2 " kB"}')"
echo "os_release=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "compiler=$(cc --version 2>/dev/null | head -1)"
echo "boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
"""

# The remote host's benchmark lock: the rule of perfsnake.hostlock, applied
# there, unless the campaign names the file ($1): one file for every user, in
# the first world-writable sticky directory, opened read-only (flock needs no
# more; a failed `exec` would end a POSIX shell, so it is checked first) and
# created mode 0666 with O_EXCL (noclobber) when missing. Waiting
# says so in one line.
_REMOTE_LOCK = r"""
if [ -n "$1" ]; then l=$1; mkdir -p "$(dirname "$l")" || exit 125; else
  for d in /run/lock /var/lock /tmp; do [ -d "$d" ] && [ -k "$d" ] && [ -w "$d" ] && break; done
  l=$d/perfsnake-bench.lock
fi
[ -e "$l" ] || (umask 0; set -C; : >"$l") 2>/dev/null
[ -r "$l" ] || exit 125
exec 9<"$l"
flock -n 9 || { echo "perfsnake: waiting for the benchmark lock of $(hostname) ($l)" >&2; flock 9; } || exit 125
"""


def _local_boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class Ssh:
    """Builds and runs on a remote Linux host. Local absolute paths are
    mirrored under `remote_dir` there; after each run the run directory is
    copied back, so collect and everything after it stay local."""

    host: str
    user: str | None = None
    port: int = 22
    identity: str | None = None
    remote_dir: str = "/tmp/perfsnake-remote"
    options: tuple[tuple[str, str], ...] = ()
    lock: str | None = None
    kind: str = "ssh"
    launcher: str = "resources/bin/psrun"
    _facts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def build_tag(self) -> str:
        # Remote builds are not the host's: a directory of their own.
        return f"ssh-{re.sub(r'[^A-Za-z0-9_.-]', '_', self.target)}-{self.port}~"

    def fingerprint(self) -> dict[str, object] | None:
        return {"type": "ssh", "target": self.target, "port": self.port, "remote_dir": self.remote_dir}

    def check(self, instruments: Instruments, origin: str) -> None:
        """Instruments that act on this machine or need local files cannot follow."""
        for hook in [*instruments.pre, *instruments.post]:
            if hook.kind != "cooldown":
                raise CampaignError(
                    origin,
                    "platform",
                    f"the {hook.kind} hook acts on this machine, not on {self.host} (only cooldown runs with platform ssh)",
                )
        if instruments.libs:
            raise CampaignError(
                origin, "platform", "shared_libs are not available with platform ssh (their paths are this machine's)"
            )
        if instruments.uses("perf_record"):
            raise CampaignError(
                origin,
                "platform",
                "perf_record needs the binaries next to perf.data; it is not available with platform ssh",
            )

    def ssh_argv(self) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-p", str(self.port)]
        if self.identity:
            argv += ["-i", os.path.expanduser(self.identity), "-o", "IdentitiesOnly=yes"]
        for key, value in self.options:
            argv += ["-o", f"{key}={value}"]
        return [*argv, "--", self.target]

    def remote(self, path: Path | str) -> str:
        return self.remote_dir.rstrip("/") + str(path)

    def map_paths(self, text: str, roots: list[Path]) -> str:
        """Local absolute paths under `roots` -> their remote mirrors, in one pass
        (so a root inside another is not mapped twice)."""
        prefixes = sorted({str(r) for r in roots}, key=len, reverse=True)
        pattern = re.compile("|".join(re.escape(p) for p in prefixes))
        return pattern.sub(lambda m: self.remote(m.group(0)), text)

    def _ssh(self, command: str, stdin: bytes | None = None, log: Path | None = None) -> subprocess.CompletedProcess:
        out = log.open("ab") if log else subprocess.PIPE
        try:
            proc = subprocess.run([*self.ssh_argv(), command], input=stdin, stdout=out,
                                  stderr=subprocess.STDOUT if log else subprocess.PIPE, check=False)  # fmt: skip
        finally:
            if log:
                out.close()  # type: ignore[union-attr]
        if proc.returncode == 255:
            detail = (proc.stderr or b"").decode(errors="replace").strip() if not log else f"see {log}"
            raise PlatformError(f"ssh to {self.target} port {self.port} failed: {detail}")
        return proc

    def upload(self, paths: list[Path]) -> None:
        """Copy local files and directories to their mirrors (tar over ssh)."""
        if not paths:
            return
        rel = [str(p.resolve()).lstrip("/") for p in paths]
        tar = subprocess.Popen(["tar", "-C", "/", "-cf", "-", "--", *rel], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        dest = shlex.quote(self.remote_dir)
        proc = subprocess.run([*self.ssh_argv(), f"mkdir -p {dest} && tar -C {dest} -xf -"], stdin=tar.stdout,
                              capture_output=True, check=False)  # fmt: skip
        tar.stdout.close()
        if tar.wait() != 0 or proc.returncode != 0:
            raise PlatformError(
                f"copying {len(paths)} path(s) to {self.target}:{self.remote_dir} failed: {proc.stderr.decode(errors='replace').strip()}"
            )

    def prepare(self, workdir: Path) -> dict[str, str]:
        """Once per workflow process: the launcher built there, the host's facts."""
        key = str(workdir)
        if key not in self._facts:
            launcher = shlex.quote(self.remote(workdir / self.launcher))
            source = shlex.quote(self.remote(LAUNCHER_SOURCE))
            self.upload([LAUNCHER_SOURCE])
            proc = self._ssh(f"mkdir -p $(dirname {launcher}) && cc -O2 -Wall -Wextra -Werror -o {launcher} {source}")
            if proc.returncode != 0:
                raise PlatformError(
                    f"building the launcher on {self.target} failed: {proc.stderr.decode(errors='replace').strip()}"
                )
            self._facts[key] = self.facts()
        return self._facts[key]

    def facts(self) -> dict[str, str]:
        text = _output([*self.ssh_argv(), _REMOTE_FACTS]) or ""
        return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)

    def launch(self, workdir: Path, run_dir: Path, script: str, timeout_s: float | None,
               params: Mapping[str, object] | None = None) -> int:  # fmt: skip
        facts = self.prepare(workdir)
        roots = [workdir, ROOT]
        remote_script = self.map_paths(script, roots)
        rdir = shlex.quote(self.remote(run_dir))
        launcher = shlex.quote(self.remote(workdir / self.launcher))
        timeout = f"--timeout {float(timeout_s)!r} " if timeout_s else ""
        # Fresh run directory there; command.sh passed as an argument because
        # standard input is the launcher's lifeline.
        command = (f"rm -rf {rdir} && mkdir -p {rdir} && cd {rdir} && printf %s {shlex.quote(remote_script)} > command.sh"
                   f" && chmod +x command.sh && exec {launcher} --watch-stdin --dir {rdir} {timeout}-- {rdir}/command.sh")  # fmt: skip
        if self.remote_lock(facts):  # one benchmark at a time there too, whoever else uses that host
            lock = (self.lock or "").replace("{host}", facts.get("hostname", self.host))
            command = f"set -- {shlex.quote(lock)}; {_REMOTE_LOCK}\n" + command.replace(
                f"exec {launcher} ", f"exec {launcher} --lock-fd 9 "
            )
        code = _remote_launch([*self.ssh_argv(), command], timeout_s)
        if code == 255:
            raise PlatformError(f"ssh to {self.target} port {self.port} failed during the run")
        self.fetch(run_dir)
        (run_dir / PLATFORM_FILE).write_text(
            json.dumps({**(self.fingerprint() or {}), "remote_run_dir": self.remote(run_dir), **facts}, indent=1) + "\n"
        )
        return code

    def remote_lock(self, facts: Mapping[str, str]) -> bool:
        """Whether runs take the remote host's lock: when named, or when that host is another machine
        (on this one, the workflow's own lock already serialises them, and taking it twice would deadlock)."""
        return self.lock is not None or facts.get("boot_id", "") != _local_boot_id()

    def fetch(self, run_dir: Path) -> None:
        """The remote run directory's files into the local one."""
        proc = subprocess.run(
            [*self.ssh_argv(), f"tar -C {shlex.quote(self.remote(run_dir))} -cf - ."], capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise PlatformError(
                f"fetching {self.remote(run_dir)} from {self.target} failed: {proc.stderr.decode(errors='replace').strip()}"
            )
        with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
            tar.extractall(run_dir, filter="data")  # refuses links or paths leaving run_dir

    def build(self, script_file: Path, build_dir: Path, log_file: Path, inputs: list[Path]) -> int:
        workdir = layout.build_root_of(build_dir)
        self.upload(inputs)
        script = self.map_paths(script_file.read_text(), [workdir, ROOT])
        rbuild = shlex.quote(self.remote(build_dir))
        log_file.write_text(f"# building on {self.target} in {self.remote(build_dir)}\n")
        proc = self._ssh(
            f"rm -rf {rbuild} && mkdir -p {rbuild} && cd {rbuild} && bash -s", stdin=script.encode(), log=log_file
        )
        (build_dir / PLATFORM_FILE).write_text(
            json.dumps({**(self.fingerprint() or {}), "remote_build_dir": self.remote(build_dir)}, indent=1) + "\n"
        )
        return proc.returncode

    def local_inputs(self) -> list[str]:
        return []  # the launcher is compiled there (prepare)


Platform = Local | Container | Ssh


def _container(spec: Mapping[str, object], variables: list[str], origin: str) -> Container:
    options = tuple(str(o) for o in spec.get("options") or ())  # type: ignore[attr-defined]
    for option in options:
        name = option[2:].split("=", 1)[0]
        if name in _RESERVED:
            raise CampaignError(
                origin,
                "platform.options",
                f"{option!r} is set by perfsnake itself (reserved: --{', --'.join(sorted(_RESERVED))})",
            )
    cpuset = spec.get("cpuset")
    if cpuset is not None:
        try:
            names = placeholders(str(cpuset))
        except ValueError as exc:
            raise CampaignError(origin, "platform.cpuset", str(exc)) from None
        unknown = sorted(names - set(variables))
        if unknown:
            raise CampaignError(
                origin,
                "platform.cpuset",
                f"{{{unknown[0]}}} is not a variable (variables: {', '.join(variables) or 'none'})",
            )
    return Container(image=str(spec["image"]), engine=str(spec.get("engine", "podman")), network=str(spec.get("network", "none")),
                     cpuset=None if cpuset is None else str(cpuset), options=options)  # fmt: skip


def _ssh(spec: Mapping[str, object], variables: list[str], origin: str) -> Ssh:
    remote_dir = str(spec.get("remote_dir", "/tmp/perfsnake-remote"))
    if ".." in remote_dir.split("/") or remote_dir.rstrip("/") == "":
        raise CampaignError(
            origin, "platform.remote_dir", f"{remote_dir!r} must be an absolute directory other than / without '..'"
        )
    options = tuple((str(k), value_text(v)) for k, v in (spec.get("options") or {}).items())  # type: ignore[attr-defined]
    for key, value in options:
        if any(c.isspace() for c in value) or not value:
            raise CampaignError(origin, f"platform.options.{key}", f"{value!r} must be one word")
    user, identity, lock = spec.get("user"), spec.get("identity"), spec.get("lock")
    return Ssh(host=str(spec["host"]), user=None if user is None else str(user), port=int(str(spec.get("port", 22))),
               identity=None if identity is None else str(identity), remote_dir=remote_dir, options=options,
               lock=None if lock is None else str(lock))  # fmt: skip


#: The platform catalog: `platform.type` -> factory (the schema's name list is
#: checked against it by tests/test_registries.py).
PLATFORMS: dict[str, Callable[[Mapping[str, object], list[str], str], Platform]] = {
    "local": lambda spec, variables, origin: Local(),
    "container": _container,
    "ssh": _ssh,
}


def make_platform(spec: Mapping[str, object], variables: list[str], origin: str) -> Platform:
    """The platform of a campaign (already schema-checked), or a CampaignError."""
    return PLATFORMS[str(spec.get("type", "local"))](spec, variables, origin)
