"""A throw-away sshd on 127.0.0.1 at a free high port, with generated keys."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"


@dataclass
class Sshd:
    port: int
    key: Path
    proc: subprocess.Popen

    def platform(self, remote_dir: Path) -> dict:
        return {
            "type": "ssh", "host": "127.0.0.1", "user": os.environ.get("USER") or "root", "port": self.port,
            "identity": str(self.key), "remote_dir": str(remote_dir),
            "options": {"StrictHostKeyChecking": "no", "UserKnownHostsFile": "/dev/null", "LogLevel": "ERROR"},
        }  # fmt: skip

    def run(self, command: str) -> str:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "LogLevel=ERROR", "-i", str(self.key), "-p", str(self.port), "127.0.0.1", command]  # fmt: skip
        return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(directory: Path, port: int | None = None) -> Sshd:
    """A server in `directory` (its keys made once: a restart on the same port is the same host)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "user_key"):
        if not (directory / name).exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / name)], check=True)
    shutil.copy(directory / "user_key.pub", directory / "authorized_keys")
    port = port or free_port()
    config = directory / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {directory / 'host_key'}\nPidFile {directory / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {directory / 'authorized_keys'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
    )
    if os.geteuid() == 0:  # root's sshd chroots its unprivileged child there; a user's needs none
        Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(directory / "sshd.log")])
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"sshd did not start: {(directory / 'sshd.log').read_text(errors='replace')}"
                ) from None
            time.sleep(0.1)
    return Sshd(port, directory / "user_key", proc)


def stop(server: Sshd) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
