"""Builds and runs on a remote Linux host over ssh; each run directory comes back."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfsnake import ROOT, layout, safefile
from perfsnake.errors import CampaignError
from perfsnake.escape import value_text
from perfsnake.layout import c_source
from perfsnake.platforms.base import PLATFORM_FILE, PlatformError, command_output, remote_launch

if TYPE_CHECKING:
    from perfsnake.instruments import Instruments

LAUNCHER_SOURCE = c_source("psrun", "psrun.c")

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


def fleet_spec(spec: Mapping[str, object], name: str) -> dict[str, object]:
    """The platform of one host of a fleet: the platform's settings, then the
    host's own (`options` merged key by key)."""
    own = dict(spec["hosts"][name])  # type: ignore[index]
    base = {k: v for k, v in spec.items() if k != "hosts"}
    options = {**(base.get("options") or {}), **(own.pop("options", None) or {})}  # type: ignore[dict-item]
    return {**base, **own, "options": options}


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
    launcher: str = layout.tool("psrun")
    _facts: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], origin: str, key: str, variables: Sequence[str]) -> Ssh:
        """`type: ssh`: a remote directory that stays under its root, ssh options of one word each.
        A fleet's platform (`hosts:`, no `host`) is its first host's."""
        if "host" not in spec:
            hosts = spec.get("hosts")
            if not isinstance(hosts, Mapping) or not hosts:
                raise CampaignError(origin, key, "'host' is a required property (or 'hosts', for a fleet)")
            name = next(iter(hosts))
            return cls.from_spec(fleet_spec(spec, str(name)), origin, f"{key}.hosts.{name}", variables)
        remote_dir = str(spec.get("remote_dir", "/tmp/perfsnake-remote"))
        if ".." in remote_dir.split("/") or remote_dir.rstrip("/") == "":
            raise CampaignError(
                origin, f"{key}.remote_dir", f"{remote_dir!r} must be an absolute directory other than / without '..'"
            )
        options = tuple((str(k), value_text(v)) for k, v in (spec.get("options") or {}).items())  # type: ignore[attr-defined]
        for name, value in options:
            if any(c.isspace() for c in value) or not value:
                raise CampaignError(origin, f"{key}.options.{name}", f"{value!r} must be one word")
        user, identity, lock = spec.get("user"), spec.get("identity"), spec.get("lock")
        return cls(host=str(spec["host"]), user=None if user is None else str(user), port=int(str(spec.get("port", 22))),
                   identity=None if identity is None else str(identity), remote_dir=remote_dir, options=options,
                   lock=None if lock is None else str(lock))  # fmt: skip

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

    def check_here(
        self, benchmark: object, instruments: Instruments, records: Sequence[Mapping[str, object]], origin: str
    ) -> None:
        return None  # the remote host is asked when a job prepares it (prepare)

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
        text = command_output([*self.ssh_argv(), _REMOTE_FACTS]) or ""
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
        code = remote_launch([*self.ssh_argv(), command], timeout_s)
        if code == 255:
            raise PlatformError(f"ssh to {self.target} port {self.port} failed during the run")
        self.fetch(run_dir)
        (run_dir / PLATFORM_FILE).write_text(
            json.dumps({**(self.fingerprint() or {}), "remote_run_dir": self.remote(run_dir), **facts}, indent=1) + "\n"
        )
        return code

    def placement(self) -> str:
        return ""  # its jobs start it from wherever they run

    def own_lock(self, workdir: Path) -> bool:
        return self.remote_lock(self.prepare(workdir))

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
            safefile.extract_tar(tar, run_dir)  # refuses links or paths leaving run_dir

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
