"""PostgreSQL (Debian 15): a private cluster per run loaded by `pgbench`.

Each run (perfsnake.benchmarks.server) initialises a cluster in a private
directory (`initdb --no-sync`, trust authentication for a `bench` role),
starts `postgres` listening only on a Unix socket there, waits until
`pg_isready` says so, fills pgbench's tables (`pgbench -i -s <scale>`), runs
pgbench for the campaign's duration and stops the server (fast shutdown). As
root, the server runs as `nobody` (PostgreSQL refuses root). Server settings
are variables: `shared_buffers`, `fsync`, `synchronous_commit`.

Variables: `mode` (pgbench's built-in script: `tpcb-like`, `simple-update`,
`select-only`), `scale` (1), `clients` (1), `threads` (1), `time_s` (the
campaign's duration_s, whole seconds), `shared_buffers` (`128MB`), `fsync`
and `synchronous_commit` (`on`/`off`). Metrics: `tps`, `latency_avg_ms`,
`transactions`, `failed_transactions`, `connection_ms`.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from perfsnake.benchmarks.server import ServerTool, words
from perfsnake.escape import value_text

MODES = ("tpcb-like", "simple-update", "select-only")
_SIZE = re.compile(r"^[0-9]+(kB|MB|GB)?$")
_FIELDS = {
    "tps": re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)$", re.M),
    "latency_avg_ms": re.compile(r"^latency average = ([0-9.]+) ms$", re.M),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)", re.M),
    "connection_ms": re.compile(r"^initial connection time = ([0-9.]+) ms$", re.M),
}
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)


def bindir() -> Path | None:
    """The newest installed server's programs (Debian keeps them out of PATH)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                   if p.parent.parent.name.isdigit() else 0)  # fmt: skip
    return found[-1].parent if found else None


class PostgresqlBenchmark(ServerTool):
    name = "postgresql"
    executable = "pgbench"
    package = "postgresql-15"
    run_defaults = {"mode": "tpcb-like", "scale": 1, "clients": 1, "threads": 1, "shared_buffers": "128MB",
                    "fsync": "on", "synchronous_commit": "on"}  # fmt: skip
    server_variables = ("shared_buffers", "fsync", "synchronous_commit")
    kinds = {"mode": MODES, "scale": "int", "clients": "int", "threads": "int", "time_s": "int",
             "fsync": ("on", "off"), "synchronous_commit": ("on", "off")}  # fmt: skip
    metrics = ("tps", "latency_avg_ms", "transactions", "failed_transactions", "connection_ms")
    declared_units = {"tps": "transactions/s"}

    def binary(self) -> str:
        found = bindir() if shutil.which("pgbench") else None  # Debian's wrapper on PATH: the client is installed
        if found is None:
            raise self.fail(
                "benchmark",
                "PostgreSQL is not installed (Debian package postgresql-15; run: bash scripts/setup/apt.sh)",
            )
        for program in ("initdb", "postgres", "pg_isready", "pgbench"):
            self.found[str(found / program)] = self.package
        return str(found / "pgbench")

    def check_record(self, p: Mapping[str, object]) -> None:
        if not _SIZE.match(value_text(p["shared_buffers"])):
            raise self.fail(
                "variables.shared_buffers", f"{value_text(p['shared_buffers'])!r} is not a size such as 128MB"
            )
        if int(p["threads"]) > int(p["clients"]):  # type: ignore[call-overload]
            raise self.fail("variables.threads", "pgbench needs at least as many clients as threads")

    def server_commands(self, p: dict[str, object]) -> tuple[str, str, str, str]:
        b = bindir() or Path("/usr/lib/postgresql/15/bin")
        # PostgreSQL refuses to run as root: as root, the cluster belongs to nobody.
        user = '$( [ "$(id -u)" = 0 ] && chown nobody "$dir" && echo setpriv --reuid=nobody --regid=nogroup --clear-groups -- )'
        settings = [f"shared_buffers={value_text(p['shared_buffers'])}", f"fsync={p['fsync']}",
                    f"synchronous_commit={p['synchronous_commit']}", "listen_addresses="]  # fmt: skip
        start = (f"as={user}; $as {words(b / 'initdb', '-D', '$dir/data', '-A', 'trust', '-U', 'bench', '--no-sync')}"
                 f" && exec $as {words(b / 'postgres', '-D', '$dir/data', '-k', '$dir', *(w for s in settings for w in ('-c', s)))}")  # fmt: skip
        ready = words(b / "pg_isready", "-q", "-h", "$dir", "-U", "bench")
        connect = ("-h", "$dir", "-U", "bench")
        client = (words(b / "pgbench", *connect, "-i", "-q", "-s", value_text(p["scale"]), "postgres") + " >pgbench-init.log 2>&1 && "
                  + words(b / "pgbench", *connect, "-b", str(p["mode"]), "-c", value_text(p["clients"]),
                          "-j", value_text(p["threads"]), "-T", value_text(p["time_s"]), "postgres"))  # fmt: skip
        return start, ready, client, 'kill -INT "$server"'

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for name, pattern in _FIELDS.items():
            match = pattern.search(stdout)
            if match is None:
                raise ValueError(f"pgbench's output has no {name} line")
            out[name] = int(match.group(1)) if name == "transactions" else float(match.group(1))
        failed = _FAILED.search(stdout)
        out["failed_transactions"] = int(failed.group(1)) if failed else 0
        return out
