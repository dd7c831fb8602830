"""Memcached (Debian 1.6): `memcached` loaded by `memcslap` (libmemcached-tools).

Each run starts its own server (perfsnake.benchmarks.server) on a Unix
socket in a private directory; ready when the socket exists (memcached
creates it once it listens); stopped after the client.

Variables: `test` (`get`, `set`, `mget`; memcslap sets the keys before a get),
`concurrency` (client threads), `keys` (memcslap's --execute-number: keys per
thread), `binary` (the binary protocol), and the server's `threads` (-t) and
`memory_mb` (-m). Metrics: `ops` (keys operated on by the test), `time_s`
(the client's time for them) and `ops_per_s`. memcslap prints milliseconds,
so keep a run above a few hundred of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from perfsnake.benchmarks.server import ServerTool, words
from perfsnake.escape import value_text

TESTS = ("get", "set", "mget")
# "Time to get            8000 keys by    4 threads:     0.099 seconds."
_RESULT = re.compile(r"^Time to (\w+)\s+(\d+) keys by\s+(\d+) threads:\s+([0-9.]+) seconds\.$", re.M)


class MemcachedBenchmark(ServerTool):
    name = "memcached"
    executable = "memcslap"
    package = "libmemcached-tools"
    run_defaults = {"test": "get", "concurrency": 4, "keys": 50000, "binary": False, "threads": 4, "memory_mb": 256}
    server_variables = ("threads", "memory_mb")
    kinds = {"test": TESTS, "concurrency": "int", "keys": "int", "binary": (True, False), "threads": "int",
             "memory_mb": "int"}  # fmt: skip
    metrics = ("ops", "time_s", "ops_per_s")
    declared_units = {"ops_per_s": "keys/s"}

    def check_record(self, p: Mapping[str, object]) -> None:
        self.require("memcached", "memcached")

    def server_commands(self, p: dict[str, object]) -> tuple[str, str, str, str]:
        sock = "$dir/memcached.sock"
        # memcached refuses to run as root unless told which user to be: this one.
        start = words("memcached", "-s", sock, "-a", "0700", "-m", value_text(p["memory_mb"]),
                      "-t", value_text(p["threads"])) + ' -u "$(id -un)"'  # fmt: skip
        client = words("memcslap", f"--servers={sock}", f"--test={p['test']}",
                       f"--concurrency={value_text(p['concurrency'])}", f"--execute-number={value_text(p['keys'])}",
                       *(["--binary"] if p["binary"] is True else []))  # fmt: skip
        return start, f"test -S {words(sock)}", client, 'kill "$server"'

    def parse(self, stdout: str, stderr: str, params: Mapping[str, object]) -> dict[str, object]:
        test = str(params.get("test", "get"))
        rows = {m.group(1): m for m in _RESULT.finditer(stdout)}
        if test not in rows:
            raise ValueError(f"memcslap printed no 'Time to {test} ... keys by ... threads' line")
        m = rows[test]
        ops, seconds = int(m.group(2)), float(m.group(4))
        return {"ops": ops, "time_s": seconds, "ops_per_s": ops / seconds if seconds else None}
